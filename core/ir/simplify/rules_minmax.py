"""``min`` and ``max``.

First a decision: if ``a - b`` is provably ``<= 0`` or ``>= 0`` (``difference``
in ``rules_cmp.py``: bounds, or the linear difference when nothing
overflows), the result is one operand: ``min(x, x) -> x``,
``min(x + 1, x + 3) -> x + 1`` for bounded ``x``, ``max(x % 8, 7) -> 7``.
Then the rules, and last the canonical operand order (constants on the
right, other operands by ``Structure.key``).
"""
from __future__ import annotations

from ..expr import Binary, Expr, IntImm, Op, max_, min_
from .pattern import apply, c0, c1, rewrite, x, y
from .rules_cmp import difference


def _not_const(m) -> bool:
    return not isinstance(m.y, IntImm)


_RULES = {
    Op.MIN: (
        rewrite(min_(min_(x, c0), c1), min_(x, min_(c0, c1))),
        rewrite(min_(min_(x, c0), min_(y, c1)), min_(min_(x, y), min_(c0, c1))),
        rewrite(min_(min_(x, c0), y), min_(min_(x, y), c0), _not_const),
        rewrite(min_(x, min_(x, y)), min_(x, y)),
        rewrite(min_(x, max_(x, y)), x),
        rewrite(min_(max_(x, y), min_(x, y)), min_(x, y)),
    ),
    Op.MAX: (
        rewrite(max_(max_(x, c0), c1), max_(x, max_(c0, c1))),
        rewrite(max_(max_(x, c0), max_(y, c1)), max_(max_(x, y), max_(c0, c1))),
        rewrite(max_(max_(x, c0), y), max_(max_(x, y), c0), _not_const),
        rewrite(max_(x, max_(x, y)), max_(x, y)),
        rewrite(max_(x, min_(x, y)), x),
        rewrite(max_(min_(x, y), max_(x, y)), max_(x, y)),
    ),
}


def min_max(s, e: Binary) -> Expr | None:
    a, b = e.a, e.b
    if not e.type.is_int:
        return None
    d = difference(s, a, b)
    if d is not None and (d[1] <= 0 or d[0] >= 0):
        a_smaller = d[1] <= 0
        return a if a_smaller == (e.op is Op.MIN) else b
    if a.type != b.type:
        return None
    out = apply(_RULES[e.op], e, s)
    if out is not None:
        return out
    if isinstance(a, IntImm) or (not isinstance(b, IntImm) and s.key(b) < s.key(a)):
        return Binary.make(e.op, b, a)
    return None
