"""Sends to PTX: per-lane global and shared loads and stores, atomic ``red`` and ``atom``, and the deferred loads
(a shared-memory load becomes loads of the words a reorder needs; a global load whose only reader is a
shared-memory store becomes ``cp.async``)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kdd.core.ir.expr import Binary, BoolImm, IntImm, Load, Op
from kdd.core.ir.funcs import Eltwise, Mma, Reorder, Send
from kdd.core.ir.stmt import FuncCall
from kdd.core.ir.types import s32, s64
from kdd.core.ir.visitor import walk

from ..errors import CodegenUnsupported
from .emitter import ptx_type, reg_class
from .lanes import LANES, ROW, Slot, slots
from .swizzle import split, swizzle
from .values import BITS, Ctx, GrfBuf, Value

NEVER = "0"        # the predicate of a load that is always masked off (no PTX predicate operand)


class Redo(Exception):
    """A deferred load of ``buf`` was dropped but ``buf`` is read again: lower without deferring it."""

    def __init__(self, buf: str):
        super().__init__(buf)
        self.buf = buf


@dataclass
class Deferred:
    """A shared-memory block load into register bytes ``[lo, hi)`` not emitted yet: a reorder that
    reads them loads its destination words straight from ``mem`` at ``base + const + (byte - lo)``."""

    mem: str
    base: Value
    base_multiple: int
    const: int
    lo: int
    hi: int
    call: object
    off: Value
    consumed: bool = False
    mask: str | None = None     # a global load's predicate (masked-off words read as zero), NEVER: all off


def _split_const(off) -> tuple[object, int]:
    """``(base, constant)`` of an offset ``base + constant`` (constant 0 when it has no constant term)."""
    if isinstance(off, Binary) and off.op is Op.ADD and isinstance(off.b, IntImm):
        return off.a, off.b.value
    return off, 0


def readers_of(body) -> dict[str, set]:
    """Per register buffer, the kinds of statements reading it (reorder, send, mma, eltwise, load)."""
    readers: dict[str, set] = {}
    for node in walk(body):
        if isinstance(node, Load):
            readers.setdefault(node.buf.name, set()).add("load")
        elif isinstance(node, FuncCall):
            f, ops = node.func, node.ops
            if isinstance(f, Reorder):
                readers.setdefault(ops.src.name, set()).add("reorder")
            elif isinstance(f, Send) and f.op.value != "load":
                readers.setdefault(ops.reg.name, set()).add("send")
            elif isinstance(f, Mma):
                for b in (ops.a, ops.b, ops.c):
                    readers.setdefault(b.name, set()).add("mma")
            elif isinstance(f, Eltwise):
                readers.setdefault(ops.buf.name, set()).add("eltwise")
    return readers


class MemoryLowering:
    """The memory side of :class:`~.lower.PtxLowering`."""

    # -- memory -------------------------------------------------------------------------------
    def _add_off(self, a: Value, b: Value) -> Value:
        """``a + b`` as s32 (s64 where either is 64-bit); nothing emitted where one is 0, once per block
        (:meth:`.Emitter.calc`) otherwise."""
        t = s64 if (a.type.size == 8 or b.type.size == 8) else s32
        a, b = self.convert(a, t), self.convert(b, t)
        if a.imm is not None and b.imm is not None:
            return Value(str(a.imm + b.imm), t, a.imm + b.imm)
        if a.imm is not None:
            a, b = b, a
        if b.imm == 0:
            return a
        r = self.em.calc(reg_class(t), f"add.{ptx_type(t)} {{}}, {a.text}, {b.text}")
        return Value(r, t)

    def address(self, name: str, off: Value, extra: int = 0) -> tuple[str, str]:
        """(state space, address operand) of byte ``off + extra`` of memory buffer ``name`` (the same
        64-bit address register for the same ``off`` in a block; ``extra`` is the operand's immediate)."""
        if name in self.globals:
            if off.imm is not None:
                r, extra = self.globals[name], extra + off.imm
            elif off.type.size == 8:
                r = self.em.calc("rd", f"add.s64 {{}}, {self.globals[name]}, {off.text}")
            else:
                signed = "s" if off.type.is_signed else "u"
                r = self.em.calc("rd", f"mad.wide.{signed}32 {{}}, {off.text}, 1, {self.globals[name]}")
            return "global", f"{r}+{extra}" if extra else r
        if name in self.slm:
            return "shared", self.shared_operand(name, self.convert(off, s32), extra)
        raise CodegenUnsupported(f"{name} is not a global or shared buffer")

    def shared_operand(self, name: str, off: Value, k: int) -> str:
        """The ``[reg+imm]`` operand of byte ``off + k`` of shared buffer ``name`` (``off`` an s32
        value), through the buffer's swizzle where it has one (:mod:`.swizzle`)."""
        s = self.swizzle.get(name)
        base = self.slm[name]
        if s is not None and off.imm is not None:
            return f"{self.smem}+{base + swizzle(off.imm + k, s)}"
        em = self.em
        if s is None:
            return f"{em.calc('r', f'add.s32 {{}}, {self.reg(off)}, {self.smem}')}+{base + k}"
        low, high = split(k, s)
        y = self.reg(self._add_off(off, Value(str(low), s32, low)))
        r = em.calc("r", f"shr.u32 {{}}, {y}, {s}")
        r = em.calc("r", f"and.b32 {{}}, {r}, 7")
        r = em.calc("r", f"shl.b32 {{}}, {r}, 4")
        r = em.calc("r", f"xor.b32 {{}}, {r}, {y}")
        r = em.calc("r", f"add.s32 {{}}, {r}, {self.smem}")
        return f"{r}+{base + high}"

    # -- deferred shared-memory loads ---------------------------------------------------------
    def flush(self, keep=None, stash=None, commit: bool = True) -> None:
        """Before shared memory may change (a store, a barrier) or control flow: emit the deferred
        loads no reorder has read; forget the ones a reorder read (their buffer is read by
        reorders only, so a later read of those bytes means lowering again without deferring).
        The copies issued so far are committed as one group.

        A branch's global loads that only a shared-memory store reads are *stashed* at the end of its
        then-part (``stash``: its condition) instead, and taken up by a following branch on the same
        condition (``keep``) whose store copies them with ``cp.async`` (the buffering pass guards a
        stage's loads and its store by two such branches); anywhere else they are loaded under that
        condition (:meth:`unstash`). ``commit=False`` (a branch's end) leaves the group open: the
        branch commits after both paths join, so every path commits the same number of groups."""
        if commit:
            self.commit()
        else:
            self.flush_copies()
        if self.stashed is not None and (keep is None or str(keep) != str(self.stashed[0])):
            self.unstash()
        kept: dict[str, list[Deferred]] = {}
        for name, entries in list(self.deferred.items()):
            for d in entries:
                if d.consumed:
                    self.dropped.setdefault(name, []).append((d.lo, d.hi))
                elif stash is not None and d.mem in self.globals and name in self.stage:
                    kept.setdefault(name, []).append(d)
                else:
                    self._emit_send(d.call, d.off, True, d.mask)
        self.deferred.clear()
        if kept:
            self.stashed = (stash, kept)

    def unstash(self) -> None:
        """Load the stashed global loads into their registers, under the condition of their branch."""
        if self.stashed is None:
            return
        cond, kept = self.stashed
        self.stashed = None
        p = self.pred(self.ev(cond))
        skip = self.em.label("stash")
        self.em.op(f"bra.uni {skip}", f"!{p}")
        for entries in kept.values():
            for d in entries:
                self._emit_send(d.call, d.off, True, d.mask)
        self.em.place(skip)

    def take_stash(self, cond) -> None:
        """A branch on the stash's condition begins: its deferred loads are pending again."""
        if self.stashed is not None and str(self.stashed[0]) == str(cond):
            for name, entries in self.stashed[1].items():
                self.deferred.setdefault(name, []).extend(entries)
            self.stashed = None

    def flush_shared(self) -> None:
        """Before a shared-memory store: the deferred shared-memory loads must read what was there."""
        for name, entries in list(self.deferred.items()):
            keep = []
            for d in entries:
                if d.mem in self.globals:
                    keep.append(d)
                elif d.consumed:
                    self.dropped.setdefault(name, []).append((d.lo, d.hi))
                else:
                    self._emit_send(d.call, d.off, True, d.mask)
            self.deferred[name] = keep

    def commit(self) -> None:
        """The copies issued since the last commit become one ``cp.async`` group (:mod:`.asyncs`)."""
        self.flush_copies()
        if self.async_pending:
            self.em.op("cp.async.commit_group")
            self.events.add("commit")
            self.async_pending = False

    def slm_access(self, name: str, base, const: int, n: int) -> None:
        """A read (or plain store) of ``n`` bytes of shared buffer ``name`` at ``base + const``: recorded
        for the wait plan; where the plan (or, in the first run, any copy) says this thread's own
        copies may be in flight there, wait for all of them first. ``base`` None: anywhere."""
        b = None if base is None else self.bounds(base)
        lo, hi = (b[0] + const, b[1] + const + n) if b is not None else (-(1 << 40), 1 << 40)
        k = self.events.read(self.slm[name] + lo, self.slm[name] + hi)
        if self.any_async and (self.plan is None or k in self.plan.local):
            self.commit()
            self.em.op("cp.async.wait_all")

    def slm_write(self, name: str, base, const: int, n: int) -> None:
        """A copy into ``n`` bytes of shared buffer ``name`` at ``base + const`` joins the open group."""
        b = self.bounds(base)
        lo, hi = (b[0] + const, b[1] + const + n) if b is not None else (-(1 << 40), 1 << 40)
        self.events.add("write", self.slm[name] + lo, self.slm[name] + hi)
        self.any_async = True

    def _stage(self, call: FuncCall) -> bool:
        """A shared-memory store of bytes that deferred global loads hold: ``cp.async`` each lane's
        words from global to shared memory; False (nothing emitted) when a word is not covered."""
        f: Send = call.func
        mem, mem_off, reg, reg_off, mask = call.ops
        entries = [d for d in self.deferred.get(reg.name, ()) if d.mem in self.globals]
        if not (entries and f.op.value == "store" and f.kind.value == "block" and isinstance(mask, BoolImm)
                and mask.value and reg_off.value % 4 == 0 and (f.elems * f.type.size) % 4 == 0
                and self.multiple(mem_off) >= 4):
            return False
        lo = reg_off.value
        if self._stage16(call, entries):
            return True
        plan = []
        for slot in slots(lo + np.arange(f.elems * f.type.size // 4) * 4):
            hits, deltas = [], [0] * LANES
            for ln in range(LANES):
                if slot.mask >> ln & 1:
                    b = slot.row * ROW + 4 * ln
                    d = next((d for d in reversed(entries) if d.lo <= b and b + 4 <= d.hi), None)
                    if d is None:
                        return False
                    hits.append(d)
                    deltas[ln] = b - d.lo
            if len({id(d) for d in hits}) != 1:
                return False
            plan.append((slot, hits[0], deltas))
        off = self.convert(self.ev(mem_off), s32)
        self.slm_write(mem.name, mem_off, 0, f.elems * f.type.size)
        for slot, d, deltas in plan:
            d.consumed = True
            g, gk = self.lane_offset(deltas, slot.mask)
            _, gwhere = self.address(d.mem, self._add_off(d.off, g), gk)
            sd, sk = self.lane_offset([slot.row * ROW + 4 * ln - lo for ln in range(LANES)], slot.mask)
            where = self.shared_operand(mem.name, self._add_off(off, sd), sk)
            size = self._src_size(4, d.mask)
            self.em.op(f"cp.async.ca.shared.global [{where}], [{gwhere}], 4, {size}",
                       self.lane_pred(slot.mask))
        self.async_pending = True
        return True

    def _stage16(self, call: FuncCall, entries: list[Deferred]) -> bool:
        """Queue the store's bytes as 16-byte chunks for ``cp.async.cg`` (:meth:`flush_copies`); False
        (nothing queued) when a chunk is not 16-byte aligned on both sides or spans two deferred loads."""
        f: Send = call.func
        mem, mem_off, reg, reg_off, _ = call.args
        lo, n = reg_off.value, f.elems * f.type.size
        base, const = _split_const(mem_off)
        if n % 16 or self.multiple(base) < 16 or const % 16 or self.slm[mem.name] % 16:
            return False
        chunks = []
        for b in range(lo, lo + n, 16):
            d = next((d for d in reversed(entries) if d.lo <= b and b + 16 <= d.hi), None)
            if d is None or d.base_multiple < 16 or (d.const + b - d.lo) % 16:
                return False
            chunks.append((d, d.const + b - d.lo, const + b - lo))
        sbase = self.convert(self.ev(base), s32)
        self.slm_write(mem.name, base, const, n)
        for d, gconst, sconst in chunks:
            d.consumed = True
            self.copies.append(((d.mem, d.base.text, d.mask, sbase.text, mem.name), d, gconst, sbase, sconst))
        return True

    def _mask_pred(self, mask) -> str | None:
        """The predicate of a send's scalar mask: None where it is constant true, :data:`NEVER` where it
        is constant false (the send moves nothing; a load's registers are zeroed)."""
        v = self.ev(mask)
        if v.imm is not None:
            return None if v.imm else NEVER
        return v.text

    def _src_size(self, n: int, mask: str | None) -> str:
        """The source size of a ``cp.async`` of ``n`` bytes under predicate ``mask``: masked-off bytes
        are zero-filled (source size 0)."""
        if mask is None:
            return str(n)
        if mask == NEVER:
            return "0"
        return self.em.calc("r", f"selp.u32 {{}}, {n}, 0, {mask}")

    def flush_copies(self) -> None:
        """The queued 16-byte copies as ``cp.async.cg``: lane ``l`` of a round takes the round's ``l``-th
        chunk (registers play no part, so chunks go to lanes in the order they were queued); a round
        ends at 32 chunks or where the global base, mask or shared base changes."""
        em = self.em
        queued, self.copies = self.copies, []
        i = 0
        while i < len(queued):
            key = queued[i][0]
            j = i
            while j < len(queued) and j - i < LANES and queued[j][0] == key:
                j += 1
            r, i = queued[i:j], j
            _, d, _, sbase, _ = r[0]
            active = (1 << len(r)) - 1
            pad = [0] * (LANES - len(r))
            g, gk = self.lane_offset([c[2] for c in r] + pad, active)
            _, gwhere = self.address(d.mem, self._add_off(d.base, g), gk)
            sd, sk = self.lane_offset([c[4] for c in r] + pad, active)
            if sd.imm is None:
                soff = self._add_off(sbase, sd)
            else:
                soff, sk = sbase, sk + sd.imm
            where = self.shared_operand(key[4], soff, sk)
            size = self._src_size(16, d.mask)
            em.op(f"cp.async.cg.shared.global [{where}], [{gwhere}], 16, {size}", self.lane_pred(active))
            self.async_pending = True

    def reads(self, name: str, lo: int, hi: int, reorder: bool = False) -> None:
        """Bytes ``[lo, hi)`` of ``name`` are read other than by a direct reorder load: their deferred
        loads are emitted now (nothing changed shared memory since)."""
        if self.stashed is not None and name in self.stashed[1]:
            self.unstash()
        if any(a < hi and lo < b for a, b in self.dropped.get(name, ())):
            raise Redo(name)
        keep = []
        for d in self.deferred.get(name, ()):
            if d.lo < hi and lo < d.hi and not reorder:
                self._emit_send(d.call, d.off, True, d.mask)
            else:
                keep.append(d)
        if name in self.deferred:
            self.deferred[name] = keep

    def writes(self, name: str, lo: int, hi: int) -> None:
        """Bytes ``[lo, hi)`` of ``name`` get new contents: deferred loads and dropped ranges there end."""
        if self.stashed is not None and name in self.stashed[1]:
            self.unstash()
        keep = []
        for d in self.deferred.get(name, ()):
            if not (d.lo < hi and lo < d.hi):
                keep.append(d)
            elif d.lo < lo or d.hi > hi:        # partly overwritten: its other bytes are loaded now
                self._emit_send(d.call, d.off, True, d.mask)
        if name in self.deferred:
            self.deferred[name] = keep
        if name in self.dropped:
            self.dropped[name] = [(a, b) for a, b in self.dropped[name] if not (a < hi and lo < b)]

    def _defer(self, call: FuncCall) -> bool:
        """Whether the load was deferred (a load of shared memory or of an input a reorder will read,
        or a global load a shared-memory store will copy with cp.async)."""
        f: Send = call.func
        mem, mem_off, reg, reg_off, mask = call.ops
        lo = reg_off.value
        hi = lo + f.elems * f.type.size
        if (f.space == "global" and f.kind.value == "block" and reg.name in self.stage and mem.name in self.inputs
                and mask.type.lanes == 1 and f.type.size <= 4 and lo % 4 == 0 and (hi - lo) % 4 == 0
                and self.multiple(mem_off) >= 4):
            self.writes(reg.name, lo, hi)
            m = self._mask_pred(mask)
            base, const = _split_const(mem_off)
            self.deferred.setdefault(reg.name, []).append(
                Deferred(mem.name, self.ev(base), self.multiple(base), const, lo, hi, call, self.ev(mem_off), mask=m))
            return True
        if not (f.kind.value == "block" and reg.name in self.defer and isinstance(mask, BoolImm) and mask.value
                and (mem.name in self.slm or mem.name in self.inputs)):
            return False
        base, const = _split_const(mem_off)
        if mem.name in self.slm:
            self.slm_access(mem.name, base, const, hi - lo)
        self.writes(reg.name, lo, hi)
        self.deferred.setdefault(reg.name, []).append(
            Deferred(mem.name, self.ev(base), self.multiple(base), const, lo, hi, call, self.ev(mem_off)))
        return True

    def _direct(self, src: str, planned, sfirst, size: int) -> list | None:
        """For a reorder's destination pieces (whole words ``(row, source word byte per lane,
        lanes)`` or element slots) read from register buffer ``src``: ``(row, byte, size, lanes,
        deferred load, per-lane shared-memory delta)`` where every lane's piece comes from one
        deferred, aligned load base; None when any piece does not."""
        entries = self.deferred.get(src)
        if not entries:
            return None
        out = []
        for piece in planned:
            if isinstance(piece, tuple):
                row, src_bytes, mask = piece
                byte, n = 0, 4
            else:
                row, byte, n, mask = piece.row, piece.byte, size, piece.mask
                src_bytes = [sfirst[i] if i >= 0 else -1 for i in piece.index]
            found = None
            deltas = [0] * LANES
            for ln in range(LANES):
                if not mask >> ln & 1:
                    continue
                b = src_bytes[ln]
                hit = None if b < 0 else next((d for d in reversed(entries) if d.lo <= b and b + n <= d.hi), None)
                if hit is None or (found is not None and (hit.base.text, hit.mem) != (found.base.text, found.mem)):
                    return None
                found = hit
                deltas[ln] = hit.const + b - hit.lo
            if found is None or found.base_multiple < n or any(d % n for d in deltas):
                return None
            out.append((row, byte, n, mask, found, deltas))
        return out

    def _send(self, call: FuncCall) -> None:
        f: Send = call.func
        mem, mem_off, reg, reg_off, mask = call.ops
        if reg.name not in self.grf or not isinstance(reg_off, IntImm):
            raise CodegenUnsupported(f"{f}: the register side must be a register buffer at a constant offset")
        if f.op.value == "prefetch":
            return
        lo, hi = reg_off.value, reg_off.value + f.elems * f.type.size
        if f.op.value == "load":
            if self._defer(call):
                return
            self.writes(reg.name, lo, hi)
        else:
            if f.space == "slm":
                self.flush_shared()
                if self._stage(call):
                    return
            self.reads(reg.name, lo, hi)
        if f.space == "slm":        # ordered after the cp.async copies that write there
            base, const = _split_const(mem_off)
            scalar = f.kind.value == "block" and base.type.lanes == 1
            self.slm_access(mem.name, base if scalar else None, const, f.elems * f.type.size)
        self._emit_send(call)

    def _emit_send(self, call: FuncCall, off: Value | None = None, deferred: bool = False,
                   mask_pred: str | None = None) -> None:
        """The send's per-lane loads and stores (``deferred``: ``off`` and ``mask_pred`` are its
        memory offset and scalar mask, evaluated when the send was reached)."""
        f: Send = call.func
        mem, mem_off, reg, reg_off, mask = call.ops
        buf = self.grf[reg.name]
        op = f.op.value
        size = f.type.size
        base = reg_off.value
        first = base + np.arange(f.elems) * size
        scalar_mask = mask.type.lanes == 1
        pm = None
        if scalar_mask:
            pm = mask_pred if deferred else self._mask_pred(mask)
        if pm == NEVER:
            if op == "load":
                self._zero(buf, first, size)
            return
        scattered = f.kind.value == "scattered"
        if off is None and not scattered:
            off = self.ev(mem_off)
        if scattered and f.vec > 1:
            self._send_vector(f, buf, base, mem.name, mem_off, pm, None if scalar_mask else mask)
            return
        words = (not scattered and op != "atomic_add" and scalar_mask and size <= 4 and base % 4 == 0
                 and (f.elems * size) % 4 == 0 and min(self.multiple(mem_off), self.align.get(mem.name, 1)) >= 4)
        if words:
            for slot in slots(base + np.arange(f.elems * size // 4) * 4):
                self._send_slot(f, buf, mem.name, slot, off, 4, 4, pm, None)
            return
        for slot in slots(first):
            ctx = None
            if scattered or not scalar_mask:
                ctx = Ctx(slot, self.lane_value)
            moff, extra, mult = self.ev_split(mem_off, ctx) if scattered else (off, 0, 1)
            m = pm if scalar_mask else self.guard(self.ev(mask, ctx))
            self._send_slot(f, buf, mem.name, slot, moff, size, 0 if scattered else size, m, ctx, extra, mult)

    def _send_vector(self, f: Send, buf: GrfBuf, base: int, mem: str, mem_off, pm: str | None, lane_mask) -> None:
        """A scattered store of ``vec`` 32-bit words per lane (``st.vN.b32``): lane ``l``'s word
        ``v`` is its word of register row ``base / 128 + v`` (:class:`~kdd.core.ir.funcs.Send`'s order,
        one row per vector element), so the message is one instruction on ``vec`` consecutive rows. ``pm``:
        a scalar mask's predicate; ``lane_mask``: a vector mask (None for a scalar one)."""
        first = base // ROW
        if f.type.size != 4 or f.lanes != LANES or base % ROW or f.vec not in (2, 4) or f.op.value != "store":
            raise CodegenUnsupported(f"{f}: a PTX vector send here stores 2 or 4 words in each of the 32 lanes, "
                                     "from whole register rows")
        ctx = Ctx(slots(np.arange(LANES) * 4)[0], self.lane_value)
        off, extra, _ = self.ev_split(mem_off, ctx)
        space, addr = self.address(mem, off, extra)
        pred = pm if lane_mask is None else self.guard(self.ev(lane_mask, ctx))
        regs = ", ".join(buf.row(first + v) for v in range(f.vec))
        self.em.op(f"st.{space}.v{f.vec}.b32 [{addr}], {{{regs}}}", pred)

    def _send_slot(self, f: Send, buf: GrfBuf, mem: str, slot: Slot, off: Value, size: int, step: int,
                   mask: str | None, ctx, extra: int = 0, multiple: int = 1) -> None:
        """One slot of a send: every active lane moves ``size`` bytes between its word and memory at
        ``off + extra + step * index`` (``multiple`` divides ``off`` in every lane)."""
        em = self.em
        act = self.lane_pred(slot.mask)
        if step:
            delta, k = self.lane_offset([step * i for i in slot.index], slot.mask)
            off, extra = self._add_off(off, delta), extra + k
        space, addr = self.address(mem, off, extra)
        both = self.and_pred(act, mask)
        bits = "b32" if size == 4 else "u" + BITS[size]
        op = f.op.value
        if op == "load":
            if mask is not None:
                self.write_word(buf, slot.row, slot.byte, size, "0", act)
            if size == 4:
                em.op(f"ld.{space}.b32 {buf.row(slot.row)}, [{addr}]", both)
            else:
                v = em.new("r")
                em.op(f"ld.{space}.{bits} {v}, [{addr}]", both)
                self.write_word(buf, slot.row, slot.byte, size, v, both)
            return
        word = buf.row(slot.row)
        if slot.byte:           # st and red take the low bits of a wider register
            v = em.new("r")
            em.op(f"shr.u32 {v}, {word}, {slot.byte * 8}")
            word = v
        if op == "store" and size == 4 and space == "global":     # consecutive words may join (st.v2, st.v4)
            reg, _, imm = addr.partition("+")
            aligned = min(multiple if off.imm is None else 16, self.align.get(mem, 1))
            em.store_word(space, reg, int(imm or 0), aligned, word, both)
            return
        if op == "store":
            em.op(f"st.{space}.{bits} [{addr}], {word}", both)
            return
        t = f.type
        if op == "atomic_fetch_add":  # the old value comes back into the lane's word
            if size != 4 or not t.is_int:
                raise CodegenUnsupported(f"atomic fetch-add of {t} has no PTX atom form")
            v = em.new("r")
            em.op(f"atom.{space}.add.u32 {v}, [{addr}], {word}", both)
            self.write_word(buf, slot.row, slot.byte, size, v, both)
            return
        kinds = {"f32": ("f32", "f"), "s32": ("s32", "r"), "u32": ("u32", "r"), "f16": ("noftz.f16", "h"),
                 "bf16": ("noftz.bf16", "h"), "f64": ("f64", "fd"), "s64": ("u64", "rd"), "u64": ("u64", "rd")}
        if t.scalar.short not in kinds:
            raise CodegenUnsupported(f"atomic add of {t} has no PTX red form")
        ty, cls = kinds[t.scalar.short]
        v = em.new(cls)
        em.op(f"{'cvt.u16.u32' if cls == 'h' else 'mov.b32'} {v}, {word}")
        em.op(f"red.{space}.add.{ty} [{addr}], {v}", both)

    def _zero(self, buf: GrfBuf, first, size: int) -> None:
        for slot in slots(first):
            self.write_word(buf, slot.row, slot.byte, size, "0", self.lane_pred(slot.mask))
