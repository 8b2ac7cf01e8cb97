"""Lowering final sm_90 kernel IR to per-lane PTX: the statements and the warp-wide functions.

The IR's thread is a warp; :class:`PtxLowering` writes what one lane runs.
Scalars (lets, loop variables, scalar loads) are warp-uniform, so every lane
computes them. A register buffer of ``n`` bytes is ``ceil(n / 128)`` 32-bit
registers per lane (row ``r`` is ``%gK_r``). Warp-wide operations on buffer
bytes are split into slots (:mod:`.lanes`): each lane handles the element of
its own bytes, with the element index computed from the lane id; where an
element lives in another lane's register (a reorder between layouts) it is
fetched with ``shfl.sync.idx`` (:mod:`.words`). ``mma`` takes fragment rows
directly (the IR's fragment rule is PTX's). Sends (:mod:`.memory`) become
per-lane ``ld``/``st``/``red`` (``.global`` with 64-bit addresses,
``.shared`` with 32-bit ones into one dynamic shared array), shared-memory
loads read by reorders become loads of the reorder's destination words
(``ldmatrix`` where they are 8x8 matrices, :mod:`.matrix`), and global loads
staged into shared memory become ``cp.async`` (16 bytes per lane where
aligned). ``barrier`` is ``bar.sync 0`` after committing the copies issued
since the last commit as a group and ``cp.async.wait_group K`` with the ``K``
that :mod:`.asyncs` planned; a split barrier is ordered at its wait, so
``barrier_wait`` is that and ``barrier_signal`` emits nothing. Expressions
are :mod:`.expressions`, alignment facts :mod:`.align`.
"""
from __future__ import annotations

import numpy as np

from kdd.core.ir.expr import Binary, Cast, IntImm, Load, Ternary, Unary, Var
from kdd.core.ir.funcs import Barrier, BarrierSignal, BarrierWait, Eltwise, Fence, Mad, Mma, Reduce, Reorder, Send
from kdd.core.ir.stmt import Alloc, For, FuncCall, Group, If, Let, MemKind, Seq, Store
from kdd.core.ir.types import bf16, f16, f32, s32, u32
from kdd.core.ir.visitor import substitute, walk

from ..errors import CodegenUnsupported
from .align import slot_multiples
from .asyncs import MAX_QUEUE, Events, Plan, bounds
from .eltwise import eltwise_f32
from .emitter import Emitter, ptx_type, reg_class
from .expressions import ExprLowering
from .hopper import SWIZZLE_ALIGN, HopperLowering
from .lanes import LANES, ROW, Slot, slots
from .matrix import lane_addresses, matrix_rows
from .memory import Deferred, MemoryLowering, Redo, readers_of
from .swizzle import LINE
from .values import THREAD_IDS, Ctx, GrfBuf, Value, imm_text, pow2
from .words import LaneWords

__all__ = ["PtxLowering", "Redo"]

FULL = (1 << LANES) - 1


def _staged_store(item) -> bool:
    """A shared-memory store, which may queue copies beside the ones queued before it."""
    return isinstance(item, FuncCall) and isinstance(item.func, Send) and item.func.op.value == "store" \
        and item.func.space == "slm"


