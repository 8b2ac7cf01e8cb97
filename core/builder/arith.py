"""Index arithmetic that folds the trivial cases while the builder emits it.

The skeleton IR is printed and interpreted before any simplification pass
runs, so ``x * 1``, ``x + 0``, ``x / 1`` and ``(x % n)`` of an ``x`` known to
be below ``n`` are never emitted. ``bound`` arguments are exclusive upper
bounds of non-negative operands, when the caller knows one.
"""
from __future__ import annotations

import math
from typing import Iterable

from kdd.core.ir.c_arith import c_div, c_mod
from kdd.core.ir.expr import Binary, Expr, IntImm, Op, Ramp, Unary, Var, as_expr, land
from kdd.core.ir.types import s32
from kdd.core.ir.visitor import IRMutator, free_vars

Index = Expr | int


def const(value: int) -> Expr:
    return IntImm.make(s32, int(value))


def is_const(e: Index, value: int | None = None) -> bool:
    if isinstance(e, int):
        return value is None or e == value
    return isinstance(e, IntImm) and (value is None or e.value == value)


def value_of(e: Index) -> int:
    return e if isinstance(e, int) else e.value


def add(*terms: Index) -> Expr:
    """Sum of ``terms`` with constants folded together and zeros dropped."""
    total = 0
    rest: list[Expr] = []
    for t in terms:
        if is_const(t):
            total += value_of(t)
        else:
            rest.append(t)
    if not rest:
        return const(total)
    out = rest[0]
    for t in rest[1:]:
        out = out + t
    if total > 0:
        out = out + total
    elif total < 0:
        out = out - (-total)
    return out


def mul(a: Index, c: int) -> Expr:
    if is_const(a):
        return const(value_of(a) * c)
    if c == 1:
        return a
    if c == 0:
        return const(0)
    return a * c


def div(a: Index, c: int, bound: int | None = None) -> Expr:
    """``a / c`` for ``0 <= a`` (< ``bound`` when given)."""
    if is_const(a):
        return const(value_of(a) // c)
    if c == 1:
        return a
    if bound is not None and bound <= c:
        return const(0)
    return a / c


def mod(a: Index, c: int, bound: int | None = None) -> Expr:
    """``a % c`` for ``0 <= a`` (< ``bound`` when given)."""
    if is_const(a):
        return const(value_of(a) % c)
    if c == 1:
        return const(0)
    if bound is not None and bound <= c:
        return a
    return a % c


def digit(a: Index, stride: int, size: int, bound: int | None) -> Expr:
    """``(a / stride) % size``: one mixed-radix digit of ``a`` (``0 <= a < bound``)."""
    q_bound = None if bound is None else -(-bound // stride)
    return mod(div(a, stride, bound), size, q_bound)


def ramp(base: Index, n: int) -> Expr:
    """``base + i`` for ``i < n`` (a scalar when ``n == 1``)."""
    return as_expr(base) if n == 1 else Ramp.make(as_expr(base), 1, n)


def conj(terms: Iterable[Expr | None]) -> Expr | None:
    """Conjunction of the non-``None`` terms; ``None`` when there are none."""
    real = [t for t in terms if t is not None]
    return land(*real) if real else None


def alignment(e: Expr, facts: dict) -> int:
    """A number that ``e`` is known to be a multiple of (0 = e is 0, a multiple of everything).

    ``facts`` maps variables to multiples they are known to be.
    """
    if isinstance(e, IntImm):
        return abs(e.value)
    if isinstance(e, Var):
        return facts.get(e, 1)
    if isinstance(e, Binary) and e.op in (Op.ADD, Op.SUB):
        return math.gcd(alignment(e.a, facts), alignment(e.b, facts))
    if isinstance(e, Binary) and e.op is Op.MUL:
        return alignment(e.a, facts) * alignment(e.b, facts)
    return 1


def linear_coeff(e: Expr, v) -> int | None:
    """The coefficient of variable ``v`` if ``e`` is ``c * v + (terms without v)``, else None."""
    if v not in free_vars(e):
        return 0
    if isinstance(e, Var):
        return 1
    if isinstance(e, Binary) and e.op in (Op.ADD, Op.SUB):
        a, b = linear_coeff(e.a, v), linear_coeff(e.b, v)
        if a is None or b is None:
            return None
        return a + b if e.op is Op.ADD else a - b
    if isinstance(e, Binary) and e.op is Op.MUL:
        for x, y in ((e.a, e.b), (e.b, e.a)):
            if isinstance(y, IntImm):
                c = linear_coeff(x, v)
                return None if c is None else c * y.value
        return None
    if isinstance(e, Unary) and e.op is Op.NEG:
        c = linear_coeff(e.a, v)
        return None if c is None else -c
    return None


_FOLD = {
    Op.ADD: lambda a, b: a + b, Op.SUB: lambda a, b: a - b, Op.MUL: lambda a, b: a * b,
    Op.DIV: c_div, Op.MOD: c_mod,
}


class _Folder(IRMutator):
    """Folds s32 constant arithmetic, ``x + 0``, ``x * 1``, ``x * 0``, ``(x * a) * b``, and
    ``(x * a) / b``, ``(x * a) % b`` where ``b`` divides ``a`` (exact in C semantics)."""

    def mutate_Binary(self, old: Binary, new: Binary) -> Expr:
        a, b, op = new.a, new.b, new.op
        if not new.type.is_int or not a.type.is_int:
            return new
        if isinstance(a, IntImm) and isinstance(b, IntImm) and op in _FOLD and new.type == s32:
            return const(_FOLD[op](a.value, b.value))
        if op in (Op.ADD, Op.SUB) and is_const(b, 0) or op is Op.MUL and is_const(b, 1):
            return a if a.type == new.type else new
        if op is Op.ADD and is_const(a, 0) or op is Op.MUL and is_const(a, 1):
            return b if b.type == new.type else new
        if new.type != s32:
            return new
        if op is Op.MUL and (is_const(a, 0) or is_const(b, 0)):
            return const(0)
        if isinstance(b, IntImm) and isinstance(a, Binary) and a.op is Op.MUL and isinstance(a.b, IntImm) \
                and a.type == s32 and b.value > 0:
            inner, c = a.a, a.b.value
            if op is Op.MUL:
                return mul(inner, c * b.value)
            if op is Op.DIV and c % b.value == 0:
                return mul(inner, c // b.value)
            if op is Op.MOD and c % b.value == 0:
                return const(0)
        return new


def fold(e: Expr) -> Expr:
    """``e`` with its scalar s32 constant arithmetic folded (builders substitute constants into views)."""
    return _Folder().mutate(e)
