"""Division and modulus (C semantics: quotient toward zero, remainder takes the dividend's sign).

By a constant ``k`` (the rules below, then the linear split):

    x / 0 -> 0          x % 0 -> 0          (eval.py's total semantics)
    x / 1 -> x          x % 1 -> 0          x / -1 -> -x        x % -1 -> 0
    x % x -> 0                               (0 % 0 is 0 too)
    (x % y) % y -> x % y
    (x / c0) / c1 -> x / (c0 * c1)           c0, c1 > 0 and c0 * c1 fits the type
    (x % c0) % c1 -> x % c1                  c1 > 0 and c1 divides c0
    x % k -> x - q*k                         when x / k is q for every x in its bounds
                                             (x % k -> x when -k < x < k)

The *linear split* writes the dividend's linear form as ``k*Q + R``: ``Q``
collects the terms whose coefficient is a multiple of ``k`` and the multiple
of ``k`` in the constant; ``R`` the rest. Then

    (k*Q + R) / k -> Q + R / k              (k*Q + R) % k -> R % k

when the dividend and ``R`` provably have the same sign (both >= 0 or both
<= 0, so truncation agrees with flooring) and neither overflows. For the
modulus by a power of two the overflow condition is not needed (wrap-around
keeps residues modulo ``2**bits``). With ``0 <= y < 16`` and ``x >= 0``
bounded this gives ``(x*16 + y) / 16 -> x`` and ``(x*16 + y) % 16 -> y``.

Where no term's coefficient is a multiple of ``k``, the *aligned split* by a
divisor ``g`` of ``k`` (a gcd of ``k`` and the coefficients) writes the
dividend as ``g*Q + R`` (``Q`` the terms whose coefficients ``g`` divides, over
``g``, ``R`` the rest): with the dividend and ``Q`` non-negative and
``0 <= R < g``,

    (g*Q + R) / k -> Q / (k/g)              (g*Q + R) % k -> (Q % (k/g))*g + R

(``(t*8 + j) / 32 -> t / 4`` for ``0 <= j < 8``: a thread's run of
consecutive messages stays inside one block).

Terms the analysis knows to be multiples of ``k`` split off the same way, with the
dividend and the rest non-negative: ``(T + R) / k -> T / k + R / k`` and
``(T + R) % k -> R % k`` (``(k_it + 2) / 9 -> k_it / 9`` in a loop stepping by 9).

Results decided by bounds or alignment (``x / k`` with ``|x| < k``,
``(x*8) % 4``, ``(x*4 + 2) % 4`` for ``x >= 0``) come from the analysis: the
engine replaces any expression whose bounds are a single value by it.
"""
from __future__ import annotations

import math

from ..c_arith import c_div
from ..expr import Expr, IntImm, Op
from .pattern import apply, c0, c1, rewrite, x, y

_DIV = (
    rewrite((x / c0) / c1, x / (c0 * c1),
            lambda m: m.c0 > 0 and m.c1 > 0 and m.c0 * m.c1 <= m.x.type.scalar.int_range()[1]),
)
_MOD = (
    rewrite(x % x, 0),
    rewrite((x % y) % y, x % y),
    rewrite((x % c0) % c1, x % c1, lambda m: m.c1 > 0 and m.c0 != 0 and m.c0 % m.c1 == 0),
)


def _plain(e: Expr) -> bool:
    """Integer scalar node without implicit conversions."""
    return e.type.is_int and e.a.type == e.b.type == e.type


def div(s, e: Expr) -> Expr | None:
    if not _plain(e) or not isinstance(e.b, IntImm):
        return None
    a, k = e.a, e.b.value
    if k == 0:
        return s.const(e.type, 0)
    if k == 1:
        return a
    if k == -1:
        return s.unary(Op.NEG, a)
    out = apply(_DIV, e, s)
    return _split(s, e, k) if out is None and k > 1 else out


def mod(s, e: Expr) -> Expr | None:
    if not _plain(e):
        return None
    a = e.a
    if not isinstance(e.b, IntImm):
        ia, ib = s.info(a), s.info(e.b)
        if (ib.lo > 0 or ib.hi < 0) and max(-ia.lo, ia.hi) < min(abs(ib.lo), abs(ib.hi)):
            return a
        return apply(_MOD, e, s)
    k = e.b.value
    if k in (0, 1, -1):
        return s.const(e.type, 0)
    ia = s.info(a)
    quotient = c_div(ia.lo, k)
    if quotient == c_div(ia.hi, k):  # one quotient for every value: x % k == x - q*k
        return a if quotient == 0 else s.binary(Op.SUB, a, IntImm.make(e.type, quotient * k))
    out = apply(_MOD, e, s)
    return _split(s, e, k) if out is None and k > 1 else out