class PtxLowering(LaneWords, ExprLowering, MemoryLowering, HopperLowering):
    def __init__(self, kernel, body, no_defer: frozenset = frozenset(), plan: Plan | None = None,
                 swizzles: dict[str, int] | None = None):
        self.kernel, self.body = kernel, body
        self.plan = plan                    # cp.async waits from a first run's events (.asyncs)
        self.swizzle = dict(swizzles or {})  # shared buffer -> shift of its XOR swizzle (.swizzle)
        self.pitches: dict[str, set[int]] = {}   # shared buffer -> row pitches of its ldmatrix loads
        self.slm_sizes: dict[str, int] = {}
        self.branches = 0                   # branches the lowering is inside
        self.events = Events()
        self.any_async = False
        self.ranges: dict[str, tuple[int, int]] = {}
        readers = readers_of(body)
        # shared-memory loads into buffers only reorders read become loads of the reorder's words;
        # global loads into buffers only sends store become cp.async (global -> shared, no registers)
        self.defer = {n for n, k in readers.items() if k == {"reorder"}} - set(no_defer)
        self.stage = {n for n, k in readers.items() if k == {"send"}} - set(no_defer)
        self.inputs = {a.var.name for a in kernel.args if a.role == "input"}
        self.async_pending = False          # copies issued since the last commit_group
        self.copies: list[tuple] = []       # 16-byte global -> shared copies not emitted yet
        self.stashed: tuple | None = None   # (condition, deferred global loads) of a closed branch
        self.slot_m = slot_multiples(body, {a.var.name: 16 for a in kernel.args})
        self.deferred: dict[str, list[Deferred]] = {}
        self.dropped: dict[str, list[tuple[int, int]]] = {}
        self.em = Emitter()
        self.env: dict[str, list] = {}
        self.align: dict[str, int] = {}
        self.grf: dict[str, GrfBuf] = {}
        self.slm: dict[str, int] = {}
        self.slm_bytes = 0
        self.globals: dict[str, str] = {}
        self.allocations: list[dict] = []
        self.loops: list[dict] = []
        self.lane = None

    # -- entry --------------------------------------------------------------------------------
    def run(self) -> None:
        em = self.em
        self.lane = Value(em.new("r"), u32)
        em.op(f"mov.u32 {self.lane.text}, %tid.x")
        warp = em.new("r")
        em.op(f"shr.u32 {warp}, {self.lane.text}, 5")
        em.op(f"and.b32 {self.lane.text}, {self.lane.text}, 31")
        self.bind("thread_id0", Value(warp, s32))
        tg, grid = tuple(self.kernel.tg), tuple(self.kernel.grid)
        self.ranges.update({f"thread_id{i}": (0, tg[i] - 1) for i in range(3)})
        self.ranges.update({f"group_id{i}": (0, grid[i] - 1) for i in range(3)})
        for name, sreg in THREAD_IDS.items():
            r = em.new("r")
            em.op(f"mov.u32 {r}, {sreg}")
            self.bind(name, Value(r, s32))
        self.smem = em.new("r")
        em.op(f"mov.u32 {self.smem}, kdd_smem")
        self.hopper_entry()
        for a in self.kernel.args:
            p, g = em.new("rd"), em.new("rd")
            em.op(f"ld.param.u64 {p}, [p_{a.var.name}]")
            em.op(f"cvta.to.global.u64 {g}, {p}")
            self.globals[a.var.name] = g
            self.align[a.var.name] = 16
        self.stmt(self.body)
        self.unstash()
        if self.any_async:          # no copy outlives the kernel
            self.commit()
            em.op("cp.async.wait_all")
        em.op("ret")

    # -- bindings -----------------------------------------------------------------------------
    def bind(self, name: str, v) -> None:
        self.env.setdefault(name, []).append(v)

    def unbind(self, name: str, outer_range: tuple[int, int] | None = None) -> None:
        """End ``name``'s innermost binding; its bounds become the enclosing binding's again
        (division by constants relies on them, :meth:`ExprLowering._divide_constant`)."""
        self.env[name].pop()
        self.ranges[name] = outer_range

    def bounds(self, e) -> tuple[int, int] | None:
        """Bounds of integer expression ``e`` over every thread of the kernel (:func:`.asyncs.bounds`)."""
        return bounds(e, self.ranges.get)

    def lookup(self, name: str):
        stack = self.env.get(name)
        if not stack:
            raise CodegenUnsupported(f"variable {name} is not bound")
        return stack[-1]

    # -- statements ---------------------------------------------------------------------------
    def stmt(self, s) -> None:
        stack = [s]
        while stack:
            item = stack.pop()
            if self.copies and not _staged_store(item):
                self.flush_copies()
            if callable(item):
                item()
                continue
            if isinstance(item, Seq):
                stack.extend(reversed(item.stmts))
            elif isinstance(item, Group):
                stack.append(item.body)
            elif isinstance(item, Let):
                self.em.node = item
                outer = self.ranges.get(item.var.name)
                for name in self._let(item):
                    stack.append(lambda name=name, outer=outer: self.unbind(name, outer))
                stack.append(item.body)
            elif isinstance(item, Alloc):
                self.em.node = item
                self._alloc(item, stack)
            elif isinstance(item, (For, If)):
                self.em.node = item
                self.flush(keep=item.cond if isinstance(item, If) else None)
                (self._for if isinstance(item, For) else self._if)(item)
            elif isinstance(item, Store):
                self.em.node = item
                self._store(item)
            elif isinstance(item, FuncCall):
                self.em.node = item
                try:
                    self._call(item)
                except CodegenUnsupported as exc:
                    raise CodegenUnsupported.located(exc, item)
            else:
                raise CodegenUnsupported(f"PTX lowering has no rule for {type(item).__name__}")

    def _let(self, s: Let) -> list[str]:
        """Binds ``s``'s variable (and the registers of its vector's warp-uniform parts); the names
        bound, for the end of its scope."""
        if s.var.type.lanes > 1:
            value, names = self._uniform_parts(s)
            self.bind(s.var.name, value)            # a vector: evaluated per lane where it is used
            self.ranges[s.var.name] = self.bounds(s.value) if s.var.type.is_int else None
            return [s.var.name, *names]
        self._let_register(s.var, s.value)
        return [s.var.name]

    def _let_register(self, var, value) -> None:
        v = self.ev(value)
        r = self.em.new(reg_class(var.type))
        self._mov(r, v)
        self.bind(var.name, Value(r, var.type))
        self.align[var.name] = self.multiple(value)
        self.ranges[var.name] = self.bounds(value) if var.type.is_int else None

    def _uniform_parts(self, s: Let):
        """``s``'s vector with each scalar operation in it (warp-uniform, no load) computed here, once,
        into a register: the vector is evaluated per lane at every use, and an epilogue's row address
        (divisions of the tile index) would otherwise be recomputed for each of its 64 stores."""
        parts: dict = {}

        def visit(e):
            if e.type.lanes == 1:
                if isinstance(e, (Binary, Unary, Ternary, Cast)) and not any(isinstance(n, Load) for n in walk(e)):
                    parts.setdefault(e, Var.make(e.type, f"{s.var.name}.u{len(parts)}"))
                return
            for k in e.children():
                visit(k)

        visit(s.value)
        for e, var in parts.items():
            self._let_register(var, e)
        return substitute(s.value, parts), [var.name for var in parts.values()]

    def _mov(self, dst: str, v: Value) -> None:
        t = v.type
        if t.is_bool:
            if v.imm is not None:
                self.em.op(f"setp.ne.u32 {dst}, {1 if v.imm else 0}, 0")
            else:
                self.em.op(f"mov.pred {dst}, {v.text}")
            return
        kind = reg_class(t)
        self.em.op(f"mov.{ {'h': 'b16', 'r': 'b32', 'rd': 'b64', 'f': 'f32', 'fd': 'f64'}[kind]} {dst}, {v.text}")

    def _alloc(self, s: Alloc, stack) -> None:
        name = s.buf.name
        self.em.release()           # the line numbers of its scope count the held stores
        first = len(self.em.lines)
        if s.kind is MemKind.GRF:
            buf = GrfBuf(self.em.buffer(max(1, -(-s.size // ROW))), max(1, -(-s.size // ROW)), name)
            self.grf[name] = buf
            entry = {"label": name, "category": "register buffer", "start": 0, "bytes": s.size,
                     "first_line": first, "last_line": first}
            self.allocations.append(entry)

            def close(entry=entry, name=name):
                self.em.release()
                entry["last_line"] = max(entry["first_line"], len(self.em.lines) - 1)
                self.deferred.pop(name, None)
                self.dropped.pop(name, None)
                del self.grf[name]
            stack.append(close)
        elif s.kind is MemKind.SLM:
            align = LINE if name in self.swizzle else 16     # a swizzled buffer's lines are bank lines
            if name in self.tma_slm:                         # the 128-byte swizzle's period
                align = SWIZZLE_ALIGN
            base = -(-self.slm_bytes // align) * align
            self.slm_sizes[name] = s.size
            self.slm[name] = base
            self.slm_bytes = base + s.size
            self.align[name] = 16
            stack.append(lambda name=name: self.slm.pop(name))
        else:
            raise CodegenUnsupported(f"alloc of {s.kind.value} memory ({name}) has no PTX form")
        stack.append(s.body)

    def _for(self, s: For) -> None:
        em = self.em
        init, bound = self.ev(s.init), self.ev(s.bound)
        var = em.new(reg_class(s.var.type))
        t = ptx_type(s.var.type)
        self._mov(var, init)
        bnd = em.new(reg_class(s.var.type))
        self._mov(bnd, bound)
        top, end = em.label("loop"), em.label("done")
        p = em.new("p")
        em.op(f"setp.ge.{t} {p}, {var}, {bnd}")
        em.op(f"bra.uni {end}", p)
        trips = None
        if init.imm is not None and bound.imm is not None:
            trips = max(0, -(-(bound.imm - init.imm) // s.step))
        self.loops.append({"var": s.var.name, "trips": trips, "line": len(em.lines)})
        lo, hi = self.bounds(s.init), self.bounds(s.bound)
        outer_range = self.ranges.get(s.var.name)
        self.ranges[s.var.name] = (lo[0], hi[1] - 1) if lo and hi else None
        self.events.loop(trips)
        outer = em.weight
        em.weight = outer * (trips or 1)
        em.place(top)
        self.bind(s.var.name, Value(var, s.var.type))
        self.align[s.var.name] = min(self.multiple(s.init), pow2(s.step))
        self.stmt(s.body)
        self.unbind(s.var.name, outer_range)
        em.node = s
        self.flush()
        self.events.close()
        em.op(f"add.{t} {var}, {var}, {s.step}")
        em.op(f"setp.lt.{t} {p}, {var}, {bnd}")
        em.op(f"bra.uni {top}", p)
        em.weight = outer
        em.place(end)

    def _if(self, s: If) -> None:
        em = self.em
        c = self.pred(self.ev(s.cond))
        other, end = em.label("else"), em.label("endif")
        em.op(f"bra.uni {other if s.else_ is not None else end}", f"!{c}")
        self.events.branch()
        self.take_stash(s.cond)
        self.branches += 1
        self.stmt(s.then)
        em.node = s
        self.flush(stash=s.cond if s.else_ is None else None, commit=False)
        self.events.otherwise()
        if s.else_ is not None:
            em.op(f"bra.uni {end}")
            em.place(other)
            self.stmt(s.else_)
            em.node = s
            self.flush(commit=False)
        self.branches -= 1
        self.events.close()
        em.place(end)
        self.commit()           # on both paths: a skipped stage is an empty group, so K stays per stage

    # -- stores to register buffers -----------------------------------------------------------
    def _store(self, s: Store) -> None:
        name = s.buf.name
        t = s.value.type
        if name not in self.grf:
            raise CodegenUnsupported(f"a store to {name}: only register buffers are stored to outside sends")
        if not isinstance(s.offset, IntImm):
            raise CodegenUnsupported(f"register buffer {name} indexed by a run-time offset")
        buf = self.grf[name]
        size = 1 if t.is_bool else t.base.size
        first = s.offset.value + np.arange(t.lanes) * s.stride
        self.writes(name, int(first.min()), int(first.max()) + size)
        for slot in slots(first):
            ctx = None
            if t.lanes > 1:
                ctx = Ctx(slot, self.lane_value)
            v = self.ev(s.value, ctx)
            p = self.lane_pred(slot.mask)
            if s.mask is not None:
                p = self.and_pred(p, self.guard(self.ev(s.mask, ctx)))
            self.write_word(buf, slot.row, slot.byte, size, self.value_bits(v) if not (
                v.imm is not None and size == 4 and not v.type.is_bool) else v.text, p)

    # -- functions ----------------------------------------------------------------------------
    def _call(self, call: FuncCall) -> None:
        f = call.func
        if self.hopper_call(call):
            return
        if isinstance(f, Send):
            self._send(call)
        elif isinstance(f, Mma):
            self._mma(call)
        elif isinstance(f, Mad):
            self._mad(call)
        elif isinstance(f, Reorder):
            self._reorder(call)
        elif isinstance(f, Reduce):
            self._reduce(call)
        elif isinstance(f, Eltwise):
            self._eltwise(call)
        elif isinstance(f, (Barrier, BarrierWait)):
            self.flush()
            n = self.events.barrier()
            keep = self.plan.waits.get(n, 0) if self.plan is not None else 0
            if self.any_async and keep < MAX_QUEUE:     # all but the newest `keep` groups complete
                self.em.op(f"cp.async.wait_group {keep}")
            self.em.op("bar.sync 0")
        elif isinstance(f, Fence) and f.scope == "global":
            self.flush()
            self.em.op("fence.acq_rel.gpu")   # a split reduction's adds before its count, its count before the loads
        elif isinstance(f, Fence) and f.scope == "async":
            self.flush()            # this warp's st.shared before the async proxy (wgmma) reads them,
            self.em.op("fence.proxy.async.shared::cta")     # then ordered before lane 0's arrival
            self.em.op("bar.warp.sync -1")
        elif isinstance(f, Fence) and f.scope == "slm" and not self.branches:
            self.commit()           # a stage's copies end at its fence: one group per stage
        elif isinstance(f, (BarrierSignal, Fence)):
            pass                    # ordered by the barrier_wait / bar.sync that follows
        else:
            raise CodegenUnsupported(f"{f} has no PTX lowering")

    def _rows(self, buf_arg, off_arg, n: int, what: str) -> list[str]:
        if buf_arg.name not in self.grf or not isinstance(off_arg, IntImm) or off_arg.value % ROW:
            raise CodegenUnsupported(f"mma {what} must be a register buffer at a whole-row offset")
        buf = self.grf[buf_arg.name]
        r0 = off_arg.value // ROW
        if what == "D":
            self.writes(buf.name, off_arg.value, off_arg.value + n * ROW)
        else:
            self.reads(buf.name, off_arg.value, off_arg.value + n * ROW)
        return [buf.row(r0 + i) for i in range(n)]

    def _mma(self, call: FuncCall) -> None:
        f: Mma = call.func
        d, d_off, a, a_off, b, b_off, c, c_off = call.ops
        names = {"f16": "f16", "bf16": "bf16", "s8": "s8", "u8": "u8", "f32": "f32", "s32": "s32"}
        at, bt, ct = (names.get(x.scalar.short) for x in (f.a_type, f.b_type, f.c_type))
        if (f.m, f.n, f.k) not in ((16, 8, 16), (16, 8, 32)) or None in (at, bt, ct):
            raise CodegenUnsupported(f"{f} has no PTX mma.sync form in kdd yet")
        na = f.m * f.k * f.a_type.size // ROW
        nb = f.k * f.n * f.b_type.size // ROW
        nc = f.m * f.n * f.c_type.size // ROW
        ar, br, cr, dr = (self._rows(x, o, n, w) for x, o, n, w in
                          ((a, a_off, na, "A"), (b, b_off, nb, "B"), (c, c_off, nc, "C"), (d, d_off, nc, "D")))
        # integer mma without .satfinite wraps, as the IR's s32 mma does; .b32 registers serve as the .f32 fragments (ptxas takes them), so no moves around the mma
        self.em.op(f"mma.sync.aligned.m{f.m}n{f.n}k{f.k}.row.col.{ct}.{at}.{bt}.{ct} "
                   f"{{{', '.join(dr)}}}, {{{', '.join(ar)}}}, {{{', '.join(br)}}}, {{{', '.join(cr)}}}")

    def _mad(self, call: FuncCall) -> None:
        """``dst[i] = src0[i] + src1[i] * src2 at byte i * stride`` for the ``simd`` elements (``fma`` on sm_90):
        each destination element, in the lane that holds it, gathers its three operands from the lanes
        that hold them (a broadcast src2 is one lane's word shuffled to all) and rounds once, as the
        interpreter's exact product and sum rounded to the destination type."""
        f: Mad = call.func
        dst, doff, s0, off0, s1, off1, s2, off2 = call.ops
        for b, o in ((dst, doff), (s0, off0), (s1, off1), (s2, off2)):
            if b.name not in self.grf or not isinstance(o, IntImm):
                raise CodegenUnsupported("fma operands must be register buffers at constant offsets")
        t = f.dst_type.base
        if t.size == 8 or f.src1_type.size == 8 or f.src2_type.size == 8:
            raise CodegenUnsupported(f"{f}: 64-bit fma has no PTX lowering in kdd yet")
        if self._mad_in_place(f, dst, doff.value, s0, off0.value, (s1, off1.value, f.src1_type),
                              (s2, off2.value, f.src2_type)):
            return
        lanes = np.arange(f.simd)
        dfirst = doff.value + lanes * t.size
        sources = ((self.grf[s0.name], off0.value + lanes * t.size, t),
                   (self.grf[s1.name], off1.value + lanes * f.src1_type.size, f.src1_type),
                   (self.grf[s2.name], off2.value + lanes * f.src2_stride, f.src2_type))     # stride in bytes
        # f16/bf16 and 8-bit sources widen exactly to the f32/s32 accumulator, so one fma rounds as the IR does
        acc = f32 if t.is_float else s32
        fused = (f"fma.rn.{ptx_type(acc)} {{}}, {{}}, {{}}, {{}}" if acc.is_float
                 else f"mad.lo.{ptx_type(acc)} {{}}, {{}}, {{}}, {{}}")
        dbuf = self.grf[dst.name]
        self.writes(dst.name, int(dfirst.min()), int(dfirst.max()) + t.size)
        for slot in slots(dfirst):
            a, b, c = (self.convert(self.grf_load(buf, [int(first[i]) if i >= 0 else -1 for i in slot.index],
                                                  slot.mask, st), acc) for buf, first, st in sources)
            v = Value(self.em.calc(reg_class(acc), fused.format("{}", self.reg(b), self.reg(c), self.reg(a))), acc)
            v = self.convert(v, t, saturate=False, nearest=True)
            self.write_word(dbuf, slot.row, slot.byte, t.size, self.value_bits(v), self.lane_pred(slot.mask))

    def _mad_in_place(self, f: Mad, dst, doff: int, s0, off0: int, src1: tuple, src2: tuple) -> bool:
        """The usual GEMM form in few instructions: an f32 accumulator row updated in place (element ``i``
        in lane ``i``), a source that is a row of f32 or of f16/bf16 pairs (fetched from lane ``i / 2``),
        the other one that too or one element broadcast from its lane. False where it is not that form."""
        if (f.simd != LANES or f.dst_type.base != f32 or dst.name != s0.name or doff != off0 or doff % ROW
                or f.src2_stride not in (0, f.src2_type.size)):
            return False
        sources = ((*src1, False), (*src2, f.src2_stride == 0))
        for buf, off, st, broadcast in sources:
            if st.base not in (f32, f16, bf16) or (not broadcast and not self._row_form(off, st.size)) \
                    or off // ROW >= self.grf[buf.name].rows:
                return False
        self.reads(dst.name, doff, doff + ROW)
        self.writes(dst.name, doff, doff + ROW)
        operands = []
        for buf, off, st, broadcast in sources:
            self.reads(buf.name, off, off + (st.size if broadcast else LANES * st.size))
            grf = self.grf[buf.name]
            operands.append(self._broadcast_f32(grf, off, st) if broadcast else self._row_f32(grf, off, st))
        acc = self.grf[dst.name].row(doff // ROW)
        self.em.op(f"fma.rn.f32 {acc}, {operands[0]}, {operands[1]}, {acc}")
        return True

    @staticmethod
    def _row_form(off: int, size: int) -> bool:
        """Whether ``LANES`` elements of ``size`` bytes from byte ``off`` lie in one row, in lane order."""
        return size == 4 and off % ROW == 0 or size == 2 and off % 4 == 0 and off % ROW + LANES * 2 <= ROW

    def _to_f32(self, word: str, shift, t) -> str:
        """The f32 of the 16-bit half of ``word`` at bit ``shift`` (an immediate or a per-lane register),
        or ``word`` itself for an f32."""
        em = self.em
        if t.size == 4:
            return word
        if t.base == bf16:          # bf16 is the top half of an f32
            if shift == 16:
                return em.calc("r", f"and.b32 {{}}, {word}, -65536")
            low = em.calc("r", f"shr.b32 {{}}, {word}, {shift}") if shift else word
            return em.calc("r", f"shl.b32 {{}}, {low}, 16")
        low = em.calc("r", f"shr.b32 {{}}, {word}, {shift}") if shift else word
        half = em.calc("h", f"cvt.u16.u32 {{}}, {low}")
        return em.calc("f", f"cvt.f32.f16 {{}}, {half}")

    def _row_f32(self, grf: GrfBuf, off: int, t) -> str:
        """Per lane ``i``, element ``i`` of the row at byte ``off`` as an f32 (f16/bf16 pairs: lane ``i``
        fetches the word of lane ``i / 2`` and takes its half ``i % 2``)."""
        row, first = off // ROW, off % ROW // 4
        if t.size == 4:
            return grf.row(row)
        index = self.lane_value([first + ln // 2 for ln in range(LANES)], (1 << LANES) - 1)
        word = self.em.calc("r", f"shfl.sync.idx.b32 {{}}, {grf.row(row)}, {index.text}, 31, -1")
        shift = self.lane_value([16 * (ln % 2) for ln in range(LANES)], (1 << LANES) - 1)
        return self._to_f32(word, shift.text, t)

    def _broadcast_f32(self, grf: GrfBuf, off: int, t) -> str:
        """The element at byte ``off`` in every lane, as an f32."""
        word = self.em.calc("r", f"shfl.sync.idx.b32 {{}}, {grf.row(off // ROW)}, {off % ROW // 4}, 31, -1")
        return self._to_f32(word, 8 * (off % 4), t)

    def _reorder(self, call: FuncCall) -> None:
        f: Reorder = call.func
        src, soff, dst, doff = self._register_operands(call, "reorder")
        sl, dl = f.src_layout, f.dst_layout
        grid, inside, dfirst = _destination(dl, doff.value)
        ss, ds = sl.dtype.size, dl.dtype.size
        sfirst = np.full(len(grid), -1, dtype=np.int64)
        if inside.any():
            sfirst[inside] = soff.value + sl.offsets_of(grid[inside]) * ss
        sbuf, dbuf = self.grf[src.name], self.grf[dst.name]
        source = sfirst.tolist()    # read element by element per lane below: Python ints, not numpy scalars
        planned = self._word_slots(dfirst, ds, source, ss, sl.dtype == dl.dtype)
        direct = self._direct(src.name, planned, source, ss) if sl.dtype == dl.dtype else None
        if direct is not None and src.name != dst.name:
            inside_src = sfirst[sfirst >= 0]
            self.reads(src.name, int(inside_src.min()), int(inside_src.max()) + ss, reorder=True)
            self.writes(dst.name, int(dfirst.min()), int(dfirst.max()) + ds)
            loaded = self._ldmatrix(dbuf, direct, ss)
            for row, byte, n, mask, d, deltas in direct:     # each lane loads its piece from memory
                d.consumed = True
                if row in loaded:
                    continue
                delta, k = self.lane_offset(deltas, mask)
                space, where = self.address(d.mem, self._add_off(d.base, delta), k)
                if n == 4:
                    self.em.op(f"ld.{space}.b32 {dbuf.row(row)}, [{where}]", self.lane_pred(mask))
                else:
                    v = self.em.new("r")
                    p = self.lane_pred(mask)
                    self.em.op(f"ld.{space}.u{8 * n} {v}, [{where}]", p)
                    self.write_word(dbuf, row, byte, n, v, p)
            return
        inside_src = sfirst[sfirst >= 0]
        if inside_src.size:
            self.reads(src.name, int(inside_src.min()), int(inside_src.max()) + ss)
        self.writes(dst.name, int(dfirst.min()), int(dfirst.max()) + ds)
        writes = []
        for slot in planned:
            if isinstance(slot, tuple):          # a whole word copied from one source word
                row, src_word_bytes, mask = slot
                writes.append((row, 0, 4, self.gather_word(sbuf, src_word_bytes, mask), self.lane_pred(mask)))
                continue
            srcb = [source[i] if i >= 0 else -1 for i in slot.index]
            has = sum(1 << ln for ln, b in enumerate(srcb) if b >= 0)
            if has:
                v = self.convert(self.grf_load(sbuf, srcb, has, sl.dtype), dl.dtype, saturate=dl.dtype.is_int,
                                 nearest=True)
                if has != slot.mask:
                    v = self.select(self.lane_pred(has), v, Value(imm_text(0, dl.dtype), dl.dtype, 0))
            else:
                v = Value(imm_text(0, dl.dtype), dl.dtype, 0)
            bits = "0" if v.imm == 0 else self.value_bits(v)
            writes.append((slot.row, slot.byte, ds, bits, self.lane_pred(slot.mask)))
            if src.name != dst.name:
                self.write_word(dbuf, *writes.pop())
        for w in writes:           # in place: every source word was read before the first write
            self.write_word(dbuf, *w)

    def _ldmatrix(self, dbuf: GrfBuf, direct, size: int) -> set[int]:
        """Destination rows of a direct reorder load that are whole 8x8 matrices of 16-bit pairs in shared
        memory (:mod:`.matrix`): loaded by ``ldmatrix`` (up to four rows per instruction); their rows."""
        by_row: dict[int, list] = {}
        for piece in direct:
            by_row.setdefault(piece[0], []).append(piece)
        groups: dict[tuple, list] = {}
        for row, pieces in sorted(by_row.items()):
            d = pieces[0][4]
            base = (d.mem, d.base.text)         # pieces of several loads from one base share an ldmatrix
            if (d.mem not in self.slm or d.base_multiple < 16
                    or any((p[4].mem, p[4].base.text) != base or p[3] != FULL for p in pieces)):
                continue
            halves = {}
            for _, byte, n, _, _, deltas in pieces:
                if n == 4:
                    halves[0], halves[2] = list(deltas), [x + 2 for x in deltas]
                elif n == 2 and size == 2:
                    halves[byte] = list(deltas)
            if set(halves) != {0, 2}:
                continue
            found = matrix_rows(halves[0], halves[2])
            if found is not None:
                groups.setdefault((base, found[0]), []).append((row, d, found[1]))
        done: set[int] = set()
        for (_, trans), rows in groups.items():
            i = 0
            while i < len(rows):
                n = next(c for c in (4, 2, 1) if i + c <= len(rows))     # ldmatrix has .x1, .x2, .x4
                chunk, i = rows[i:i + n], i + n
                d = chunk[0][1]
                for _, _, r in chunk:
                    steps = {b - a for a, b in zip(r, r[1:])}
                    self.pitches.setdefault(d.mem, set()).add(steps.pop() if len(steps) == 1 else -1)
                lanes = lane_addresses([r for _, _, r in chunk])
                used = (1 << (8 * len(chunk))) - 1
                delta, k = self.lane_offset([lanes[ln] if used >> ln & 1 else 0 for ln in range(LANES)], used)
                space, where = self.address(d.mem, self._add_off(d.base, delta), k)
                regs = ", ".join(dbuf.row(r) for r, _, _ in chunk)
                self.em.op(f"ldmatrix.sync.aligned.m8n8.x{len(chunk)}{'.trans' if trans else ''}.shared.b16 "
                           f"{{{regs}}}, [{where}]")
                done.update(r for r, _, _ in chunk)
        return done

    def _register_operands(self, call: FuncCall, what: str) -> tuple:
        """``(src, src_offset, dst, dst_offset)`` of a register-to-register call: both register buffers at
        constant offsets, as the lane rule places them."""
        src, soff, dst, doff = call.ops
        for b, o in ((src, soff), (dst, doff)):
            if b.name not in self.grf or not isinstance(o, IntImm):
                raise CodegenUnsupported(f"{what} operands must be register buffers at constant offsets")
        return src, soff, dst, doff

    def _reduce(self, call: FuncCall) -> None:
        """``dst = sum of src over f.dims`` in the destination's type: each destination element, in each
        lane, adds the source elements it sums, gathered from whichever lanes hold them, in the order of
        the reduced index (as the interpreter sums)."""
        f: Reduce = call.func
        src, soff, dst, doff = self._register_operands(call, "reduce")
        sl, dl = f.src_layout, f.dst_layout
        if src.name == dst.name:
            raise CodegenUnsupported("a reduce in place")
        grid, inside, dfirst = _destination(dl, doff.value)
        ss, ds = sl.dtype.size, dl.dtype.size
        sources = []
        for combo in np.ndindex(*(sl.dims[d] for d in f.dims)):
            at = grid.copy()
            for d, c in zip(f.dims, combo):
                at[:, d] = c
            first = np.full(len(grid), -1, dtype=np.int64)
            if inside.any():
                first[inside] = soff.value + sl.offsets_of(at[inside]) * ss
            sources.append(first.tolist())
        every = np.asarray(sources)
        self.reads(src.name, int(every[every >= 0].min()), int(every.max()) + ss)
        self.writes(dst.name, int(dfirst.min()), int(dfirst.max()) + ds)
        sbuf, dbuf = self.grf[src.name], self.grf[dst.name]
        zero = Value(imm_text(0, dl.dtype), dl.dtype, 0)
        add = f"add{'.rn' if dl.dtype.is_float else ''}.{ptx_type(dl.dtype)} {{}}, {{}}, {{}}"
        for slot in slots(dfirst):
            total = None
            for source in sources:
                srcb = [source[i] if i >= 0 else -1 for i in slot.index]
                has = sum(1 << ln for ln, b in enumerate(srcb) if b >= 0)
                if not has:
                    continue
                v = self.convert(self.grf_load(sbuf, srcb, has, sl.dtype), dl.dtype)
                if has != slot.mask:
                    v = self.select(self.lane_pred(has), v, zero)
                total = v if total is None else Value(
                    self.em.calc(reg_class(dl.dtype), add.format("{}", self.reg(total), self.reg(v))), dl.dtype)
            total = total if total is not None else zero
            bits = "0" if total.imm == 0 else self.value_bits(total)
            self.write_word(dbuf, slot.row, slot.byte, ds, bits, self.lane_pred(slot.mask))

    def _word_slots(self, dfirst, ds: int, sfirst, ss: int, same_type: bool):
        """The reorder's destination slots, with whole-word copies (``(row, source bytes, lanes)``)
        where every lane's destination word is one source word with the same byte order."""
        out = []
        by_row: dict[int, list[Slot]] = {}
        for slot in slots(dfirst):
            by_row.setdefault(slot.row, []).append(slot)
        for row, group in sorted(by_row.items()):
            if same_type and ds * len(group) == 4 and len({s.mask for s in group}) == 1:
                word = []
                for ln in range(LANES):
                    parts = [(s.byte, sfirst[s.index[ln]]) for s in group if s.index[ln] >= 0]
                    bases = {sb - db for db, sb in parts}
                    word.append(bases.pop() if len(bases) == 1 and parts and min(sb for _, sb in parts) >= 0
                                and all(sb >= 0 for _, sb in parts) else None)
                mask = group[0].mask
                if all(word[ln] is not None and word[ln] % 4 == 0 for ln in range(LANES) if mask >> ln & 1):
                    out.append((row, [w if w is not None else -1 for w in word], mask))
                    continue
            out.extend(group)
        return out

    def _eltwise(self, call: FuncCall) -> None:
        f: Eltwise = call.func
        buf_arg, off = call.ops
        if buf_arg.name not in self.grf or not isinstance(off, IntImm) or f.dtype.size != 4:
            raise CodegenUnsupported(f"eltwise.{f.alg}: an f32 register buffer at a constant offset")
        buf = self.grf[buf_arg.name]
        self.reads(buf.name, off.value, off.value + 4 * f.elems)
        em = self.em
        for slot in slots(off.value + np.arange(f.elems) * 4):
            x = em.new("f")
            em.op(f"mov.b32 {x}, {buf.row(slot.row)}")
            y = eltwise_f32(em, f.alg, x, f.alpha, f.beta)
            em.op(f"mov.b32 {buf.row(slot.row)}, {y}", self.lane_pred(slot.mask))


def _destination(layout, offset: int):
    """Every logical index of a register-to-register call's destination ``layout`` (padding included), whether
    it is inside the logical dims, and its first byte in the destination buffer (``offset`` the call's)."""
    grid = np.indices(layout.padded_dims).reshape(layout.ndims, -1).T
    inside = (grid < np.asarray(layout.dims)).all(axis=1)
    return grid, inside, offset + layout.offsets_of(grid) * layout.dtype.size
