"""Integer overflow safety: find 32-bit address arithmetic that can wrap and redo it in 64 bits.

Offsets into a large tensor (over 2 GiB) do not fit in ``s32``, yet a builder
computes indices in ``s32``. The pass bounds every integer expression over
the integers (``intervals.IntervalAnalysis``) with the ranges the launch
gives: ``options["var_ranges"]`` (``(name, lo, hi)`` triples for the thread
and group ids), loop variables between their bounds, let variables over
their values. An *address* (a load or store offset, the memory offset of a
``send``) in which some operation may wrap, or that reads a let whose value
may wrap, is rebuilt in ``s64``: its integer leaves are converted to ``s64``
(a let whose value wraps gets an ``s64`` twin, ``<name>_w``, defined right
after it) and every operation is recomputed in the wider type. Comparisons,
conditions and non-address uses keep their original form.

When nothing wraps at run time both forms compute the same offset; when
something would wrap, only the widened one is right. Without ranges for a
free variable its whole type range is assumed, which widens more than needed
but never less.
"""
from __future__ import annotations

from typing import Any, Mapping

from ..ir.expr import Cast, Expr, IntImm, Load, Var
from ..ir.funcs import Send
from ..ir.node import Node
from ..ir.stmt import For, FuncCall, Let, Stmt, Store
from ..ir.types import s64
from ..ir.visitor import IRMutator, statements
from .intervals import IntervalAnalysis
from ..ir.names import Names
from .options import launch_ranges


class _Widen(IRMutator):
    """An expression with integer leaves in ``s64`` and operations rebuilt over them.

    Rebuilding a node over wider operands recomputes its type (``Binary.make``
    and friends), so only the leaves change here. Bool subtrees (an ``iif``
    condition, a comparison) are left as they are.
    """

    def __init__(self, twins: Mapping[str, Var]):
        self.twins = twins

    def pre_Var(self, v: Var):
        twin = self.twins.get(v.name)
        if twin is not None:
            return twin
        return Cast.make(s64, v) if _narrow_int(v.type) else v

    def pre_IntImm(self, e: IntImm):
        return IntImm.make(s64, e.value) if _narrow_int(e.type) else e

    def pre_Load(self, e: Load):
        return Cast.make(s64, e) if _narrow_int(e.type) else e

    def pre_Expr(self, e: Expr):
        # Conditions and comparisons keep their meaning; only integer arithmetic widens.
        if e.type.is_bool or not e.type.is_int:
            return e
        return None

    def pre_Cast(self, e: Cast):
        return None if e.a.type.is_int else (Cast.make(s64, e) if _narrow_int(e.type) else e)

    def mutate_Cast(self, old: Cast, new: Cast):
        return new.a if new.a.type.is_int else new  # the widened operand replaces a narrowing cast


def _narrow_int(t) -> bool:
    return t.is_int and t.scalar.bits < 64


class _Rewrite(IRMutator):
    def __init__(self, analysis: IntervalAnalysis, twins: Mapping[str, Var]):
        self.analysis, self.twins = analysis, twins

    def _wraps(self, e: Expr) -> bool:
        return e.type.is_int and self.analysis.of(e)[2]

    def _widen(self, e: Expr) -> Expr:
        return _Widen(self.twins).mutate(e)

    def mutate_Load(self, old: Load, new: Load):
        if not self._wraps(old.offset):
            return new
        return Load.make(new.type, new.buf, self._widen(new.offset), new.stride, origin=new.origin)

    def mutate_Store(self, old: Store, new: Store):
        if not self._wraps(old.offset):
            return new
        return Store.make(new.buf, self._widen(new.offset), new.value, new.stride, new.mask, origin=new.origin)

    def mutate_FuncCall(self, old: FuncCall, new: FuncCall):
        if not isinstance(new.func, Send) or not self._wraps(old.ops.mem_offset):
            return new
        return new.with_ops(mem_offset=self._widen(new.ops.mem_offset))

    def mutate_Let(self, old: Let, new: Let):
        twin = self.twins.get(old.var.name)
        if twin is None:
            return new
        return Let.make(new.var, new.value, Let.make(twin, self._widen(new.value), new.body), origin=new.origin)


def _analyse(ir: Stmt, ranges: Mapping[str, tuple[int, int]]) -> tuple[IntervalAnalysis, list[Let]]:
    """Ranges of every loop and let variable (definitions before uses) and the lets that wrap."""
    analysis = IntervalAnalysis(ranges)
    wrapping = []
    for s in statements(ir):  # loops and lets are statements: no expression walked
        if isinstance(s, For):
            init_lo = analysis.of(s.init)[0]
            bound_hi = analysis.of(s.bound)[1]
            analysis.ranges[s.var.name] = (init_lo, max(init_lo, bound_hi - 1))
        elif isinstance(s, Let) and s.var.type.is_int:
            lo, hi, wraps = analysis.of(s.value)
            analysis.ranges[s.var.name] = (lo, hi)
            if wraps:
                analysis.tainted.add(s.var.name)
                wrapping.append(s)
    return analysis, wrapping


def widen_overflowing_offsets(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` with every address that may wrap in 32 bits computed in ``s64``; the same object when none."""
    if not isinstance(ir, Stmt):
        return ir
    analysis, wrapping = _analyse(ir, launch_ranges(options or {}))
    names = Names.of(ir) if wrapping else None
    twins = {s.var.name: names.fresh(f"{s.var.name}_w", s64) for s in wrapping
             if _narrow_int(s.var.type) and s.var.type.lanes == 1}
    return _Rewrite(analysis, twins).mutate(ir)
