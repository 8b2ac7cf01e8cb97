"""Add, subtract, negate, multiply: the canonical linear form (``linear.py``).

Every ``+``, ``-``, unary ``-`` and multiplication by a constant is collected
into one ``sum(coef * term) + const`` and rebuilt in canonical order, which
cancels and merges terms (``2*(a + b) - a -> a + b*2``), folds constants and
orders non-linear products (``y*x -> x*y``). All of it is exact modulo
``2**bits``, so no bounds are needed. Two identities on terms are applied
while collecting:

    (x / c) * c + x % c  ->  x          (c != 0; C division, any sign)
    (x / c) * d          ->  x * (d/c)  (c divides d, and x is a known multiple of c)

The second is an exact division read back: ``x == c*q`` gives ``q*d`` either
way, modulo ``2**bits`` too (a blocked layout's ``(ic / 16) * 4096`` with
``ic`` a multiple of 16 is ``ic * 256``, which strength reduction carries).
"""
from __future__ import annotations

from ..expr import Binary, Expr, IntImm, Op
from .linear import LinearForm, is_int_scalar, signed


def linear(s, e: Expr) -> Expr | None:
    if not is_int_scalar(e) or s.is_canonical(e):
        return None
    out = s.form(_recombine_div_mod(s, s.lf(e)))
    return None if out == e else out


def _div_mod_parts(term: Expr, op: Op) -> tuple[Expr, int] | None:
    """``(x, c)`` when ``term`` is ``x / c`` (or ``x % c``) with a non-zero constant ``c``."""
    if (isinstance(term, Binary) and term.op is op and isinstance(term.b, IntImm) and term.b.value
            and term.a.type == term.type):
        return term.a, term.b.value
    return None


def _recombine_div_mod(s, lf: LinearForm) -> LinearForm:
    divs = {}
    for term, c in lf.terms:
        parts = _div_mod_parts(term, Op.DIV)
        if parts is not None:
            divs[parts] = (term, c)
    if not divs:
        return lf
    terms, const = dict(lf.terms), lf.const

    def merge(x: Expr, c: int) -> None:
        nonlocal const
        if x.type == lf.type:  # x is linear itself: merge its terms
            inner = s.lf(x)
            for t, v in inner.terms:
                terms[t] = terms.get(t, 0) + c * v
            const += c * inner.const
        else:
            terms[x] = terms.get(x, 0) + c
    for term, c in lf.terms:
        parts = _div_mod_parts(term, Op.MOD)
        hit = divs.get(parts) if parts is not None else None
        if hit is None or hit[0].type != term.type or hit[0] not in terms:
            continue
        x, k = parts
        if signed(hit[1] - c * k, lf.type) == 0:
            del terms[term], terms[hit[0]]
            merge(x, c)
    exact = False
    for (x, k), (term, c) in divs.items():
        c = signed(c, lf.type)
        if term in terms and c % k == 0 and _multiple(s.info(x), k):
            del terms[term]
            merge(x, c // k)
            exact = True
    if not exact and len(terms) == len(lf.terms) and const == lf.const:
        return lf
    return s.make_form(lf.type, terms, const)


def _multiple(info, k: int) -> bool:
    """Whether the analysis ``info`` of a value proves it a multiple of ``k``."""
    if info is None:
        return False
    if info.mod == 0:
        return info.lo % k == 0
    return info.mod % k == 0 and info.rem % k == 0
