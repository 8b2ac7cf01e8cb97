"""Comparisons ``== != < <= > >=``: decide by bounds, else move everything to one canonical form.

Decisions use the interval of ``a - b`` over the integers: from the two
operands' bounds, and, when both operands' linear forms fit their type (no
overflow), from the linear form of the difference, where common terms cancel:
``x + 1 < x + 3 -> true`` for a bounded ``x``. Equal forms are equal values
whatever overflows, so ``x*y + 1 == 1 + y*x -> true`` always.

Otherwise, for integer operands of one type whose forms fit, the comparison
is rewritten on ``D = a - b = g*(P - N) + c`` (``g`` the gcd of the
coefficients, ``P``/``N`` the terms with positive/negative coefficients) as

    P op N + k

with ``k`` rounded the right way for each operator, so common terms cancel,
the constant ends on the right and equal factors divide out:
``x*2 + 1 < y*2 + 4 -> x < y + 2``, ``x*2 == y*2 + 1 -> false``. When ``P``
is empty the sides are swapped with the mirrored operator (``3 < y ->
y > 3``). ``<`` and ``<=`` (``>``, ``>=``) are interchanged only to make the
constant vanish (``x < y + 1 -> x <= y``). Equality needs no overflow proof:
``a == b`` holds exactly when ``a - b == 0`` modulo ``2**bits``, so ``==``
and ``!=`` cancel terms and move constants (without dividing) always.

Bool operands: ``p == true -> p``, ``p == false -> !p``, and the like.
"""
from __future__ import annotations

from math import gcd

from ..expr import Binary, BoolImm, Cast, Expr, IntImm, Op, common_type
from .linear import signed
from .pattern import apply, p, rewrite

MIRROR = {Op.LT: Op.GT, Op.LE: Op.GE, Op.GT: Op.LT, Op.GE: Op.LE, Op.EQ: Op.EQ, Op.NE: Op.NE}

_BOOL = (
    rewrite(p.eq(True), p),
    rewrite(p.eq(False), p.lnot()),
    rewrite(p.ne(True), p.lnot()),
    rewrite(p.ne(False), p),
    rewrite(p.eq(p), True),
    rewrite(p.ne(p), False),
)


def difference(s, a: Expr, b: Expr) -> tuple[int, int] | None:
    """Interval of ``a - b`` over the integers, both converted to their common type (None: floats)."""
    t = common_type(a.type, b.type)
    ia, ib = s.info_in(a, t), s.info_in(b, t)
    if ia is None or ib is None or not t.is_int:
        return None
    lo, hi = ia.lo - ib.hi, ia.hi - ib.lo
    a, b = _source(s, a, t), _source(s, b, t)
    if a is not None and b is not None and a.type == b.type and a.type.is_int:
        la, lb = s.lf(a), s.lf(b)
        if la == lb:
            return 0, 0
        if s.fits(la) and s.fits(lb):
            d_lo, d_hi = s.form_range((a.type, tuple(_minus(la, lb).items()), la.const - lb.const))
            lo, hi = max(lo, d_lo), min(hi, d_hi)
    return lo, hi


def _source(s, e: Expr, t) -> Expr | None:
    """The innermost integer expression whose value is ``e``'s value converted to ``t``.

    Looks through the implicit conversion to ``t`` and through plain casts, as
    long as none of them changes the value; None when the conversion to ``t``
    itself may change it.
    """
    if e.type != t and not s.holds(e, t):
        return None
    while isinstance(e, Cast) and not e.saturate and e.a.type.is_int and s.holds(e.a, e.type):
        e = e.a
    return e


def _minus(la, lb) -> dict:
    terms = dict(la.terms)
    for term, c in lb.terms:
        terms[term] = terms.get(term, 0) - c
    return {term: c for term, c in terms.items() if c}


def _decide(op: Op, lo: int, hi: int) -> bool | None:
    """The truth of ``d op 0`` for every ``d`` in ``lo..hi`` (None when it depends)."""
    if op is Op.EQ or op is Op.NE:
        value = True if lo == hi == 0 else (False if lo > 0 or hi < 0 else None)
        return value if value is None or op is Op.EQ else not value
    if op is Op.LT:
        return True if hi < 0 else (False if lo >= 0 else None)
    if op is Op.LE:
        return True if hi <= 0 else (False if lo > 0 else None)
    if op is Op.GT:
        return True if lo > 0 else (False if hi <= 0 else None)
    return True if lo >= 0 else (False if hi < 0 else None)  # GE


def compare(s, e: Binary) -> Expr | None:
    a, b = e.a, e.b
    if a.type.is_bool and b.type.is_bool:
        return apply(_BOOL, e, s)
    d = difference(s, a, b)
    if d is None:
        return None
    truth = _decide(e.op, *d)
    if truth is not None:
        return BoolImm.make(truth)
    if a.type != b.type:
        return None
    out = _normal_form(s, e)
    if out is None and isinstance(a, IntImm):
        out = Binary.make(MIRROR[e.op], b, a)
    return None if out is None or out == e else out


