"""Which problem tensors play GEMM roles A, B and C, and their types.

=====  ====  ====  ====
prop   A     B     C
=====  ====  ====  ====
fwd    src   wei   dst
bwd_d  dst   wei   src
bwd_w  src   dst   wei
=====  ====  ====  ====

GEMM problems are forward: A, B, C are src, wei, dst. A GEMM with weight decompression multiplies B in
its ``fpmath`` type (the integer weights are converted in registers), so ``b`` is that type and
``b_memory`` the weights' own. A config's ``fma_type`` multiplies f32 A and B in that type: ``a`` and ``b``
are it, ``converted`` the problem's type they are converted from in registers.
"""
from __future__ import annotations

from dataclasses import dataclass

from kdd.core.ir.types import Type, f32 as F32

ROLE_TENSORS = {"fwd": ("src", "wei", "dst"), "bwd_d": ("dst", "wei", "src"), "bwd_w": ("src", "dst", "wei")}


@dataclass(frozen=True)
class Operands:
    """The tensors behind A, B, C, their element types and the accumulator type."""

    tensors: tuple[str, str, str]
    a: Type
    b: Type
    c: Type
    acc: Type
    b_memory: Type | None = None
    converted: Type | None = None

    @property
    def decompressed(self) -> bool:
        """Whether B is held in memory in another type than the FMA multiplies (weight decompression)."""
        return self.b_memory is not None and self.b_memory != self.b


def operands(problem, config=None) -> Operands:
    """A/B/C of ``problem`` (a :class:`kdd.core.problem.Problem`), multiplied in ``config``'s ``fma_type``
    where it sets one (the problem's types where A or B is no f32: the validation says so)."""
    tensors = ROLE_TENSORS[problem.prop]
    a, b, c = (getattr(problem.types, t) for t in tensors)
    d = getattr(problem, "decompression", None)
    if d is not None:
        return Operands(tensors, a, d.math, c, problem.types.acc, b)
    fma_type = getattr(config, "fma_type", None)
    if fma_type is not None and a == b == F32:
        t = Type.parse(fma_type)
        return Operands(tensors, t, t, c, problem.types.acc, converted=a)
    return Operands(tensors, a, b, c, problem.types.acc)
