"""Lowering final kernel IR to Xe assembly (IGA syntax) with kdd's own register allocation.

:class:`XeLowering` is the IR visitor of seed 000's "Lowering IR to nGEN": it
walks the program points of :mod:`.liveness` with the allocation decisions of
:mod:`.allocation` (lets and loop variables in sub-registers, buffers in
register ranges when they become live, freed after their last use), and emits instructions from the tables of
:mod:`.isa` (ALU), :mod:`.sends` (LSC messages), :mod:`.tensor` (dpas, mad,
reorders) and the control flow below (``for`` as compare + ``jmpi`` loops,
``if`` as predicated jumps). Expressions are evaluated recursively into
(sub)registers, into a given destination when there is one (a let's register,
a store's bytes).
"""
from __future__ import annotations

from kdd.core.ir.expr import BoolImm, IntImm
from kdd.core.ir.funcs import (Barrier, BarrierSignal, BarrierWait, Dp4a, Dpas, Eltwise, Fence, Mad, Reduce, Reorder,
                               Send, Send2D)
from kdd.core.ir.stmt import MemKind
from kdd.core.ir.types import Type, s32, u32

from ..errors import CodegenUnsupported, LiveBuffer, OutOfRegisters
from . import isa, sends, tensor
from .abi import GROUP_ID_DWORD
from .addresses import HeldAddresses
from .allocation import CATEGORY, HEADER_ROTATION, AllocationWalk, BodyFacts
from .emitter import Emitter
from .ranges import ValueRanges
from .operand import Imm, Reg, elem_size


class FlagPool:
    """The target's flag subregisters, handed out in turn.

    Every flag is consumed by the instruction right after the one that sets it
    (expression operands are evaluated before the flag of a select or a
    predicate is computed), so taking them round-robin never clobbers a flag
    that is still to be read, and consecutive users get different flags (no
    false dependency between them).
    """

    def __init__(self, names: tuple[str, ...]):
        self.names = names
        self.next = 0
        self.last, self.last_wide = "", False     # the flag handed out last, and whether it was whole
        self.clear_past: dict[str, int] = {}   # flag -> lanes: its bits past them are known clear
        self.writes: dict[str, int] = {}      # flag subregister (``f0.1``) -> times it was handed out or changed

    def written(self, flag: str, wide: bool = False) -> tuple[int, ...]:
        """How often the subregister of ``flag`` (both of its register's, ``wide``) was handed out or
        changed in place: a flag read again later (:func:`isa.flag_of`'s reuse) holds what it held while
        these counts are unchanged."""
        return tuple(self.writes.get(f, 0) for f in self._covered(flag, wide))

    def touch(self, flag: str, wide: bool = False) -> None:
        """``flag`` (its whole register, ``wide``) is changed in place."""
        for f in self._covered(flag, wide):
            self.writes[f] = self.writes.get(f, 0) + 1

    @staticmethod
    def _covered(flag: str, wide: bool) -> tuple[str, ...]:
        f = flag.lstrip("~")
        return (f[:-1] + "0", f[:-1] + "1") if wide else (f,)

    def take(self, lanes: int = 1) -> str:
        """The next flag for an instruction over ``lanes`` channels. A flag subregister holds 16
        channels, so over more the flag is a whole register (``fN.0``, its 32 bits). A whole register
        never shares its register with the flag handed out just before or just after it (that one
        is still to be read, or is read after it)."""
        wide = lanes > 16
        while True:
            f = self.names[self.next % len(self.names)]
            self.next += 1
            clash = (wide or self.last_wide) and f.split(".")[0] == self.last.split(".")[0]
            if (not wide or f.endswith(".0")) and not clash:
                break
        self.last, self.last_wide = f, wide
        self.clear_past.pop(f, None)
        self.touch(f, wide)
        return f


