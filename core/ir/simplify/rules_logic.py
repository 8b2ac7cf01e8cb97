"""``&&``, ``||``, ``!`` and ``iif``.

Constants and repeats (commutative forms match too)::

    p && true -> p      p && false -> false     p && p -> p     p && !p -> false
    p && (p && q) -> p && q                     p && (p || q) -> p
    (and the mirror images for ||)
    !!p -> p            !(x < y) -> x >= y       (integer operands; all six comparisons)

Two comparisons of the same difference are merged as intervals, when both
sides of both fit their type: ``x < 5 && x < 3 -> x < 3``,
``x < 5 && x > 7 -> false``, ``x < 5 || x >= 5 -> true``.

``iif``::

    iif(true, a, b) -> a       iif(false, a, b) -> b      iif(p, a, a) -> a
    iif(!p, a, b) -> iif(p, b, a)
    iif(p, true, false) -> p   iif(p, false, true) -> !p
    iif(p, q, false) -> p && q                 iif(p, true, q) -> p || q
    iif(x < y, x, y) -> min(x, y)              iif(x < y, y, x) -> max(x, y)   (also <=)
"""
from __future__ import annotations

from ..expr import Binary, BoolImm, Expr, Op, Ternary, Unary, iif as iif_, max_, min_
from .pattern import apply, p, q, rewrite, x, y

_AND = (
    rewrite(p.land(True), p),
    rewrite(p.land(False), False),
    rewrite(p.land(p), p),
    rewrite(p.land(p.lnot()), False),
    rewrite(p.land(p.land(q)), p.land(q)),
    rewrite(p.land(p.lor(q)), p),
)
_OR = (
    rewrite(p.lor(False), p),
    rewrite(p.lor(True), True),
    rewrite(p.lor(p), p),
    rewrite(p.lor(p.lnot()), True),
    rewrite(p.lor(p.lor(q)), p.lor(q)),
    rewrite(p.lor(p.land(q)), p),
)
_NOT = (
    rewrite(p.lnot().lnot(), p),
    rewrite(x.lt(y).lnot(), x.ge(y)),
    rewrite(x.le(y).lnot(), x.gt(y)),
    rewrite(x.gt(y).lnot(), x.le(y)),
    rewrite(x.ge(y).lnot(), x.lt(y)),
    rewrite(x.eq(y).lnot(), x.ne(y)),
    rewrite(x.ne(y).lnot(), x.eq(y)),
)
_IIF = (
    rewrite(iif_(p, True, False), p),
    rewrite(iif_(p, False, True), p.lnot()),
    rewrite(iif_(p, q, False), p.land(q)),
    rewrite(iif_(p, True, q), p.lor(q)),
    rewrite(iif_(x.lt(y), x, y), min_(x, y)),
    rewrite(iif_(x.lt(y), y, x), max_(x, y)),
    rewrite(iif_(x.le(y), x, y), min_(x, y)),
    rewrite(iif_(x.le(y), y, x), max_(x, y)),
)

_HUGE = 1 << 256  # stands for an unbounded end of an interval


def land(s, e: Binary) -> Expr | None:
    out = apply(_AND, e, s)
    return _merge(s, e) if out is None else out


def lor(s, e: Binary) -> Expr | None:
    out = apply(_OR, e, s)
    return _merge(s, e) if out is None else out


def lnot(s, e: Unary) -> Expr | None:
    return apply(_NOT, e, s)


def iif_decided(s, e: Ternary) -> Expr | None:
    """``iif`` with a constant condition (valid for every type, floats included)."""
    if isinstance(e.a, BoolImm):
        return s.retype(e.b if e.a.value else e.c, e.type)
    return None


def iif(s, e: Ternary) -> Expr | None:
    decided = iif_decided(s, e)
    if decided is not None:
        return decided
    if e.b == e.c:
        return e.b
    if isinstance(e.a, Unary) and e.a.op is Op.NOT:
        return s.ternary(Op.IIF, e.a.a, e.c, e.b)
    return apply(_IIF, e, s)


def _interval(s, c: Expr):
    """``(key, lo, hi)``: comparison ``c`` says ``lo <= P - N <= hi`` for the sides' terms ``key``."""
    if not (isinstance(c, Binary) and c.op.is_compare and c.op is not Op.NE):
        return None
    a, b = c.a, c.b
    if a.type != b.type or not a.type.is_int:
        return None
    la, lb = s.lf(a), s.lf(b)
    if not (s.fits(la) and s.fits(lb)):
        return None
    k = lb.const - la.const
    lo, hi = {Op.LT: (-_HUGE, k - 1), Op.LE: (-_HUGE, k), Op.GT: (k + 1, _HUGE),
              Op.GE: (k, _HUGE), Op.EQ: (k, k)}[c.op]
    return (a.type, la.terms, lb.terms), lo, hi


def _merge(s, e: Binary) -> Expr | None:
    first, second = _interval(s, e.a), _interval(s, e.b)
    if first is None or second is None or first[0] != second[0]:
        return None
    (_, lo1, hi1), (_, lo2, hi2) = first, second
    a_in_b = lo2 <= lo1 and hi1 <= hi2
    b_in_a = lo1 <= lo2 and hi2 <= hi1
    if e.op is Op.AND:
        if max(lo1, lo2) > min(hi1, hi2):
            return BoolImm.make(False)
        return e.a if a_in_b else (e.b if b_in_a else None)
    (l1, h1), (l2, h2) = sorted(((lo1, hi1), (lo2, hi2)))
    if l1 == -_HUGE and max(h1, h2) == _HUGE and h1 + 1 >= l2:
        return BoolImm.make(True)
    return e.b if a_in_b else (e.a if b_in_a else None)
