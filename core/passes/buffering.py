"""Multi-buffering: single SLM buffering becomes double/triple buffering with a split barrier.

The builder stages each operand through SLM once per iteration (seed 000,
"single SLM buffering")::

    for ... { g2s loads (global -> staging GRF); barrier; SLM stores; fence.slm; barrier; compute from SLM }

With ``N = options["slm_bufs"] >= 2`` SLM buffers the reduction nest is
flattened (``reduction_nest``) and software-pipelined: SLM holds ``N``
iterations' tiles, iteration ``it`` computes from buffer ``it % N`` while the
tiles of iteration ``it + N - 1`` travel from global memory to buffer
``(it + N - 1) % N``, and one split barrier per iteration replaces two full
ones::

    prologue: tiles of iterations 0 .. N-2 -> SLM buffers 0 .. N-2; barrier_signal
    for it {
      barrier_wait                         // every thread finished iteration it-1
      g2s loads of iteration it+N-1        (if it+N-1 < total)
      compute iteration it from SLM buffer it % N
      SLM stores of iteration it+N-1 -> buffer (it+N-1) % N
      barrier_signal
    }
    barrier_wait

The store into buffer ``(it+N-1) % N`` overwrites what iteration ``it-1``
read; the wait at the top of ``it`` orders it after every thread's reads of
``it-1`` (they signalled after computing), and the data iteration ``it`` reads
was stored no later than iteration ``it-1``, before that signal.

GRF buffering (``options["gmem_bufs"] == 2``): the staging registers are
doubled so the global loads run one iteration further ahead: iteration ``it``
loads the tiles of ``it + N`` into staging slot ``(it + N) % 2`` while the
SLM stores take iteration ``it + N - 1``'s from the other slot.

``options["pipeline_unroll"]`` (the config's ``P=u``) marks the flat loop for
unrolling by a multiple of ``N``, so after the unroll pass every SLM buffer
index is a constant and no ``% N`` is left. GRF buffering always unrolls by a
multiple of 2: a staging slot picks registers, which must be constants.

Buffers: every ``alloc.slm`` the staged sends use grows ``N`` times, each
staging ``alloc.grf`` twice with GRF buffering; offsets into them move by the
slot times the original size. The kernel's ABI ``slm_bytes`` grows likewise
(``slm_bytes(ir)`` recomputes it from IR).
"""
from __future__ import annotations

from dataclasses import dataclass
from math import lcm
from typing import Any, Callable, Mapping

from ..ir.expr import Expr, IntImm, Load, Var
from ..ir.funcs import Barrier, BarrierSignal, BarrierWait, Reorder, Send
from ..ir.node import Node
from ..ir.stmt import Alloc, For, FuncCall, Group, If, Let, MemKind, Seq, Stmt, Store, seq
from ..ir.types import s32
from ..ir.visitor import IRMutator
from ..ir.names import Names
from .naming import rename_bound
from .reduction_nest import (MAX_COPIES, ReductionNest, block_slm_messages, find_reduction_nest,
                             room_for_copies)
from .tree import distinct_nodes, replace_node

@dataclass(frozen=True)
class Stages:
    """The innermost body split at its two barriers: lets around g2s loads, SLM stores, compute."""

    lets: tuple[Let, ...]
    loads: Stmt
    stores: Stmt
    compute: Stmt
    origin: Any  # the builder's barrier origin, kept on the split barriers for source mapping

    def wrap(self, body: Stmt) -> Stmt:
        """``body`` inside the iteration's own lets (tile origins such as ``ic0``)."""
        for let in reversed(self.lets):
            body = Let.make(let.var, let.value, body, origin=let.origin)
        return body


def split_stages(body: Stmt) -> Stages | None:
    """The three parts of a single-buffered iteration, or None when ``body`` is not one."""
    lets = []
    while isinstance(body, Let):
        lets.append(body)
        body = body.body
    if not isinstance(body, Seq):
        return None
    cuts = [i for i, s in enumerate(body.stmts) if isinstance(s, FuncCall) and isinstance(s.func, Barrier)]
    if len(cuts) != 2:
        return None
    a, b = cuts
    stmts = body.stmts
    return Stages(tuple(lets), seq(*stmts[:a]), seq(*stmts[a + 1:b]), seq(*stmts[b + 1:]), stmts[a].origin)


def slm_bytes(ir: Node) -> int:
    """Shared local memory the IR allocates (the sum of its ``alloc.slm`` sizes)."""
    return sum(n.size for n in distinct_nodes(ir) if isinstance(n, Alloc) and n.kind is MemKind.SLM)


