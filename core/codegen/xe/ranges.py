"""The ranges of the integer values a kernel computes, as far as its lowering needs them: which dividends
are never negative, so that a division or remainder by a constant takes the unsigned sequence.

A signed division by ``2**k`` is four instructions (the sign's correction) and a remainder two more; of a
value known not to be negative they are one ``shr`` and one ``and`` (a division by another constant: a
high multiply and a shift, with no sign fix). The cooperative copies' per-lane coordinates (a ramp of the
thread's first element, divided and reduced by the tile's extents) are such values; oneDNN's generator
knows its index expressions unsigned the same way.

Ranges come from the launch (the thread and group ids), loop counters (between their start and bound) and
lets (over their values), through ``passes.intervals`` (exact ranges, and whether an operation wraps: a
value that may wrap is not known).
"""
from __future__ import annotations

from kdd.core.ir.expr import Expr
from kdd.core.passes.intervals import IntervalAnalysis
from kdd.core.passes.options import kernel_options, launch_ranges


class ValueRanges:
    """The ranges of a kernel's integer values at the lowering's current point."""

    def __init__(self, kernel):
        self._ranges = launch_ranges(kernel_options(kernel))
        self._analysis = IntervalAnalysis()
        self._analysis.ranges = self._ranges

    def bind(self, name: str, value: Expr) -> None:
        """Variable ``name`` holds ``value`` from here on (a let)."""
        lo, hi, wraps = self._analysis.of(value)
        self._set(name, None if wraps else (lo, hi))

    def bind_loop(self, name: str, init: Expr, bound: Expr) -> None:
        """Variable ``name`` counts up from ``init`` to below ``bound`` (a loop of positive step)."""
        lo, _, wraps = self._analysis.of(init)
        _, hi, bound_wraps = self._analysis.of(bound)
        self._set(name, None if wraps or bound_wraps else (lo, max(lo, hi - 1)))

    def nonnegative(self, e: Expr) -> bool:
        """Whether integer ``e`` is never negative (and no operation inside it wraps)."""
        lo, _, wraps = self._analysis.of(e)
        return lo >= 0 and not wraps

    def _set(self, name: str, iv) -> None:
        # The analysis memoizes by node: a variable read before (another scope's let of the same name)
        # must not keep the range it had then, so every binding starts a fresh memo over the same ranges.
        fresh = IntervalAnalysis()
        fresh.ranges, fresh.tainted = self._ranges, self._analysis.tainted
        self._analysis = fresh
        if iv is None:
            self._ranges.pop(name, None)
            fresh.tainted.add(name)
        else:
            self._ranges[name] = iv
            fresh.tainted.discard(name)
