"""Canonical linear forms of integer expressions: ``c1*t1 + c2*t2 + ... + c0``.

``+``, ``-``, unary ``-`` and ``*`` by a constant are ring operations modulo
``2**bits``, so collecting an integer expression into a linear form is exact
under wrap-around: the form always has the expression's value. Only rules that
compare or divide need the stronger "no overflow" fact, which ``bounds.py``
proves by checking that the form's value over the integers stays in the type.

A *term* is any integer expression that is not itself linear: a variable, a
product of two non-constant factors, a division, a ``min``, a load, a
saturating cast, or an operand whose type differs from the form's: its
conversion to the form's type, implicit or by a plain cast (the same
operation), is part of the term, and ``to_expr`` writes the cast only where
no operand of the form's type makes it implicit. Coefficients and the constant are kept in signed two's-complement
representation (``-1`` rather than ``2**32 - 1`` for ``u32``) so differences
read naturally and intervals stay tight.

Canonical order and shape (``LinearForm.to_expr``):

- terms are sorted by ``Structure.key`` (variables by name first; see
  ``order.py``);
- terms with the same coefficient magnitude form a group, written once with
  the magnitude factored out: ``(a + c) * 2``; a group sits at the position of
  its first term; inside a group the positive terms come first and the
  negative ones are subtracted: ``(a - c) * 2``;
- groups with a positive leading term are added in order, groups with only
  negative terms are subtracted after them;
- the constant comes last (``+ 3`` or ``- 3``), or first when every group is
  negative (``3 - a``); with neither, the first negative group is negated.

So ``2 * (a + b) - a`` becomes ``(a + (b * 2))`` and ``(x*4 + 1) - x*4 + y``
becomes ``(y + 1)``.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..eval import convert
from ..expr import Binary, BoolImm, Cast, Expr, IntImm, Op, Unary, common_type, wrap_int
from ..types import Type, s8, s16, s32, s64
from ..visitor import post_order
from .order import Structure

_SIGNED = {8: s8, 16: s16, 32: s32, 64: s64}


def signed(value: int, t: Type) -> int:
    """``value`` modulo ``2**bits`` of ``t``, in signed representation."""
    return wrap_int(value, _SIGNED[t.scalar.bits])


def is_int_scalar(e: Expr) -> bool:
    return e.type.is_int and e.type.lanes == 1


@dataclass(frozen=True)
class LinearForm:
    """``sum(coef * term) + const`` in integer type ``type``, terms in canonical order.

    Coefficients are non-zero and, like ``const``, in signed representation
    modulo ``2**bits``.
    """

    type: Type
    terms: tuple[tuple[Expr, int], ...]
    const: int

    def to_expr(self) -> Expr:
        """The canonical expression of this form (see the module docstring)."""
        return build(self)


class LinearForms:
    """Computes and memoises linear forms (per object, for the life of one simplifier run)."""

    def __init__(self, structure: Structure):
        self.structure = structure
        self._memo: dict[int, tuple[Expr, LinearForm]] = {}

    def of(self, root: Expr) -> LinearForm:
        """The linear form of integer scalar expression ``root`` (iterative; any depth)."""
        memo = self._memo
        hit = memo.get(id(root))
        if hit is not None:
            return hit[1]
        for node in post_order(root, _same_type_operands, memo):
            memo[id(node)] = (node, self._combine(node))
        return memo[id(root)][1]

    def _operand(self, e: Expr, t: Type) -> tuple[dict, int]:
        """The terms and constant of operand ``e`` seen in type ``t`` (children are memoised)."""
        if isinstance(e, (IntImm, BoolImm)):
            return {}, signed(convert(e.value, e.type, t), t)
        if e.type == t:
            lf = self._memo[id(e)][1]
            return dict(lf.terms), lf.const
        while isinstance(e, Cast) and not e.saturate and _widens(e.a.type, e.type):
            e = e.a  # converting to t through a type that holds every value changes nothing
        return {e: 1}, 0

    def _combine(self, e: Expr) -> LinearForm:
        t = e.type
        if isinstance(e, IntImm):
            return LinearForm(t, (), signed(e.value, t))
        if not is_linear_op(e):
            return LinearForm(t, ((e, 1),), 0)
        if isinstance(e, Cast):
            terms, c = self._operand(e.a, t)
            return self._make(t, terms, c)
        if isinstance(e, Unary):
            terms, c = self._operand(e.a, t)
            return self._make(t, {k: -v for k, v in terms.items()}, -c)
        (ta, ca), (tb, cb) = self._operand(e.a, t), self._operand(e.b, t)
        if e.op is Op.MUL:
            return self._product(e, t, (ta, ca), (tb, cb))
        sign = 1 if e.op is Op.ADD else -1
        for k, v in tb.items():
            ta[k] = ta.get(k, 0) + sign * v
        return self._make(t, ta, ca + sign * cb)

    def _product(self, e: Binary, t: Type, a: tuple[dict, int], b: tuple[dict, int]) -> LinearForm:
        (ta, ca), (tb, cb) = a, b
        if not ta or not tb:  # a constant factor scales the other one
            (terms, c), k = ((tb, cb), ca) if not ta else ((ta, ca), cb)
            return self._make(t, {x: v * k for x, v in terms.items()}, c * k)
        # Two single-term factors make a monomial: (x*2) * (y*3) -> (x*y) * 6.
        if len(ta) == 1 and len(tb) == 1 and not ca and not cb:
            (x, cx), = ta.items()
            (y, cy), = tb.items()
            if common_type(x.type, y.type) == t:
                return self._make(t, {self.product(x, y, e): cx * cy}, 0)
        return self._make(t, {self.product(e.a, e.b, e): 1}, 0)

    def product(self, a: Expr, b: Expr, like: Binary | None = None) -> Expr:
        """``a * b`` with the factors in canonical order (``like`` is reused when it matches)."""
        key = self.structure.key
        if key(b) < key(a):
            a, b = b, a
        if like is not None and like.a is a and like.b is b:
            return like
        return Binary.make(Op.MUL, a, b)

    def _make(self, t: Type, terms: dict, const: int) -> LinearForm:
        return make_form(self.structure, t, terms, const)

    def build(self, lf: LinearForm, cast=Cast.make) -> Expr:
        """``lf.to_expr()`` (casts made by ``cast``), remembered as the form of the new expression."""
        e = build(lf, cast)
        self._memo[id(e)] = (e, lf)
        return e


_LINEAR_BINARY = frozenset((Op.ADD, Op.SUB, Op.MUL))


def is_linear_op(e: Expr) -> bool:
    """True for the nodes a linear form looks through: + - * unary- and plain integer casts."""
    t = e.type
    if not t.is_int or t.lanes != 1:
        return False
    cls = e.__class__
    if cls is Binary:
        return e.op in _LINEAR_BINARY
    if cls is Cast:  # the same conversion an operand of another type gets implicitly
        a = e.a.type
        return not e.saturate and (a.is_int or a.is_bool) and a.lanes == 1
    return cls is Unary and e.op is Op.NEG


def _same_type_operands(e: Expr) -> list[Expr]:
    """What a linear form is built from: the operands of a linear operator that have its type
    (anything else is a term)."""
    return [k for k in e.children() if k.type == e.type] if is_linear_op(e) else []


def make_form(structure: Structure, t: Type, terms: dict, const: int) -> LinearForm:
    """A canonical form from a ``{term: coefficient}`` map (coefficients over the integers)."""
    kept = [(x, k) for x, k in ((x, signed(c, t)) for x, c in terms.items()) if k]
    if len(kept) > 1:
        kept.sort(key=lambda item: structure.key(item[0]))
    return LinearForm(t, tuple(kept), signed(const, t))


# -- building the canonical expression ---------------------------------------------------------

def _widens(src: Type, dst: Type) -> bool:
    """True when integer type ``dst`` holds every value of integer (or bool) type ``src``."""
    if src.is_bool:
        return dst.is_int
    if not (src.is_int and dst.is_int):
        return False
    lo, hi = src.scalar.int_range()
    dlo, dhi = dst.scalar.int_range()
    return dlo <= lo and hi <= dhi


def build(lf: LinearForm, cast=Cast.make) -> Expr:
    t = lf.type
    if not lf.terms:
        return IntImm.make(t, lf.const)
    low = -(1 << (t.scalar.bits - 1))
    groups: dict[int, list[tuple[Expr, bool]]] = {}
    for term, c in lf.terms:
        negative = c < 0 and c != low
        groups.setdefault(-c if negative else c, []).append((term, negative))
    positive: list[Expr] = []
    negative: list[Expr] = []
    for magnitude, items in groups.items():
        expr, sign = _group(t, magnitude, items, cast)
        (positive if sign > 0 else negative).append(expr)
    c = lf.const
    if positive:
        parts = [(Op.ADD, g) for g in positive] + [(Op.SUB, g) for g in negative]
        if c:
            parts.append((Op.SUB, IntImm.make(t, -c)) if c < 0 and c != low else (Op.ADD, IntImm.make(t, c)))
        return _chain(t, parts, cast)
    if c:
        return _chain(t, [(Op.ADD, IntImm.make(t, c))] + [(Op.SUB, g) for g in negative], cast)
    return _chain(t, [(Op.NEG, negative[0])] + [(Op.SUB, g) for g in negative[1:]], cast)


def _group(t: Type, magnitude: int, items: list[tuple[Expr, bool]], cast) -> tuple[Expr, int]:
    pos = [x for x, neg in items if not neg]
    neg = [x for x, neg in items if neg]
    if pos:
        expr, sign = _chain(t, [(Op.ADD, x) for x in pos] + [(Op.SUB, x) for x in neg], cast), 1
    else:
        expr, sign = _chain(t, [(Op.ADD, x) for x in neg], cast), -1
    if magnitude != 1:
        expr = Binary.make(Op.MUL, expr, IntImm.make(t, magnitude))
    return expr, sign


def _chain(t: Type, parts: list[tuple[Op, Expr]], cast) -> Expr:
    """Left fold of ``parts`` (the first one's op is ADD or NEG) whose every partial result has type ``t``."""
    first_op, first = parts[0]
    partial_type = common_type(first.type, parts[1][1].type) if len(parts) > 1 else first.type
    if partial_type != t:
        first = cast(t, first)
    acc = Unary.make(Op.NEG, first) if first_op is Op.NEG else first
    for op, x in parts[1:]:
        if common_type(t, x.type) != t:
            x = cast(t, x)
        acc = Binary.make(op, acc, x)
    return acc