class SlotShift(IRMutator):
    """Moves accesses to buffer ``b`` by ``slot * size[b]`` bytes (memory side or register side)."""

    def __init__(self, mem: Mapping[str, tuple[int, Expr]], reg: Mapping[str, tuple[int, Expr]]):
        self.mem, self.reg = mem, reg

    def _moved(self, table, buf: Expr, off: Expr) -> Expr:
        hit = table.get(buf.name) if isinstance(buf, Var) else None
        if hit is None:
            return off
        size, slot = hit
        return off + slot * IntImm.make(slot.type, size)

    def mutate_FuncCall(self, old: FuncCall, new: FuncCall):
        if isinstance(new.func, Reorder):  # the builder's reorder of staged tiles into the SLM layout
            ops = new.ops
            return new.with_ops(src_offset=self._moved(self.reg, ops.src, ops.src_offset),
                                dst_offset=self._moved(self.reg, ops.dst, ops.dst_offset))
        if not isinstance(new.func, Send):
            return new
        ops = new.ops
        return new.with_ops(mem_offset=self._moved(self.mem, ops.mem, ops.mem_offset),
                            reg_offset=self._moved(self.reg, ops.reg, ops.reg_offset))

    def _any(self, buf: Expr, off: Expr) -> Expr:
        """A plain load or store: SLM buffers and staging registers (the builder's zero fills) alike."""
        return self._moved(self.reg, buf, self._moved(self.mem, buf, off))

    def mutate_Load(self, old: Load, new: Load):
        off = self._any(new.buf, new.offset)
        return new if off is new.offset else Load.make(new.type, new.buf, off, new.stride, origin=new.origin)

    def mutate_Store(self, old: Store, new: Store):
        off = self._any(new.buf, new.offset)
        return new if off is new.offset else Store.make(new.buf, off, new.value, new.stride, new.mask,
                                                        origin=new.origin)


class Resize(IRMutator):
    """Grows the allocation of each buffer named in ``factors`` that many times (its slots)."""

    def __init__(self, factors: Mapping[str, int]):
        self.factors = factors

    def mutate_Alloc(self, old: Alloc, new: Alloc):
        f = self.factors.get(new.buf.name, 1)
        if f == 1:
            return new
        return Alloc.make(new.buf, new.size * f, new.kind, new.body, new.attrs, origin=new.origin)


def _send_buffers(s: Stmt, pick: Callable[[Send], bool], operand: str) -> set[str]:
    return {getattr(n.ops, operand).name for n in distinct_nodes(s)
            if isinstance(n, FuncCall) and isinstance(n.func, Send) and pick(n.func)
            and isinstance(getattr(n.ops, operand), Var)}