def div_up(s, e: Expr) -> Expr | None:
    if _plain(e) and isinstance(e.b, IntImm) and e.b.value == 1:
        return e.a
    return None


def _split(s, e: Expr, k: int) -> Expr | None:
    """The linear split ``(k*Q + R) / k -> Q + R / k`` or ``% k -> R % k`` (see the module docstring)."""
    t = e.type
    lf = s.lf(e.a)
    ia = s.info(e.a)
    if ia.lo >= 0:
        r0 = lf.const % k
    elif ia.hi <= 0:
        r0 = -(-lf.const % k)
    else:
        return None
    quotient = {term: c // k for term, c in lf.terms if c % k == 0}
    if not quotient and r0 == lf.const:
        if ia.lo < 0:
            return None
        out = _aligned_split(s, e, k)
        return _known_multiples(s, e, k) if out is None else out
    rest = s.make_form(t, {term: c for term, c in lf.terms if c % k}, r0)
    exact = s.fits(lf) and s.fits(rest)
    if not exact and not (e.op is Op.MOD and k & (k - 1) == 0):
        return None
    r_lo, r_hi = s.form_range(rest) if s.fits(rest) else t.scalar.int_range()
    if not ((ia.lo >= 0 and r_lo >= 0) or (ia.hi <= 0 and r_hi <= 0)):
        return None
    divisor = IntImm.make(t, k)
    if e.op is Op.MOD:
        return s.binary(Op.MOD, s.form(rest), divisor)
    q = s.form(s.make_form(t, quotient, (lf.const - r0) // k))
    return s.binary(Op.ADD, q, s.binary(Op.DIV, s.form(rest), divisor))


def _aligned_split(s, e: Expr, k: int) -> Expr | None:
    """The split by a divisor ``g`` of ``k``: with the dividend ``g*Q + R``, ``Q >= 0`` and ``0 <= R < g``,
    ``(g*Q + R) / k -> Q / (k/g)`` and ``(g*Q + R) % k -> (Q % (k/g))*g + R`` (see the module docstring)."""
    t = e.type
    lf = s.lf(e.a)
    coeffs = [c for _, c in lf.terms]
    for g in sorted({math.gcd(k, c) for c in coeffs} | {math.gcd(k, *coeffs)}, reverse=True):
        if not 1 < g < k:
            continue
        q = s.make_form(t, {term: c // g for term, c in lf.terms if c % g == 0}, lf.const // g)
        rest = s.make_form(t, {term: c for term, c in lf.terms if c % g}, lf.const % g)
        if not q.terms or not rest.terms or not (s.fits(lf) and s.fits(q) and s.fits(rest)):
            continue
        q_lo, _ = s.form_range(q)
        r_lo, r_hi = s.form_range(rest)
        if q_lo < 0 or r_lo < 0 or r_hi >= g:
            continue
        quotient = s.binary(Op.DIV, s.form(q), IntImm.make(t, k // g)) if k > g else s.form(q)
        if e.op is Op.DIV:
            return quotient
        low = s.binary(Op.MUL, s.binary(Op.MOD, s.form(q), IntImm.make(t, k // g)), IntImm.make(t, g))
        return s.binary(Op.ADD, low, s.form(rest))
    return None


def _known_multiples(s, e: Expr, k: int) -> Expr | None:
    """The split by what the analysis knows: with the dividend ``T + R`` non-negative, ``T`` the terms
    known to be multiples of ``k`` (a loop variable stepping by 9, ``k = 3`` or ``9``) and
    ``R >= 0`` the rest, ``(T + R) / k -> T / k + R / k`` and ``(T + R) % k -> R % k``
    (``(k_it + 2) / 9 -> k_it / 9`` in a loop over ``k_it`` stepping by 9)."""
    t = e.type
    lf = s.lf(e.a)
    multiples = {}
    for term, c in lf.terms:
        info = s.info(term)
        if info is not None and info.mod and (c * info.mod) % k == 0 and (c * info.rem) % k == 0:
            multiples[term] = c
    if not multiples:
        return None
    whole = s.make_form(t, multiples, 0)
    rest = s.make_form(t, {term: c for term, c in lf.terms if term not in multiples}, lf.const)
    if not rest.terms and not rest.const or not (s.fits(lf) and s.fits(whole) and s.fits(rest)):
        return None
    if s.form_range(rest)[0] < 0:
        return None
    divisor = IntImm.make(t, k)
    if e.op is Op.MOD:
        return s.binary(Op.MOD, s.form(rest), divisor)
    return s.binary(Op.ADD, s.binary(Op.DIV, s.form(whole), divisor), s.binary(Op.DIV, s.form(rest), divisor))
