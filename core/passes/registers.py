"""Register pressure of kernel IR: the most register bytes live at any one statement.

What is live: every loop variable over its loop; every ``let`` value from
its definition to its last use, extended to the end of a loop when the use
sits in a loop the definition is outside of (the value must survive every
iteration); every ``alloc.grf`` buffer from its first use to its last, and
over the whole of any loop, outside its allocation, that uses it (an
accumulator carries values from one iteration to the next). A buffer is
live only while used, not over all of its ``alloc`` scope: a register
allocator reuses the registers of a buffer nothing reads any more.
Statements are numbered in program order, each value becomes an interval,
and a sweep over the intervals finds the peak. Variables bound outside the IR (thread and group
ids, kernel arguments) live in the target's reserved registers and are not
counted here.
Over the register budget, vector values with no register-buffer load are held
only at the statements that use them, as the Xe allocator recomputes them
there when it runs out (``codegen/xe`` rematerialization).

How many bytes a value takes depends on the register file
(``targets.RegisterFile``): on Xe a scalar occupies its size in a GRF's
sub-registers; on ``sm_90`` every lane holds its own copy, so a scalar takes
whole 32-bit registers (``lane_bytes``) across the warp.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from ..ir.expr import Load, Var
from ..ir.stmt import Alloc, For, Let, MemKind, Stmt
from ..ir.types import Type
from .tree import child_stmts, distinct_nodes, own_exprs


@dataclass(frozen=True)
class RegisterModel:
    """How values map to registers: ``reg_bytes`` per register row, ``lane_bytes`` per lane (or None)."""

    reg_bytes: int
    lane_bytes: int | None = None

    @staticmethod
    def of(target) -> "RegisterModel":
        """The model of a ``kdd.core.targets.Target``."""
        return RegisterModel(target.registers.reg_bytes, target.registers.lane_bytes)

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
    """Peak live register bytes (buffers plus values) and the registers that makes."""

    peak_bytes: int
    regs: int
    buffer_bytes: int
    value_bytes: int


@dataclass
class _Def:
    start: int
    end: int
    depth: int
    nbytes: int
    is_buffer: bool
    recomputed: bool = False


def _recomputable(s: Let) -> bool:
    """A vector value the Xe allocator recomputes at each use instead of holding it when it runs out
    (``codegen/xe`` rematerialization): no register-buffer load in it (a buffer may change between the
    let and the use)."""
    return s.var.type.lanes > 1 and not any(isinstance(n, Load) for n in distinct_nodes(s.value))


def estimate_registers(ir: Stmt, model: RegisterModel, budget: int | None = None) -> RegisterEstimate:
    """The register estimate of statement ``ir`` (linear in its size, iterative). Over ``budget``
    registers, as the allocator does when it runs out, vector values without loads are held only at the
    statements that use them (recomputed there)."""
    held = _estimate(ir, model, False)
    if budget is None or held.regs <= budget or model.lane_bytes is not None:
        return held
    return _estimate(ir, model, True)


def _estimate(ir: Stmt, model: RegisterModel, recompute: bool) -> RegisterEstimate:
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
            defs[s.var.name] = _Def(t, t, depth, model.value_bytes(s.var.type), False,
                                    recompute and _recomputable(s))
        elif isinstance(s, For):
            loop_start[id(s)] = t
            body_chain = (id(s), depth + 1, chain)
            closing = _Def(t, t, depth, model.value_bytes(s.var.type), False)
            defs[s.var.name] = closing
        elif isinstance(s, Alloc) and s.kind is MemKind.GRF:
            defs[s.buf.name] = _Def(-1, -1, depth, s.size, True)  # the interval comes from the uses
        stack.append(("close", s, closing))
        for k in reversed(child_stmts(s)):
            stack.append(("stmt", k, body_chain))
    points = []
    for name, t, chain in uses:
        d = defs.get(name)
        if d is None:
            continue
        if d.recomputed:  # held only where it is computed again, at this use
            points.append(_Def(t, t, 0, d.nbytes, False))
            continue
        start = end = t
        if chain is not None and chain[1] > d.depth:
            while chain[1] > d.depth + 1:
                chain = chain[2]
            start, end = loop_start[chain[0]], loop_end[chain[0]]
        if d.is_buffer:
            d.start = start if d.start < 0 else min(d.start, start)
        d.end = max(d.end, end)
    return _sweep([d for d in defs.values() if d.start >= 0 and not d.recomputed] + points, model)


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