def multi_buffer(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` with its single SLM buffering turned into ``options["slm_bufs"]``-fold buffering."""
    options = options or {}
    n = int(options.get("slm_bufs") or 0)
    nest = find_reduction_nest(ir) if n >= 2 else None
    stages = split_stages(nest.body) if nest is not None else None
    if stages is None:
        return ir
    sizes = {a.buf.name: a.size for a in distinct_nodes(ir) if isinstance(a, Alloc)}
    slm = {b for b in _send_buffers(stages.stores, lambda f: f.space == "slm", "mem") if b in sizes}
    staging = {b for b in _send_buffers(stages.loads, lambda f: True, "reg") if b in sizes}
    g = 2 if int(options.get("gmem_bufs") or 0) >= 2 else 1
    names = Names.of(ir)
    pipe = _Pipeline(nest, stages, names, n, g, {b: sizes[b] for b in slm}, {b: sizes[b] for b in staging})
    held = n * (block_slm_messages(stages.stores) + block_slm_messages(stages.compute))
    loop = pipe.loop(options.get("pipeline_unroll", False),
                     lambda copies, held: room_for_copies(ir, options, copies, 2, held), held)
    drain = FuncCall.make(BarrierWait(), origin=stages.origin)
    k_loop = Group.make(nest.group.label, seq(pipe.prologue(), loop, drain), origin=nest.group.origin)
    out = replace_node(ir, nest.group, k_loop)
    return Resize({**{b: n for b in slm}, **{b: g for b in staging}}).mutate(out)


class _Pipeline:
    def __init__(self, nest: ReductionNest, stages: Stages, names: Names, n: int, g: int,
                 slm: Mapping[str, int], staging: Mapping[str, int]):
        self.nest, self.stages, self.names = nest, stages, names
        self.n, self.g, self.slm, self.staging = n, g, slm, staging
        self.ahead = n - 1 + (g - 1)  # how many iterations ahead the global loads run
        self.it = names.fresh("k_it", s32)

    def _at(self, it: Expr, part: Stmt, slm_slot: Expr | None, stg_slot: Expr | None) -> Stmt:
        """``part`` of iteration ``it`` (fresh names), with SLM/staging accesses in their slots."""
        stmt = rename_bound(self.stages.wrap(part), self.names, self.nest.digits(it))
        return self._shift(stmt, slm_slot, stg_slot)

    def _shift(self, stmt: Stmt, slm_slot: Expr | None, stg_slot: Expr | None) -> Stmt:
        mem = {b: (size, slm_slot) for b, size in self.slm.items()} if slm_slot is not None else {}
        reg = {b: (size, stg_slot) for b, size in self.staging.items()} if stg_slot is not None and self.g > 1 \
            else {}
        return SlotShift(mem, reg).mutate(stmt) if mem or reg else stmt

    def _mod(self, e: Expr, m: int) -> Expr:
        if isinstance(e, IntImm):
            return IntImm.make(e.type, e.value % m)
        return e % IntImm.make(e.type, m) if m > 1 else IntImm.make(e.type, 0)

    def prologue(self) -> Stmt:
        total, n, g = self.nest.total, self.n, self.g
        parts = []
        for j in range(min(n - 1, total)):
            c = IntImm.make(s32, j)
            parts.append(self._at(c, self.stages.loads, None, self._mod(c, g)))
            parts.append(self._at(c, self.stages.stores, c, self._mod(c, g)))
        if g > 1 and n - 1 < total:
            c = IntImm.make(s32, n - 1)
            parts.append(self._at(c, self.stages.loads, None, self._mod(c, g)))
        parts.append(FuncCall.make(BarrierSignal(), origin=self.stages.origin))
        return seq(*parts)

    def loop(self, unroll_for_slots: bool, room: Callable[[int, int], bool], held: int) -> Stmt:
        """The pipelined loop, unrolled for the ring's slots where ``unroll_for_slots`` (or GRF buffering
        asks), and for the inner digits where ``room(copies, held)`` (the free registers take the copies'
        values and ``held`` more) says so. Where the ring's ``held`` SLM addresses (``block_slm_messages``)
        fit the free registers alone but not beside all those copies, only the innermost digit is
        folded: an address held in a register saves an instruction at every message of every trip,
        more than an outer digit's constant saves (the demo, ``resnet50_3x3``: 3.75 -> 3.25 ALU per
        ``dpas`` with 3 copies instead of 9), less than the innermost digit's (a wrap to test and
        masks to recompute at every step: with ``bufs=2`` 2 copies would cost 10.75, 6 copies 3.17)."""
        it, total, n, g = self.it, self.nest.total, self.n, self.g
        load_it = it + IntImm.make(s32, self.ahead)
        store_it = it + IntImm.make(s32, n - 1)
        limit = IntImm.make(s32, total)
        compute = self._shift(self.stages.wrap(self.stages.compute), self._mod(it, n), None)
        body = seq(
            FuncCall.make(BarrierWait(), origin=self.stages.origin),
            If.make(load_it.lt(limit), self._at(load_it, self.stages.loads, None, self._mod(load_it, g))),
            self.nest.bind(it, compute),
            If.make(store_it.lt(limit), self._at(store_it, self.stages.stores, self._mod(store_it, n),
                                                 self._mod(store_it, g))),
            FuncCall.make(BarrierSignal(), origin=self.stages.origin),
        )
        # Register slots must be constants (register_loops): GRF buffering always unrolls by 2.
        unroll = lcm(self.nest.unroll_factor(), n if unroll_for_slots else 1, g)
        # Unrolled for the ring: by its inner digits too, where the registers take two values per copy (its
        # global load's address and padding mask)
        if unroll > 1:
            amortized = self.nest.amortized_unroll(unroll, MAX_COPIES)
            held = held if unroll % n == 0 else 0     # the slots are constants in each copy
            if amortized > unroll and room(amortized, 0):
                if room(0, held) and not room(amortized, held):
                    amortized = self.nest.amortized_unroll(unroll, MAX_COPIES, depth=1)
                unroll = amortized
        return For.make(it, 0, total, body, unroll=min(unroll, total), origin=self.nest.loops[0].origin)