class XeLowering(AllocationWalk):
    """One kernel's lowering: the allocation walk plus the instructions. ``run()`` fills ``self.em.lines``."""

    def __init__(self, kernel, body, target, budget: int, remat: frozenset = frozenset(),
                 rotation: int = HEADER_ROTATION, compact: bool = False, linger: bool = False,
                 facts: BodyFacts | None = None):
        super().__init__(body, target, [a.var.name for a in kernel.args], kernel.simd, budget, remat, rotation,
                         compact, linger, facts)
        self.kernel = kernel
        self.em = Emitter(self.regs)
        self.flags = FlagPool(self.xe.flags)
        self.flag_reuse: dict = {}            # (condition, lanes) -> isa.ReusableFlag
        self.env: dict[str, list] = {}       # variable name -> stack of operands
        self.slm_base: dict[str, int] = {}
        self.args = {a.var.name: a for a in kernel.args}
        self.temps: list = []
        self.loop_stack: list = []
        self.if_stack: list = []
        self.loops: list[dict] = []           # every loop: trips, label
        self.arg_regs: dict[str, Reg] = {}
        self.in_place: dict[str, object] = {}    # reorder destination -> the source it took over
        self.header_in: dict[str, Reg] = {}   # header -> the registers its sends read instead (sends._held_payload)
        self.block2d_fields: list[dict] = []  # per 2D block header: byte -> what it holds (sends.lower_send2d)
        self.block2d_turn = 0                 # the 2D block header the last 2D load took
        self.block2d_carried: dict = {}       # loop label -> (buffer, its registers, header) moved into a field
        self.addresses = HeldAddresses(self.rb)   # 64-bit global addresses the headers hold (addresses)
        self.values = ValueRanges(kernel)     # which dividends are never negative (isa's division)
        self.dpas_forms: dict[tuple, tuple] = {}   # (simd, A type, B type) -> the target's dpas forms (tensor.dpas)

    # -- allocation -------------------------------------------------------------------------
    def no_room(self, nbytes: int, label: str) -> Exception:
        exc = self._out_of_registers(nbytes, label)
        exc.compacted = bool(self.live.heads or self.live.extent)   # with_remat: whether compacting may be why
        return exc

    def temp(self, t: Type, lanes: int = 1, whole: bool = False, header: bool = False) -> Reg:
        """A temporary for the current statement (freed at its end); a ``header`` is a message's."""
        n = elem_size(t) * lanes
        a = self.alloc(n, "tmp", CATEGORY["header"] if header else "temporaries", whole=whole)
        self.temps.append(a)
        return Reg(a.start, t.base, 1)

    def release_temps(self, mark: int, keep=None) -> None:
        """Frees the temporaries taken since ``mark``, except the one holding ``keep``."""
        kept = []
        for a in self.temps[mark:]:
            if isinstance(keep, Reg) and a.start <= keep.byte < a.end:
                kept.append(a)
            else:
                self.retire(a)
        del self.temps[mark:]
        self.temps.extend(kept)

    def _out_of_registers(self, nbytes: int, label: str) -> OutOfRegisters:
        per: dict[str, list] = {}
        for a in self.regs.live.values():
            e = per.setdefault(a.label, [a.category, 0, a.knob])
            e[1] += a.size
        live = sorted((LiveBuffer(lbl, c, -(-size // self.rb), k, size) for lbl, (c, size, k) in per.items()),
                      key=lambda b: -b.regs)
        need = -(-nbytes // self.rb) - self.regs.free_regs()
        node = self.em.node
        at = ""
        if node is not None and getattr(node, "origin", None) is not None:
            at = str(node.origin)
        return OutOfRegisters(max(need, 1), self.regs.nregs, self.rb, label, live, repairs(self, live), at)

    # -- bindings ---------------------------------------------------------------------------
    def bind(self, name: str, op) -> None:
        self.env.setdefault(name, []).append(op)

    def unbind(self, name: str) -> None:
        self.env[name].pop()

    def lookup(self, name: str):
        stack = self.env.get(name)
        if not stack:
            raise CodegenUnsupported(f"variable {name} is not bound to a register")
        return stack[-1]

    def buf(self, name: str):
        a = self.bufs.get(name)
        if a is None:
            raise CodegenUnsupported(f"buffer {name} is used before it is live")
        return a

    def grf_ref(self, buf, off, t: Type, stride_bytes: int | None = None) -> Reg:
        if not isinstance(off, IntImm):
            raise CodegenUnsupported(f"register buffer {buf.name} indexed by a run-time offset")
        a = self.buf(buf.name)
        if t.is_bool:           # bools are bytes in memory (IR semantics), masks in registers
            t = Type.parse("s8").with_lanes(t.lanes)
        size = elem_size(t)
        stride = 1 if stride_bytes is None else stride_bytes // size
        return Reg(a.start + off.value, t.base, stride if t.lanes > 1 else 0)

    # -- the walk ---------------------------------------------------------------------------
    def run(self) -> None:
        self._prologue()
        for p, kind, x in self.points():
            self.em.node = x
            getattr(self, "ev_" + kind)(x, p)
            self.release_temps(0)
        self.em.node = None
        self._epilogue()

    def take_over(self, name, size, category, knob, x, p):
        """The destination of a reorder whose source dies at it takes the source's registers
        (``tensor.reorder`` then moves the data through a small bounce buffer); None when the
        statement is not such a reorder."""
        if kind_of(x) is not Reorder or x.ops.dst.name != name:
            return None
        src = x.ops.src.name
        a = self.bufs.get(src)
        skey = next((k for k, v in self.keys.items() if v is a), None)
        if a is None or skey is None or self.live.last.get(skey) != p or a.size < size:
            return None
        self.regs.release(a)
        self.in_place[name] = a
        return self.regs.place(a.start, size, name, category, knob)

    def _prologue(self) -> None:
        for f in self.payload:
            if f.name in self.args:
                self.arg_regs[f.name] = Reg(f.byte, f.type, 0)
        local_ids = self.reserve_payload()
        if self.barrier_header is not None:
            self._barrier_header(self.barrier_header.start // self.rb)
        sends.block2d_prologue(self)
        for g, dword in GROUP_ID_DWORD.items():
            self.bind(g, Reg(4 * dword, s32, 0))
        lid = {f.name: f for f in self.payload}
        for d, name, a in self.alloc_thread_ids():
            dst = Reg(a.start, s32, 1)
            src = Reg(lid[f"local_id_{'xyz'[d]}"].byte, Type.parse("u16"), 0)
            isa.alu(self, "mov", 1, dst, [src])
            if d == 0:
                isa.alu(self, "shr", 1, dst, [dst, Imm(self.simd.bit_length() - 1, s32)])
            self.bind(name, dst.scalar())
        self.release(local_ids)    # the local ids are read once; their registers are free after

    def _epilogue(self) -> None:
        # The end-of-thread message takes its payload from the last registers: copy r0 there.
        full = (1 << self.rb) - 1
        r = self.regs
        last = next((g for g in range(r.nregs - 1, r.nregs - 1 - self.xe.eot_regs, -1) if r.free_mask[g] == full),
                    None)
        if last is None:
            raise self._out_of_registers(self.rb, "end-of-thread copy of r0")
        r.reserve(last, 1, "end-of-thread copy of r0")
        self.em.raw(f"(W) mov (8|M0) r{last}.0<1>:ud r0.0<1;1,0>:ud", "int")
        self.em.raw(f"(W) send.gtwy (8|M0) null r{last} null:0 0x0 0x02000010 {{EOT}}", "send")

    # -- statements -------------------------------------------------------------------------
    def ev_group(self, x, p):
        self.em.comment(f"{x.label} {{")

    def ev_end_group(self, x, p):
        self.em.comment(f"}} {x.label}")

    def ev_alloc(self, x, p):
        if x.kind is MemKind.SLM:
            self.slm_base[x.buf.name] = self.live.slm[x.buf.name]

    def ev_end_alloc(self, x, p):
        pass

    def ev_let(self, x, p):
        v = x.value
        if v.type.is_int:
            self.values.bind(x.var.name, v)
        if x.var.name in self.remat:
            self.bind(x.var.name, isa.Remat(v))
            return
        if (id(x), p) in self.live.aliases:
            self.bind(x.var.name, self.grf_ref(v.buf, v.offset, v.type, v.stride))
            return
        a = self.alloc_let(x, p)
        if a is None:
            self.bind(x.var.name, Imm(v.value, v.type))
            return
        t = x.var.type
        dst = Reg(a.start, t.base, 1)
        if self.live.var_keys[id(x), p] in self.live.heads:
            sends.evaluate_head(self, x, p, dst)
        else:
            isa.evaluate(self, v, dst)
        self.bind(x.var.name, dst if t.lanes > 1 else dst.scalar())
        if t.is_int:
            self.addresses.define(self, x.var.name, v, self.lookup(x.var.name))
        hit = self.flag_reuse.get((v, t.lanes))
        if hit is not None and hit.holds(self):   # a condition on the variable reads the value's flag
            isa.remember_flag(self, x.var, t.lanes, hit.flag)

    def ev_end_let(self, x, p):
        self.unbind(x.var.name)

    def ev_for(self, x, p):
        if x.step > 0:
            self.values.bind_loop(x.var.name, x.init, x.bound)
        var = Reg(self.alloc_loop(x, p).start, x.var.type.base, 1)
        bound = x.bound
        known = isinstance(x.init, IntImm) and isinstance(bound, IntImm)
        trips = max(0, -(-(bound.value - x.init.value) // x.step)) if known else None
        if known and trips > 0 and self.live.var_keys[id(x), p] in self.live.unread:
            # a counter the body never reads counts up from -trips * step to 0: the step's add sets the
            # loop's flag itself (``add (lt)``), one instruction a trip instead of an add and a compare
            isa.move(self, var, Imm(-trips * x.step, var.type), 1)
            self.alloc_bound(x)     # a constant bound: no register, the walk's loop stack kept
            bop = None
        else:
            isa.evaluate(self, x.init, var)
            ba = self.alloc_bound(x)
            if ba is None:
                bop = Imm(bound.value, bound.type)
            else:
                bop = Reg(ba.start, bound.type.base, 0)
                isa.evaluate(self, bound, bop.retype(bound.type, 1))
        top, end = self.em.label("LOOP"), self.em.label("LOOP_END")
        sends.block2d_loop_fields(self, x, top)
        sends.block2d_carry(self, x, p, top)
        if not (known and trips > 0):
            f = self.flags.take()
            self.em.op("cmp", 1, None, [var.scalar(), bop], cmod=("ge", f))
            self.em.raw(f"(W&{f}) jmpi {end}", "control")
        self.em.place(top)
        self.bind(x.var.name, var.scalar())
        info = {"label": x.var.name, "trips": trips, "weight": self.em.weight * (trips or 1),
                "parent": self.em.loop}
        self.loops.append(info)
        self.loop_stack.append((var, bop, top, end, self.em.weight, self.em.loop))
        self.em.weight = info["weight"]
        self.em.loop = len(self.loops) - 1

    def ev_end_for(self, x, p):
        var, bop, top, end, weight, loop = self.loop_stack.pop()
        f = self.flags.take()
        if bop is None:
            self.em.op("add", 1, var, [var.scalar(), Imm(x.step, var.type)], cmod=("lt", f))
        else:
            self.em.op("add", 1, var, [var.scalar(), Imm(x.step, var.type)])
            self.em.op("cmp", 1, None, [var.scalar(), bop], cmod=("lt", f))
        self.em.raw(f"(W&{f}) jmpi {top}", "control")
        self.em.weight, self.em.loop = weight, loop
        self.em.place(end)
        sends.block2d_uncarry(self, top, p)
        sends.block2d_loop_end(self, top)
        self.end_loop()
        self.unbind(x.var.name)

    def ev_if(self, x, p):
        end = self.em.label("ENDIF")
        other = self.em.label("ELSE") if x.else_ is not None else end
        self.if_stack.append((other, end))
        if isinstance(x.cond, BoolImm):
            if not x.cond.value:
                self.em.raw(f"(W) jmpi {other}", "control")
            return
        pred = isa.flag_of(self, x.cond, 1)
        neg = pred[1:] if pred.startswith("~") else "~" + pred
        self.em.raw(f"(W&{neg}) jmpi {other}", "control")

    def ev_else(self, x, p):
        other, end = self.if_stack[-1]
        self.em.raw(f"(W) jmpi {end}", "control")
        self.em.place(other)

    def ev_end_if(self, x, p):
        other, end = self.if_stack.pop()
        self.em.place(end)

    def ev_store(self, x, p):
        name = x.buf.name
        if name in self.live.headers and (p in self.live.held or name in self.bufs):
            sends.store_header(self, x, p)
            return
        if name not in self.bufs:
            raise CodegenUnsupported(f"store to {name}: only register buffers are stored to directly "
                                     "(memory is written by send messages)")
        vt = x.value.type
        dst = self.grf_ref(x.buf, x.offset, vt, x.stride)
        dst = Reg(dst.byte, dst.type, x.stride // dst.size if vt.lanes > 1 else 1)
        if vt.is_bool:
            mask = isa.value(self, x.value)
            isa.alu(self, "mov", vt.lanes, dst, [mask if isinstance(mask, Imm) else mask.retype(s32)])
            if x.mask is not None and not (isinstance(x.mask, BoolImm) and x.mask.value):
                raise CodegenUnsupported("a masked store of bool values")
            return
        if x.mask is None or (isinstance(x.mask, BoolImm) and x.mask.value):
            isa.evaluate(self, x.value, dst)
            return
        if isinstance(x.mask, BoolImm):
            return
        src = isa.value(self, x.value)
        pred = isa.flag_of(self, x.mask, x.value.type.lanes)
        isa.alu(self, "mov", x.value.type.lanes, dst, [src], pred=pred)

    def ev_call(self, x, p):
        f = x.func
        handler = _CALLS.get(type(f))
        if handler is None:
            raise CodegenUnsupported(f"no Xe lowering for {f}", getattr(x.origin, "knob", None))
        try:
            handler(self, x)
        except CodegenUnsupported as exc:
            raise CodegenUnsupported.located(exc, x)

    # -- synchronization ----------------------------------------------------------------------
    def barrier_signal(self, x=None):
        if self.barrier_header is not None:
            hb = self.barrier_header.start // self.rb
        else:   # no register of its own (a tight allocation): built where it is sent
            hb = self.temp(u32, self.rb // 4, whole=True, header=True).byte // self.rb
            self._barrier_header(hb)
        self.em.raw(f"(W) send.gtwy (1|M0) null r{hb} null:0 0x0 0x02000004", "send")

    def _barrier_header(self, hb: int) -> None:
        """The barrier message's header in register ``hb``: the thread count from r0 as the producer and
        consumer counts. Once per kernel where it has a register of its own (as oneDNN's generator does)."""
        self.em.raw(f"(W) mov (1|M0) r{hb}.4<1>:hf 0x0:hf", "float")
        self.em.raw(f"(W) mov (2|M0) r{hb}.10<1>:ub r0.11<0;1,0>:ub", "int")

    def barrier_wait(self, x=None):
        self.em.raw("(W) sync.bar null", "control", jump=False)

    def barrier(self, x=None):
        # SLM writes are completed by the fence.slm the IR places before the barrier.
        self.barrier_signal()
        self.barrier_wait()

    def fence(self, scope: str):
        t = self.temp(u32, self.rb // 4, whole=True, header=True)  # a message's register, as a header is
        n = t.byte // self.rb
        sfid = "slm" if scope == "slm" else "ugm"
        self.em.raw(f"(W) send.{sfid} (1|M0) r{n} r0 null:0 0x0 0x0210011F", "send")
        self.em.raw(f"(W) mov (1|M0) null<1>:ud r{n}.0<0;1,0>:ud", "int")


def kind_of(stmt):
    """The IR function type a call statement invokes (None for other statements)."""
    func = getattr(stmt, "func", None)
    return type(func) if func is not None else None


def repairs(cg: XeLowering, live: list[LiveBuffer]) -> list[dict]:
    """What oneDNN's generator tries when registers run out, in its order, by category, for what is live
    (``kdd.core.config.repairs`` says which knob each changes)."""
    cats = {b.category for b in live}
    out = []
    modes = cg.target.registers.modes
    if cg.regs.nregs < max(modes):
        out.append({"category": "large-grf", "regs": max(modes)})
    if "A/B operands" in cats:
        out.append({"category": "split-operands"})
    if "headers" in cats:
        out.append({"category": "reuse-headers"})
    if "SLM load buffers" in cats:
        out.append({"category": "fewer-staging-buffers"})
    out.append({"category": "drop-prefetch"})
    out.append({"category": "smaller-tile"})
    return out


_CALLS = {
    Send: sends.lower_send,
    Send2D: sends.lower_send2d,
    Dpas: tensor.dpas,
    Mad: tensor.vector_fma,
    Dp4a: tensor.vector_fma,
    Reorder: tensor.reorder,
    Reduce: tensor.reduce,
    Eltwise: tensor.eltwise,
    Barrier: lambda cg, x: cg.barrier(),
    BarrierSignal: lambda cg, x: cg.barrier_signal(),
    BarrierWait: lambda cg, x: cg.barrier_wait(),
    Fence: lambda cg, x: cg.fence(x.func.scope),
}
