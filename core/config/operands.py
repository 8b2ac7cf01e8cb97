"""Which problem tensors play GEMM roles A, B and C, and their types.

=====  ====  ====  ====
prop   A     B     C
=====  ====  ====  ====
fwd    src   wei   dst
bwd_d  dst   wei   src
bwd_w  src   dst   wei
=====  ====  ====  ====

GEMM problems are forward: A, B, C are src, wei, dst.
"""
from __future__ import annotations

from dataclasses import dataclass

from kdd.core.ir.types import Type

ROLE_TENSORS = {"fwd": ("src", "wei", "dst"), "bwd_d": ("dst", "wei", "src"), "bwd_w": ("src", "dst", "wei")}


@dataclass(frozen=True)
class Operands:
    """The tensors behind A, B, C, their element types and the accumulator type."""

    tensors: tuple[str, str, str]
    a: Type
    b: Type
    c: Type
    acc: Type


def operands(problem) -> Operands:
    """A/B/C of ``problem`` (a :class:`kdd.core.problem.Problem`)."""
    tensors = ROLE_TENSORS[problem.prop]
    a, b, c = (getattr(problem.types, t) for t in tensors)
    return Operands(tensors, a, b, c, problem.types.acc)
