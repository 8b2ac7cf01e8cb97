"""The builder's index arithmetic beyond the IR's folding constructors (``kdd.core.ir.operators``:
``add``, ``mul``, ``fold``...): division and remainder by what the builder knows of an operand's range,
digits, ramps, conjunctions, alignment.

The skeleton IR is printed and interpreted before any simplification pass
runs, so ``x * 1``, ``x + 0``, ``x / 1`` are never emitted, and neither is
``(x % n)`` of an ``x`` known to be below ``n``: ``bound`` arguments are
exclusive upper bounds of non-negative operands, when the caller knows one.
"""
from __future__ import annotations

import math
from typing import Iterable

from kdd.core.ir import operators
from kdd.core.ir.expr import Binary, Expr, IntImm, Op, Ramp, Unary, Var, as_expr, land
from kdd.core.ir.operators import Index, is_const
from kdd.core.ir.types import s32
from kdd.core.ir.visitor import free_vars


def const(value: int) -> Expr:
    return IntImm.make(s32, int(value))


def div(a: Index, c: int, bound: int | None = None) -> Expr:
    """``a / c`` for ``0 <= a`` (< ``bound`` when given: 0 where ``bound <= c``)."""
    if bound is not None and bound <= c and c != 1 and not is_const(a):
        return const(0)
    return operators.div(a, c)


def mod(a: Index, c: int, bound: int | None = None) -> Expr:
    """``a % c`` for ``0 <= a`` (< ``bound`` when given: ``a`` itself where ``bound <= c``); a digit of
    size one is the scalar 0, a vector's too (an index term: what it is added to keeps the lanes)."""
    if c == 1:
        return const(0)
    if bound is not None and bound <= c and not is_const(a):
        return a
    return operators.mod(a, c)


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
