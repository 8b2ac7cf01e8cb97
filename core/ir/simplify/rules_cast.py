"""Casts and bitwise not.

    T(x) -> x                          when x already has type T
    T(U(x)) -> T(x)                    integers, when U holds every value of x (bounds)
    sat.T(x) -> T(x)                   integers, when T holds every value of x
    ~~x -> x
"""
from __future__ import annotations

from ..expr import Cast, Expr, Unary
from .pattern import apply, rewrite, x

_BIT_NOT = (
    rewrite(~~x, x),
)


def cast(s, e: Cast) -> Expr | None:
    a, t = e.a, e.type
    if a.type == t:
        return a
    if not t.is_int or not (a.type.is_int or a.type.is_bool):
        return None
    if isinstance(a, Cast) and a.type.is_int and a.a.type.is_int and s.holds(a.a, a.type):
        return s.cast(t, a.a, e.saturate)
    if e.saturate and s.holds(a, t):
        return Cast.make(t, a, False)
    return None


def bit_not(s, e: Unary) -> Expr | None:
    return apply(_BIT_NOT, e, s)
