"""Register pressure of kernel IR: the most registers live at any one statement.

On Xe the model is the code generator's own allocation walk
(``codegen/xe/allocation.py``) run without emitting code: the live intervals
of ``codegen/xe/liveness.py``, packed by the allocator's register file
(buffers in whole registers on their banks, scalars in sub-registers), with
the payload the thread starts with (r0, the kernel arguments, the thread ids
the body reads) reserved as the code generator reserves it. What it leaves
out are the temporaries an instruction takes for itself while it is emitted.
In the register budget the walk runs in the budget's registers and, where
it runs out, recomputes values at their uses (``remat``) by the allocator's
own rounds (``allocation.with_remat``).

On ``sm_90`` ptxas allocates, so the model is an interval sweep: every loop
variable over its loop; every ``let`` value from its definition to its last
use, extended to the end of a loop when the use sits in a loop the
definition is outside of; every ``alloc.grf`` buffer from its first use to
its last, and over the whole of any loop that uses it. Every lane holds its
own copy of a value, so a scalar takes whole 32-bit registers
(``lane_bytes``) across the warp. Variables bound outside the IR (thread and
group ids, kernel arguments) are not counted there. Of a kernel
(``RegisterModel.of(target, kernel)``), buffers the PTX generator keeps out of
registers are left out: those only reorders read (loaded straight into the
reorder's destination words) and those only sends read (``cp.async`` copies).
The passes budget with the sweep of ``RegisterModel.of(target)`` on every
target (their decisions, and so every final IR, are as before the walk).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import ceil
from typing import Any

from ..ir.expr import Var
from ..ir.stmt import Alloc, For, Let, MemKind, Stmt
from ..ir.types import Type
from .tree import child_stmts, distinct_nodes, own_exprs


@dataclass(frozen=True)
class RegisterModel:
    """How values map to registers: ``reg_bytes`` per register row, ``lane_bytes`` per lane (or None).
    ``target`` (a ``kdd.core.targets.Target`` with an Xe ISA) makes the model the Xe allocator's walk, for a
    kernel with arguments ``arg_names`` (ABI order; their payload registers are reserved) at ``simd``."""

    reg_bytes: int
    lane_bytes: int | None = None
    target: Any = field(default=None, compare=False)
    arg_names: tuple[str, ...] = ()
    simd: int = 0

    @staticmethod
    def of(target, kernel=None) -> "RegisterModel":
        """The model of a ``kdd.core.targets.Target``: with ``kernel`` (a built ``Kernel``: its arguments and
        SIMD width) on Xe, the allocator's walk; else the interval sweep (what the passes budget with)."""
        regs = target.registers
        if kernel is None:
            return RegisterModel(regs.reg_bytes, regs.lane_bytes)
        return RegisterModel(regs.reg_bytes, regs.lane_bytes, target, tuple(a.var.name for a in kernel.args),
                             kernel.simd)

    def value_bytes(self, t: Type) -> int:
        """Register bytes one value of type ``t`` occupies."""
        if self.lane_bytes is None:
            return t.size
        regs = max(ceil(t.size / self.reg_bytes), ceil(t.scalar.size / self.lane_bytes))
        return regs * self.reg_bytes

    def regs(self, nbytes: int) -> int:
        return ceil(nbytes / self.reg_bytes)


@dataclass(frozen=True)
class RegisterEstimate:
    """Peak live register bytes and the registers that makes; on sm_90 the peak's buffer and value bytes
    (the Xe walk packs whole registers: ``peak_bytes`` is ``regs`` rows)."""

    peak_bytes: int
    regs: int
    buffer_bytes: int | None = None
    value_bytes: int | None = None


@dataclass
class _Def:
    start: int
    end: int
    depth: int
    nbytes: int
    is_buffer: bool