def _normal_form(s, e: Binary) -> Expr | None:
    t = e.a.type
    la, lb = s.lf(e.a), s.lf(e.b)
    exact = s.fits(la) and s.fits(lb)
    op = e.op
    if not exact and op not in (Op.EQ, Op.NE):
        return None
    terms, c, g = _difference(s, la, lb, t, exact)
    if not terms:  # only reached modulo 2**bits (exact differences were decided by bounds)
        return BoolImm.make((c == 0) == (op is Op.EQ)) if op in (Op.EQ, Op.NE) else None
    if op in (Op.EQ, Op.NE):
        if c % g:
            return BoolImm.make(op is Op.NE)
        k = -c // g
    else:
        op, k = _bound(op, c, g)
    terms = {term: v // g for term, v in terms.items()}
    if op not in (Op.EQ, Op.NE):
        op, k = _aligned(s, t, op, k, terms)
    return _moved(s, e, exact, op, k, terms)


def _difference(s, la, lb, t, exact: bool) -> tuple[dict, int, int]:
    """``la - lb`` as its terms and constant, and the divisor common to the terms (1 modulo 2**bits:
    there an equality cancels and moves, never divides)."""
    terms, c = _minus(la, lb), la.const - lb.const
    if exact:   # a kept ``v = u + c`` is ``u + c`` over the integers: bounds on ``v`` move to ``u``
        terms, k = s.through_offsets(terms)
        c += k
        return terms, c, gcd(*terms.values()) if terms else 1
    terms = {term: signed(v, t) for term, v in terms.items() if signed(v, t)}
    return terms, signed(c, t), 1


def _moved(s, e: Binary, exact: bool, op: Op, k: int, terms: dict) -> Expr | None:
    """``terms op k`` with the positive terms on the left, the negative ones and ``k`` on the right
    (None: a coefficient or a side would wrap, or ``e`` is already this form)."""
    t = e.a.type
    pos = {term: v for term, v in terms.items() if v > 0}
    neg = {term: -v for term, v in terms.items() if v < 0}
    if not pos:
        pos, neg, op, k = neg, {}, MIRROR[op], -k
    if exact and any(signed(v, t) != v for v in (k, *pos.values(), *neg.values())):
        return None  # a coefficient would wrap: the new sides would not mean the same
    lhs, rhs = s.make_form(t, pos, 0), s.make_form(t, neg, k)
    if exact and not (s.fits(lhs) and s.fits(rhs)):
        return None
    new_a, new_b = s.form(lhs), s.form(rhs)
    if op is e.op and new_a.is_equal(e.a) and new_b.is_equal(e.b):
        return None  # already in normal form: simplifying it again would only recurse
    return s.binary(op, new_a, new_b)  # its sides may now fit: simplify it again


def _aligned(s, t, op: Op, k: int, terms: dict) -> tuple[Op, int]:
    """``E op k`` with ``k`` moved to the next value ``E`` can take, where ``E`` (``terms``) is
    known ``== r (mod m)``: ``x + 8 < 640`` and ``x < 640`` of an ``x`` aligned to 32 both become
    ``x < 640``, so the masks of a tile's aligned messages are one condition (one flag)."""
    info = s.analysis.form_info(s.make_form(t, terms, 0))
    m, r = info.mod, info.rem
    if m <= 1:
        return op, k
    if op is Op.LE:
        op, k = Op.LT, k + 1
    elif op is Op.GT:
        op, k = Op.GE, k + 1
    k += (r - k) % m  # the least value >= k that E takes: E < k <=> E < k', E >= k <=> E >= k'
    if k == 1:
        return (Op.LE, 0) if op is Op.LT else (Op.GT, 0)
    return op, k


def _bound(op: Op, c: int, g: int) -> tuple[Op, int]:
    """``g*E + c op 0`` as ``E op' k``, preferring the operator that makes ``k`` zero."""
    floor, ceil = (-c) // g, -(c // g)  # of -c/g
    if op is Op.LT:    # E < ceil  <=>  E <= ceil - 1
        return (Op.LE, 0) if ceil == 1 else (Op.LT, ceil)
    if op is Op.LE:    # E <= floor  <=>  E < floor + 1
        return (Op.LT, 0) if floor == -1 else (Op.LE, floor)
    if op is Op.GT:    # E > floor  <=>  E >= floor + 1
        return (Op.GE, 0) if floor == -1 else (Op.GT, floor)
    return (Op.GT, 0) if ceil == 1 else (Op.GE, ceil)  # E >= ceil  <=>  E > ceil - 1
