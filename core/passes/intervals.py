"""Value ranges of integer expressions over the integers, to find where fixed-width arithmetic wraps.

``IntervalAnalysis.of(e)`` returns ``(lo, hi, overflows)``: the range of the
value ``e`` would have if every operation were computed exactly (no
wrap-around), and whether some operation inside ``e`` (or in the value of a
variable it reads, see ``tainted``) leaves the range of its own type, i.e.
wraps in the fixed-width program. Leaves: immediates are exact, variables
take the caller's ranges (else their type's), loads their type's range. A
conversion to a narrower type that may not hold the value counts as wrapping.

This is deliberately not the simplifier's bounds analysis
(``simplify/bounds.py``), which bounds the *wrapped* values a program
computes; overflow detection needs the unwrapped ones.
"""
from __future__ import annotations

from typing import Mapping

from ..ir.expr import (Binary, Broadcast, Cast, Expr, IntImm, Load, Op, Ramp, Shuffle, Ternary, Unary,
                       Var, value_operands)
from ..ir.node import Node
from ..ir.types import Type
from ..ir.visitor import post_order

Interval = tuple[int, int]


def type_range(t: Type) -> Interval:
    if t.is_bool:
        return (0, 1)
    return t.scalar.int_range()


def fits(iv: Interval, t: Type) -> bool:
    lo, hi = type_range(t)
    return lo <= iv[0] and iv[1] <= hi


def _tdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _span(values) -> Interval:
    values = list(values)
    return min(values), max(values)


def _binary(op: Op, a: Interval, b: Interval, t: Type) -> Interval | None:
    """The exact range of ``a op b``; None when only the type's range is known."""
    if op is Op.ADD:
        return a[0] + b[0], a[1] + b[1]
    if op is Op.SUB:
        return a[0] - b[1], a[1] - b[0]
    if op is Op.MUL:
        return _span(x * y for x in a for y in b)
    if op is Op.DIV:
        if b[0] > 0 or b[1] < 0:
            return _span(_tdiv(x, y) for x in a for y in b)
        m = max(abs(a[0]), abs(a[1]))
        return -m, m  # a zero divisor gives 0 (eval.py), any other shrinks |a|
    if op is Op.MOD:
        m = max(abs(b[0]), abs(b[1]), 1) - 1
        if a[0] >= 0:
            return 0, min(a[1], m)
        if a[1] <= 0:
            return max(a[0], -m), 0
        return -m, m
    if op is Op.DIV_UP:
        return _binary(Op.DIV, _binary(Op.ADD, a, (b[0] - 1, b[1] - 1), t), b, t)
    if op is Op.MIN:
        return min(a[0], b[0]), min(a[1], b[1])
    if op is Op.MAX:
        return max(a[0], b[0]), max(a[1], b[1])
    if op in (Op.SHL, Op.SHR) and b[0] == b[1] and 0 <= b[0] < t.scalar.bits:
        c = b[0]
        return (a[0] << c, a[1] << c) if op is Op.SHL else (a[0] >> c, a[1] >> c)
    if op is Op.BIT_AND and a[0] >= 0 and b[0] >= 0:
        return 0, min(a[1], b[1])
    if op in (Op.BIT_OR, Op.BIT_XOR) and a[0] >= 0 and b[0] >= 0:
        return 0, (1 << max(a[1], b[1]).bit_length()) - 1
    return None


class IntervalAnalysis:
    """Exact-arithmetic ranges with memoization per node object.

    ``ranges`` maps variable names to inclusive ranges; ``tainted`` names
    variables whose value already wrapped (reading one taints the reader).
    Both may grow between calls (a pass adds each let it meets); a variable's
    entry must not change once an expression reading it has been analysed.
    """

    def __init__(self, ranges: Mapping[str, Interval] | None = None):
        self.ranges: dict[str, Interval] = dict(ranges or {})
        self.tainted: set[str] = set()
        self._memo: dict[int, tuple[Node, Interval, bool]] = {}

    def of(self, e: Expr) -> tuple[int, int, bool]:
        """``(lo, hi, overflows)`` of integer or bool expression ``e`` (iterative, any depth)."""
        memo = self._memo
        for node in post_order(e, value_operands, memo):
            memo[id(node)] = (node, *self._node(node))
        _, (lo, hi), bad = memo[id(e)]
        return lo, hi, bad

    def _kid(self, e: Node) -> tuple[Interval, bool]:
        return self._memo[id(e)][1:]

    def _node(self, e: Expr) -> tuple[Interval, bool]:
        t = e.type
        if not (t.is_int or t.is_bool):
            return (0, 0), False
        if isinstance(e, IntImm):
            return (e.value, e.value), False
        if isinstance(e, Var):
            return self.ranges.get(e.name, type_range(t)), e.name in self.tainted
        if isinstance(e, Load):  # a wrapped offset is its own address's problem, not the value's
            return type_range(t), False
        kids = [self._kid(k) for k in e.children()]
        bad = any(k[1] for k in kids)
        if t.is_bool:
            return (0, 1), bad
        exact = self._exact(e, [k[0] for k in kids])
        if exact is None:
            return type_range(t), bad
        if not fits(exact, t):
            return type_range(t), True
        return exact, bad

    def _exact(self, e: Expr, kids: list[Interval]) -> Interval | None:
        t = e.type
        if isinstance(e, Unary):
            (lo, hi), = kids
            if e.op is Op.NEG:
                return -hi, -lo
            return -hi - 1, -lo - 1  # ~x == -x - 1
        if isinstance(e, Binary):
            a, b = (_as_operand(iv, k.type, t) for iv, k in zip(kids, (e.a, e.b)))
            return _binary(e.op, a, b, t)
        if isinstance(e, Ternary):
            a, b, c = (_as_operand(iv, k.type, t) for iv, k in zip(kids, (e.a, e.b, e.c)))
            if e.op is Op.IIF:
                return min(b[0], c[0]), max(b[1], c[1])
            if e.op is Op.ADD3:
                return a[0] + b[0] + c[0], a[1] + b[1] + c[1]
            prod = _span(x * y for x in b for y in c)
            return a[0] + prod[0], a[1] + prod[1]
        if isinstance(e, Cast):
            return kids[0] if e.a.type.is_int or e.a.type.is_bool else None
        if isinstance(e, Ramp):
            lo, hi = kids[0]
            far = (e.lanes - 1) * e.stride
            return lo + min(0, far), hi + max(0, far)
        if isinstance(e, Broadcast):
            return kids[0]
        if isinstance(e, Shuffle):
            return min(k[0] for k in kids), max(k[1] for k in kids)
        return None  # anything else: the type's range


def _as_operand(iv: Interval, src: Type, op_type: Type) -> Interval:
    """An operand's range after the implicit conversion to the operation's type."""
    if src.is_bool or fits(iv, op_type):
        return iv
    return type_range(op_type)