def estimate_registers(ir: Stmt, model: RegisterModel, budget: int | None = None) -> RegisterEstimate:
    """The register estimate of statement ``ir`` (iterative). On Xe, in ``budget`` registers the walk
    recomputes values where it runs out as the allocator does; the sweep (sm_90, the passes) ignores it."""
    if model.target is None:
        return _estimate(ir, model)
    if model.target.isa == "ptx":
        from kdd.core.codegen.ptx.memory import readers_of

        # The PTX generator loads a buffer only reorders read straight into the reorder's destination
        # words, and copies one only sends read global -> shared with cp.async: neither holds registers.
        kept_out = {n for n, kinds in readers_of(ir).items() if kinds in ({"reorder"}, {"send"})}
        return _estimate(ir, model, frozenset(kept_out))
    return _allocated(ir, model, budget)


def _allocated(ir: Stmt, model: RegisterModel, budget: int | None) -> RegisterEstimate:
    """The Xe allocator's walk over ``ir`` (``codegen/xe/allocation.py``)."""
    from kdd.core.codegen.xe.allocation import allocation_peak

    peak = allocation_peak(ir, model.target, model.arg_names, model.simd, budget)
    return RegisterEstimate(peak * model.reg_bytes, peak)


def _estimate(ir: Stmt, model: RegisterModel, kept_out: frozenset = frozenset()) -> RegisterEstimate:
    defs: dict[str, _Def] = {}
    uses: list[tuple[str, int, tuple | None]] = []
    loop_start: dict[int, int] = {}
    loop_end: dict[int, int] = {}
    counter = 0
    # Frames: ("stmt", s, chain) or ("close", s, def-or-None); chain = (loop key, depth, parent).
    stack: list[tuple] = [("stmt", ir, None)]
    while stack:
        kind, s, extra = stack.pop()
        if kind == "close":
            if isinstance(s, For):
                loop_end[id(s)] = counter
            if extra is not None:
                extra.end = counter
            continue
        chain = extra
        t = counter
        counter += 1
        depth = chain[1] if chain else 0
        for e in own_exprs(s):
            for v in distinct_nodes(e):
                if isinstance(v, Var):
                    uses.append((v.name, t, chain))
        body_chain = chain
        closing = None
        if isinstance(s, Let):
            defs[s.var.name] = _Def(t, t, depth, model.value_bytes(s.var.type), False)
        elif isinstance(s, For):
            loop_start[id(s)] = t
            body_chain = (id(s), depth + 1, chain)
            closing = _Def(t, t, depth, model.value_bytes(s.var.type), False)
            defs[s.var.name] = closing
        elif isinstance(s, Alloc) and s.kind is MemKind.GRF and s.buf.name not in kept_out:
            defs[s.buf.name] = _Def(-1, -1, depth, s.size, True)  # the interval comes from the uses
        stack.append(("close", s, closing))
        for k in reversed(child_stmts(s)):
            stack.append(("stmt", k, body_chain))
    for name, t, chain in uses:
        d = defs.get(name)
        if d is None:
            continue
        start = end = t
        if chain is not None and chain[1] > d.depth:
            while chain[1] > d.depth + 1:
                chain = chain[2]
            start, end = loop_start[chain[0]], loop_end[chain[0]]
        if d.is_buffer:
            d.start = start if d.start < 0 else min(d.start, start)
        d.end = max(d.end, end)
    return _sweep([d for d in defs.values() if d.start >= 0], model)


def _sweep(defs, model: RegisterModel) -> RegisterEstimate:
    events = []
    for d in defs:
        events.append((d.start, 1, d.nbytes, d.is_buffer))
        events.append((d.end + 1, 0, -d.nbytes, d.is_buffer))
    events.sort(key=lambda e: (e[0], e[1]))
    live = bufs = vals = 0
    peak = (0, 0, 0)
    for _, _, delta, is_buffer in events:
        live += delta
        if is_buffer:
            bufs += delta
        else:
            vals += delta
        if live > peak[0]:
            peak = (live, bufs, vals)
    return RegisterEstimate(peak[0], model.regs(peak[0]), peak[1], peak[2])
