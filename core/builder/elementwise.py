"""Element-wise register code: fill, map and convert whole register tensors.

Fills and maps walk a dense register tensor in register order, ``simd``
lanes (or the largest divisor of its size below that) at a time, so every
step is one vector load/store per operand. Conversions are reorders: round
to nearest even and saturate, as oneDNN's conversions do.
"""
from __future__ import annotations

from typing import Callable

from kdd.core.ir import operators
from kdd.core.ir.expr import Broadcast, Expr, FloatImm, IntImm, Load
from kdd.core.ir.funcs import Reorder
from kdd.core.ir.names import Names
from kdd.core.ir.stmt import FuncCall, Stmt, Store
from kdd.core.ir.types import Type

from .loops import nest
from .origin import Origin
from .tile import RegTensor


def chunk(elems: int, simd: int) -> int:
    """Lanes per step: the largest divisor of ``elems`` that is at most ``simd``."""
    return max(d for d in range(1, min(elems, simd) + 1) if elems % d == 0)


def _at(reg: RegTensor, i: Expr, n: int) -> Expr:
    return operators.add(reg.offset, operators.mul(i, n * reg.dtype.size))


def fill(reg: RegTensor, value: float | int, names: Names, simd: int, origin: Origin) -> Stmt:
    """Every element of ``reg`` set to ``value``."""
    n = chunk(reg.elems, simd)
    t = reg.dtype
    imm = FloatImm.make(t, float(value)) if t.is_float else IntImm.make(t, int(value))
    vector = Broadcast.make(imm, n) if n > 1 else imm
    return nest(names, [("i", reg.elems // n)],
                lambda i: Store.make(reg.buf, _at(reg, i, n), vector, origin=origin), origin)


def elementwise(dst: RegTensor, srcs: list[RegTensor], fn: Callable[..., Expr], names: Names, simd: int,
                origin: Origin) -> Stmt:
    """``dst = fn(*srcs)`` over every element (all tensors dense, in the same element order)."""
    n = chunk(dst.elems, simd)

    def body(i):
        loads = [Load.make(Type(s.dtype.scalar, n), s.buf, _at(s, i, n)) for s in srcs]
        return Store.make(dst.buf, _at(dst, i, n), fn(*loads), origin=origin)
    return nest(names, [("i", dst.elems // n)], body, origin)


def convert(src: RegTensor, dst: RegTensor, origin: Origin) -> Stmt:
    """``dst = src`` in another element type, same element order (a reorder rounds to nearest even
    and saturates)."""
    return FuncCall.make(Reorder(src.layout, dst.layout), [src.buf, src.offset, dst.buf, dst.offset],
                         origin=origin)
