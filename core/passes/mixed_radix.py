"""Mixed-radix digits of a loop counter, kept as wrapping counters instead of recomputed.

Flattening a loop nest (``reduction_nest``, used by buffering and prefetch)
leaves one loop ``k = init, init + 1, ...`` and recovers the old loop
variables as digits of ``x = k + c``: ``x % 3``, ``(x / 3) % 3``, ``x / 9``.
Recomputed, every digit costs a division or a modulus (and the add) per
iteration. A kernel author keeps them as counters instead: the lowest digit
counts up and wraps, and each wrap carries into the next digit::

    d0 = iif(d0 == 2, 0, d0 + 1)
    d1 = iif(d0 == 2, iif(d1 == 2, 0, d1 + 1), d1)
    q  = iif(d0 == 2 && d1 == 2, q + 1, q)        (q = x / 9, unbounded)

A ``Digit`` is ``floor(x / lo) % span`` (``span`` None: the quotient
``floor(x / lo)``); ``digit_of`` recognizes one in an expression, through
lets of ``x`` and of digits, and ``plan_chain`` picks the counters for the
digits of one ``x``: they must nest (each boundary ``lo``, ``lo * span``
divides the next), ``x`` must stay in ``[0, max]`` of its type over the loop
(then division truncating toward zero is floor division and every identity
used holds).

Unrolling: a loop unrolled ``U`` times runs copies ``k + j``. Digits that
only depend on ``x mod b`` for a ``b`` dividing ``U`` fold to constants in
every copy, so they are not counted; the counters start above the largest
such boundary ``b0``, and their update runs under ``if (x % b0 == b0 - 1)``,
a condition that also folds per copy. After unrolling, only the copies where
the low part wraps update the counters (once every ``b0`` iterations); the
other copies read them unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..ir.expr import Binary, Expr, IntImm, Op, Var, iif
from ..ir.stmt import If, Stmt, Store, seq
from ..ir.types import Type


# The attribute of a counter's ``alloc.grf``: ``(lo, hi)``, inclusive, every value its register holds.
RANGE_ATTR = "range"


@dataclass(frozen=True)
class Digit:
    """``floor(x / lo) % span`` of ``x = k + offset``; ``span`` None for ``floor(x / lo)``."""

    offset: int
    lo: int
    span: int | None

    @property
    def hi(self) -> int | None:
        return None if self.span is None else self.lo * self.span

    def value(self, x: int) -> int:
        q = x // self.lo
        return q if self.span is None else q % self.span


def digit_of(e: Expr, known: Callable[[Expr], Digit | None], offset_of: Callable[[Expr], int | None]) -> Digit | None:
    """The digit ``e`` computes: ``a / m`` or ``a % m`` (``m`` a constant > 1) where ``a`` is
    ``k + c`` (``offset_of(a)`` gives ``c``) or itself a digit (``known(a)``)."""
    if not (isinstance(e, Binary) and e.op in (Op.DIV, Op.MOD) and isinstance(e.b, IntImm) and e.b.value > 1
            and e.type == e.a.type):
        return None
    m = e.b.value
    inner = known(e.a)
    if inner is None:
        c = offset_of(e.a)
        if c is None:
            return None
        inner = Digit(c, 1, None)
    if inner.span is not None and inner.span % m:
        return None  # (q % s) / m and (q % s) % m are digits only when m divides s
    if e.op is Op.DIV:
        return Digit(inner.offset, inner.lo * m, None if inner.span is None else inner.span // m)
    return Digit(inner.offset, inner.lo, m)


def _is_chain(bounds: set[int]) -> bool:
    s = sorted(bounds)
    return all(b % a == 0 for a, b in zip(s, s[1:]))


@dataclass(frozen=True)
class Chain:
    """Counters for the digits of ``x = k + offset`` between boundaries ``bounds`` (``b0 < b1 < ...``):
    counter ``i`` holds ``floor(x / b_i) % (b_{i+1} / b_i)``; with ``top`` one more holds
    ``floor(x / b_last)``. They advance when ``x % b0 == b0 - 1`` (always when ``b0`` is 1)."""

    offset: int
    bounds: tuple[int, ...]
    top: bool

    def digits(self) -> tuple[Digit, ...]:
        out = [Digit(self.offset, a, b // a) for a, b in zip(self.bounds, self.bounds[1:])]
        if self.top:
            out.append(Digit(self.offset, self.bounds[-1], None))
        return tuple(out)

    def update(self, k: Var, counters: list[tuple[Var, Var]], carried: list[Stmt] | None = None) -> Stmt:
        """The statement advancing the counters (``(value var, register buffer)`` per digit, in
        ``digits()`` order) from the digits of ``x`` to those of ``x + 1``, and running ``carried``
        (the updates of values carried along with the digits) under the same condition."""
        t = k.type
        carry: Expr | None = None  # None: the lowest counter always advances
        stores = []
        for (v, buf), d in zip(counters, self.digits()):
            one = IntImm.make(t, 1)
            if d.span is None:
                new = v + one if carry is None else iif(carry, v + one, v)
            else:
                wraps = v.eq(IntImm.make(t, d.span - 1))
                step = iif(wraps, IntImm.make(t, 0), v + one)
                new = step if carry is None else iif(carry, step, v)
                carry = wraps if carry is None else carry.land(wraps)
            stores.append(Store.make(buf, 0, new))
        body = seq(*stores, *(carried or ()))
        b0 = self.bounds[0]
        if b0 == 1:
            return body
        x = k + IntImm.make(t, self.offset) if self.offset else k
        return If.make((x % IntImm.make(t, b0)).eq(IntImm.make(t, b0 - 1)), body)

    @property
    def upkeep(self) -> float:
        """Integer operations per iteration the updates cost once the loop is unrolled as planned
        (one add per counter, run once every ``b0`` iterations)."""
        return len(self.digits()) / self.bounds[0]


def plan_chain(uses: list[Digit], unroll: int) -> Chain | None:
    """The counters worth keeping for ``uses`` (digits of one ``x``, with repeats) in a loop unrolled
    ``unroll`` times, or None when no use would read one."""
    offset = uses[0].offset
    # Digits below a boundary dividing the unroll factor fold in every unrolled copy: no counter.
    wanted = [d for d in uses if not (d.hi is not None and unroll % d.hi == 0)]
    count: dict[Digit, int] = {}
    for d in wanted:
        count[d] = count.get(d, 0) + 1
    bounds = {1}
    for d in sorted(count, key=lambda d: (-count[d], d.lo, d.hi or 0)):
        more = bounds | {d.lo} | ({d.hi} if d.hi is not None else set())
        if _is_chain(more):
            bounds = more
    if _is_chain(bounds | {unroll}):
        bounds.add(unroll)
    b0 = max(b for b in bounds if unroll % b == 0)
    above = tuple(sorted(b for b in bounds if b >= b0))
    used = [i for i, (a, b) in enumerate(zip(above, above[1:])) if any(d.lo == a and d.hi == b for d in count)]
    if any(d.lo == above[-1] and d.span is None for d in count):
        return Chain(offset, above, True)
    return Chain(offset, above[:max(used) + 2], False) if used else None


def fits(chain: Chain, first: int, last: int, t: Type) -> bool:
    """Whether ``x = k + offset`` stays in ``[0, max of t]`` for ``k`` from ``first`` to ``last``."""
    _, hi = t.scalar.int_range()
    return first + chain.offset >= 0 and last + chain.offset <= hi
