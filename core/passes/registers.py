"""Register pressure of kernel IR: the most registers live at any one statement.

The passes' model, on every target, is an interval sweep: every loop
variable over its loop; every ``let`` value from its definition to its last
use, extended to the end of a loop when the use sits in a loop the
definition is outside of; every ``alloc.grf`` buffer from its first use to
its last, and over the whole of any loop that uses it. On ``sm_90`` every
lane holds its own copy of a value, so a scalar takes whole 32-bit registers
(``lane_bytes``) across the warp. Variables bound outside the IR (thread and
group ids, kernel arguments) are not counted there. The passes budget with
the sweep of ``RegisterModel.of(target)`` (:func:`interval_sweep`).

The model of a built kernel is its code generator's
(``kdd.core.codegen.backend_for(target).register_model(kernel)``), handed in
as the model's ``walk``, so nothing here knows a code generator: on Xe the
allocator's own walk (``codegen/xe/allocation.py``) run without emitting
code, which in the register budget recomputes values where it runs out as
the allocator does; on ``sm_90``, where ptxas allocates, the sweep without
the buffers the PTX generator keeps out of registers.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import ceil
from typing import Callable

from ..ir.stmt import Alloc, For, Let, MemKind, Stmt
from ..ir.types import Type
from ..ir.visitor import IRVisitor
from .tree import StatementReads


@dataclass(frozen=True)
class RegisterModel:
    """How values map to registers: ``reg_bytes`` per register row, ``lane_bytes`` per lane (or None).
    ``walk(ir, model, budget)``, a code generator's own count of a kernel's IR (its backend's
    ``register_model``), replaces the interval sweep where given."""

    reg_bytes: int
    lane_bytes: int | None = None
    walk: Callable[["Stmt", "RegisterModel", int | None], "RegisterEstimate"] | None = \
        field(default=None, compare=False)

    @staticmethod
    def of(target) -> "RegisterModel":
        """The interval sweep's model of a ``kdd.core.targets.Target`` (what the passes budget with)."""
        regs = target.registers
        return RegisterModel(regs.reg_bytes, regs.lane_bytes)

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
    """A value's live range over the statement positions, its loop depth and its bytes."""

    start: int
    end: int
    depth: int
    nbytes: int
    is_buffer: bool


def estimate_registers(ir: Stmt, model: RegisterModel, budget: int | None = None) -> RegisterEstimate:
    """The register estimate of statement ``ir`` (iterative): the model's ``walk`` in ``budget`` registers
    where it has one (a code generator's count), else the interval sweep, which ignores the budget."""
    if model.walk is not None:
        return model.walk(ir, model, budget)
    return interval_sweep(ir, model)


def interval_sweep(ir: Stmt, model: RegisterModel, kept_out: frozenset = frozenset()) -> RegisterEstimate:
    """The interval sweep over ``ir`` (the module docstring), leaving out the buffers named in ``kept_out``."""
    walk = _Intervals(model, kept_out)
    walk.visit(ir)
    defs = walk.defs
    for name, t, loops in walk.uses:
        d = defs.get(name)
        if d is None:
            continue
        start = end = t
        if len(loops) > d.depth:  # used in a loop inside the definition's: live over all of its trips
            loop = loops[d.depth]
            start, end = walk.loop_start[id(loop)], walk.loop_end[id(loop)]
        if d.is_buffer:
            d.start = start if d.start < 0 else min(d.start, start)
        d.end = max(d.end, end)
    return _sweep([d for d in defs.values() if d.start >= 0], model)


class _Intervals(IRVisitor):
    """Numbers statements in program order: each definition (let, loop variable, GRF buffer) with its
    loop depth, each use with the loops around it, each loop's first and last number."""

    statements_only = True

    def __init__(self, model: RegisterModel, kept_out: frozenset):
        self.model, self.kept_out = model, kept_out
        self.defs: dict[str, _Def] = {}
        self.uses: list[tuple[str, int, tuple]] = []
        self.loop_start: dict[int, int] = {}
        self.loop_end: dict[int, int] = {}
        self.counter = 0
        self._loop_vars: list[_Def] = []  # the definitions of the open loops' variables
        self._read = StatementReads()  # read_names, each expression walked once per sweep

    def visit_Stmt(self, s: Stmt) -> None:
        t = self.counter
        self.counter += 1
        loops = tuple(self.loops)
        # each name once: a use more of a name at the same number changes no interval
        self.uses += [(name, t, loops) for name in self._read(s)]
        depth = len(loops)
        if isinstance(s, Let):
            self.defs[s.var.name] = _Def(t, t, depth, self.model.value_bytes(s.var.type), False)
        elif isinstance(s, For):
            self.loop_start[id(s)] = t
            d = self.defs[s.var.name] = _Def(t, t, depth, self.model.value_bytes(s.var.type), False)
            self._loop_vars.append(d)
        elif isinstance(s, Alloc) and s.kind is MemKind.GRF and s.buf.name not in self.kept_out:
            self.defs[s.buf.name] = _Def(-1, -1, depth, s.size, True)  # the interval comes from the uses

    def leave_For(self, s: For) -> None:
        self.loop_end[id(s)] = self.counter
        self._loop_vars.pop().end = self.counter  # the loop variable lives over every trip


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
