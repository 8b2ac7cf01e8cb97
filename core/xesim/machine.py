"""The machine: every hardware thread of a launch, stepped one instruction at a time.

The register file of all threads is one byte array ``(threads, bytes)`` with
typed views, so an instruction reads and writes its regions for every thread
at once. Threads run in lock step while they agree on the program counter;
when they diverge (a predicated ``jmpi``) the threads at the lowest program
counter run first, which reconverges structured control flow. A thread that
waits at a barrier (``sync.bar``) stops until every thread of its group has
signalled (``send.gtwy`` barrier message); SLM accesses are checked for
races across the threads of a group (:mod:`.memory`). ``send.gtwy`` with
``{EOT}`` ends a thread.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kdd.core.targets.xe_asm import FLOAT_TYPES, TYPES
from kdd.core.targets.xe_syntax import Immediate

from . import alu
from .errors import Fault, SimError, SimulatorGap
from .memory import Global, Slm
from .program import Instr, Operand

ACC_REGS = 4          # acc0..acc3 after the GRFs, two register rows each
FLAG_BITS = 32
FLAG_SUBREG_BITS = 16   # f0.0, f0.1...: a flag subregister read or written as a word
CONTROL = {"jmpi", "sync", "send", "sendc"}    # what can stop a thread or move threads apart
# The most thread-instructions one simulation runs: its time is kdd's limit, not the kernel's fault (a
# SimulatorGap). It scales with the program and the threads: a loop-free kernel runs each instruction
# once per thread, and LOOP_ALLOWANCE times that leaves room for its loops.
STEP_LIMIT = 160_000_000
LOOP_ALLOWANCE = 256


@dataclass(frozen=True)
class Geometry:
    """The launch: ``groups`` thread groups of ``group_size`` threads, register rows of ``reg_bytes``,
    ``grf`` registers, ``slm_bytes`` of SLM per group."""

    groups: int
    group_size: int
    reg_bytes: int
    grf: int
    slm_bytes: int

    @property
    def threads(self) -> int:
        return self.groups * self.group_size


class Machine:
    """Registers, flags, memory and scheduling state of one launch (see the module docstring)."""

    def __init__(self, program: list[Instr], geo: Geometry, memory: Global, on_store=None):
        self.program, self.geo, self.memory = program, geo, memory
        T, rb = geo.threads, geo.reg_bytes
        self.acc_base = geo.grf * rb
        self.file = np.zeros((T, self.acc_base + ACC_REGS * 2 * rb), dtype=np.uint8)
        self.views = {name: self.file.view(np.dtype(dt)) for name, (dt, _) in TYPES.items()}
        self.flags = np.zeros((T, 2, FLAG_BITS), dtype=bool)
        self.pc = np.zeros(T, dtype=np.int64)
        self.done = np.zeros(T, dtype=bool)
        self.waiting = np.zeros(T, dtype=bool)
        self.everyone = np.arange(T)
        self.group = self.everyone // geo.group_size
        self.sig = np.zeros(T, dtype=np.int64)       # barrier signals issued
        self.passed = np.zeros(T, dtype=np.int64)    # barrier generations waited for
        self.generation = np.zeros(geo.groups, dtype=np.int64)
        self.slm = Slm(geo.groups, geo.slm_bytes)
        self.executed = 0          # instructions, counting a lock-step batch once
        self.thread_steps = 0      # instructions times the threads that ran them
        self.on_store = on_store   # called (instr, flat byte indices, rows) after a global store
        self.after: dict = {}      # program index -> called (machine, rows) once the instruction ran
        # Register indices are cached by an operand's identity: every operand written or read lives as long as
        # the machine (the program's, and these), so no cached identity is ever another operand's.
        self._index_cache: dict = {}
        self.carry = Operand("acc", "ud", 0, 0, (1, 1, 0))   # where addc leaves its carries
        self.cmp_dst: dict = {}          # id(cmp instruction) -> its destination as unsigned bits
        self._plans: dict = {}
        self._compiled: dict = {}

    # -- operands ----------------------------------------------------------------------------------

    def _index(self, op: Operand, n: int) -> np.ndarray:
        key = (id(op), n)              # operands live as long as the program
        idx = self._index_cache.get(key)
        if idx is None:
            size = TYPES[op.type][1]
            start = (op.reg * self.geo.reg_bytes if op.kind == "grf" else self.acc_base + op.reg * 2 * self.geo.reg_bytes)
            v, w, h = op.region
            i = np.arange(n)
            idx = start // size + op.sub + (i // w) * v + (i % w) * h
            self._index_cache[key] = idx
        return idx

    def _imm(self, ins: Instr, imm: Immediate, n: int) -> np.ndarray:
        if imm.type in ("uv", "v"):
            nib = np.array([(imm.value >> (4 * i)) & 0xF for i in range(8)], dtype=np.int64)
            if imm.type == "v":
                nib = np.where(nib >= 8, nib - 16, nib)
            return np.resize(nib, n)[None, :]
        if imm.raw_bits:
            size = TYPES[imm.type][1]
            raw = np.array([imm.value], dtype=np.dtype(f"uint{8 * size}"))
            return raw.view(np.dtype(TYPES[imm.type][0]))[None, :]
        return np.array([imm.value], dtype=np.dtype(TYPES[imm.type][0]))[None, :]

    def readers(self, ins: Instr) -> list:
        """Per source of an ALU instruction, a function of the rows giving its values in the type the
        operation computes in (index arrays, immediates and casts chosen once per instruction)."""
        plan = self._plans.get(id(ins))
        if plan is None:
            if ins.op in alu.INT_ONLY and any(s.type in FLOAT_TYPES for s in ins.srcs):
                raise SimulatorGap(ins.line, ins.text, f"{ins.op} of float operands")
            plan = self._plans[id(ins)] = [self._reader(ins, s) for s in ins.srcs]
        return plan

    def _reader(self, ins: Instr, src):
        n = ins.exec_size
        wide = any(s.type in FLOAT_TYPES for s in ins.srcs)
        if isinstance(src, Immediate):
            const = alu.as_compute(self._imm(ins, src, n), src.type, wide)
            return lambda rows: const
        if src.kind == "null":
            raise SimulatorGap(ins.line, ins.text, "null source")
        if src.kind == "flag":
            return self._flag_reader(ins, src, n)
        view, idx, cast = self.views[src.type], self._index(src, n), alu.caster(src.type, wide)

        def read(rows):
            x = cast(view[:, idx] if rows.__class__ is slice else view[rows[:, None], idx])
            if src.abs:
                x = np.abs(x)
            return -x if src.neg else x
        return read

    def _flag_reader(self, ins: Instr, src: Operand, n: int):
        if n != 1:
            raise SimulatorGap(ins.line, ins.text, "a flag operand over more than one channel")
        weights = np.int64(1) << np.arange(FLAG_SUBREG_BITS, dtype=np.int64)

        def read(rows):
            bits = self.flags[rows, src.reg, src.sub: src.sub + FLAG_SUBREG_BITS]
            return (bits.astype(np.int64) @ weights).reshape(-1, 1)
        return read

    def write(self, op: Operand, rows, n: int, value: np.ndarray, mask) -> None:
        if op.kind == "flag":       # a flag subregister as a 16-bit destination
            if n != 1:
                raise SimError(f"a flag destination over {n} channels")
            word = np.broadcast_to(np.asarray(value, dtype=np.int64).reshape(-1, 1), (_nrows(self, rows), 1))
            bits = ((word >> np.arange(FLAG_SUBREG_BITS)) & 1).astype(bool)
            cur = self.flags[rows, op.reg, op.sub: op.sub + FLAG_SUBREG_BITS]
            self.flags[rows, op.reg, op.sub: op.sub + FLAG_SUBREG_BITS] = bits if mask is None else np.where(mask, bits, cur)
            return
        view, idx = self.views[op.type], self._index(op, n)
        if isinstance(rows, slice):
            if mask is None:
                view[:, idx] = value
            else:
                view[:, idx] = np.where(mask, value, view[:, idx])
            return
        r = rows[:, None]
        if mask is None:
            view[r, idx[None, :]] = value
        else:
            view[r, idx[None, :]] = np.where(mask, value, view[r, idx[None, :]])

    def flag_bits(self, rows, reg: int, bit: int, n: int) -> np.ndarray:
        return self.flags[rows, reg, bit: bit + n]

    def channel_mask(self, ins: Instr, rows, n: int):
        if ins.pred is None:
            return None
        reg, bit, inv = ins.pred
        bit += ins.channel          # (16|M16) reads flag bits 16-31
        _whole_flag(ins, bit, n)
        m = self.flag_bits(rows, reg, bit, n)
        return ~m if inv else m

    # -- scheduling --------------------------------------------------------------------------------

    def run(self) -> None:
        """Runs every thread to its end of thread; raises :class:`SimError`."""
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):   # wrapping is the semantics
            self._run()

    def _run(self) -> None:
        T = self.geo.threads
        everyone = np.arange(T)
        lockstep = True          # every thread live and at one program counter: no reductions needed
        limit = max(STEP_LIMIT, LOOP_ALLOWANCE * len(self.program) * T)
        while True:
            if lockstep:
                pc, rows, count = int(self.pc[0]), slice(None), T
            else:
                live = ~self.done & ~self.waiting
                if not live.any():
                    if self.done.all():
                        return
                    self._deadlock()
                pcs = np.where(live, self.pc, np.iinfo(np.int64).max)
                pc = int(pcs.min())
                at = live & (self.pc == pc)
                count = int(at.sum())
                rows = slice(None) if count == T else everyone[at]
            if pc >= len(self.program):
                raise Fault(None, "", "a thread ran past the last instruction without an end of thread")
            ins = self.program[pc]
            self.executed += 1
            self.thread_steps += count
            if self.thread_steps > limit:
                raise SimulatorGap(ins.line, ins.text, f"the run passed {limit} thread-instructions, kdd's limit for "
                                   "one simulation (check a smaller shape)")
            self.step(ins, rows, pc)
            if self.after:
                seen = self.after.get(pc)
                if seen is not None:
                    seen(self, rows)
            if ins.op in CONTROL or not lockstep:
                lockstep = bool(not self.done.any() and not self.waiting.any() and (self.pc == self.pc[0]).all())

    def _deadlock(self) -> None:
        t = int(np.flatnonzero(self.waiting)[0])
        ins = self.program[int(self.pc[t])]
        g = self.group[t]
        members = np.flatnonzero(self.group == g)
        missing = [int(m) for m in members if self.sig[m] <= self.generation[g] and not self.done[m]]
        raise Fault(ins.line, ins.text, f"barrier never completes: thread {t} waits, threads {missing} of its "
                                        "group never signalled")

    def _advance(self, rows) -> None:
        self.pc[rows] += 1

    def step(self, ins: Instr, rows, pc: int) -> None:
        handler = HANDLERS.get(ins.op)
        if handler is None:
            raise SimulatorGap(ins.line, ins.text, f"opcode {ins.op}")
        try:
            handler(self, ins, rows)
        except SimError:
            raise
        except (ValueError, IndexError, KeyError, TypeError) as exc:
            raise SimulatorGap(ins.line, ins.text, str(exc)) from None

    def rows_array(self, rows) -> np.ndarray:
        return self.everyone if isinstance(rows, slice) else rows


# -- handlers --------------------------------------------------------------------------------------------

def _alu(m: Machine, ins: Instr, rows) -> None:
    run = m._compiled.get(id(ins))
    if run is None:
        run = m._compiled[id(ins)] = _compile_alu(m, ins)
    run(rows)


def _compile_alu(m: Machine, ins: Instr):
    """The instruction as one function of the rows: operand readers, the operation, the conversion to
    the destination and its write, chosen once (what most instructions are, run thousands of times)."""
    op, n, dst = ins.op, ins.exec_size, ins.dst
    if op in ("addc", "sel", "cmp") or ins.cmod is not None or dst.kind != "grf":
        return lambda rows: _alu_general(m, ins, rows)
    readers = m.readers(ins)
    if op in ("shl", "shr", "asr"):
        ta, td = ins.srcs[0].type, dst.type
        compute = lambda vals: alu.shift(op, vals[0], ta, vals[1], td)      # noqa: E731
    else:
        fn = alu.TABLE.get(op)
        if fn is None:
            raise SimulatorGap(ins.line, ins.text, f"opcode {op}")
        compute = lambda vals: fn(*vals)                                    # noqa: E731
    convert = alu.converter(dst.type, ins.sat)
    view, idx = m.views[dst.type], m._index(dst, n)
    pc = m.pc

    def run(rows):
        out = convert(np.asarray(compute([read(rows) for read in readers])))
        mask = m.channel_mask(ins, rows, n)
        if mask is None and rows.__class__ is slice:
            view[:, idx] = out
        else:
            m.write(dst, rows, n, out, mask)
        pc[rows] += 1
    return run


def _alu_general(m: Machine, ins: Instr, rows) -> None:
    n = ins.exec_size
    op = ins.op
    vals = [read(rows) for read in m.readers(ins)]
    if op in ("shl", "shr", "asr"):
        res = alu.shift(op, vals[0], ins.srcs[0].type, vals[1], ins.dst.type)
    elif op == "addc":
        total = (vals[0] & 0xFFFFFFFF) + (vals[1] & 0xFFFFFFFF)
        res = total
        m.write(m.carry, rows, n, (total >> 32).astype(np.uint32),
                m.channel_mask(ins, rows, n))
    elif op == "sel":
        return _sel(m, ins, rows, vals)
    elif op == "cmp":
        return _cmp(m, ins, rows, vals)
    else:
        fn = alu.TABLE.get(op)
        if fn is None:
            raise SimulatorGap(ins.line, ins.text, f"opcode {op}")
        res = fn(*vals)
    _store(m, ins, rows, res)


def _store(m: Machine, ins: Instr, rows, res) -> None:
    n = ins.exec_size
    mask = m.channel_mask(ins, rows, n)
    dst = ins.dst
    out = alu.convert(np.asarray(res), dst.type, ins.sat)
    if ins.cmod is not None:
        flag = alu.CMP[ins.cmod](alu.as_compute(out, dst.type, dst.type in FLOAT_TYPES), 0)
        _set_flag(m, ins, rows, flag, mask)
    if dst.kind != "null":
        m.write(dst, rows, n, out, mask)          # assignment broadcasts a uniform result
    m._advance(rows)


def _nrows(m: Machine, rows) -> int:
    return m.geo.threads if isinstance(rows, slice) else len(rows)


def _whole_flag(ins: Instr, bit: int, n: int) -> None:
    """A flag read or written over ``n`` channels must hold them: over 16 channels only a whole flag
    register (``fN.0``) does, the subregister ``fN.1`` is its upper 16 bits."""
    if bit + n > FLAG_BITS:
        raise Fault(ins.line, ins.text, f"{n} channels on a flag subregister starting at bit {bit} (over 16 "
                                        "channels the flag must be a whole register, fN.0)")


def _set_flag(m: Machine, ins: Instr, rows, value, mask) -> None:
    reg, bit = ins.cmod_flag
    n = ins.exec_size
    _whole_flag(ins, bit, n)
    cur = m.flags[rows, reg, bit: bit + n]
    m.flags[rows, reg, bit: bit + n] = value if mask is None else np.where(mask, value, cur)


def _math(m: Machine, ins: Instr, rows) -> None:
    fn = alu.MATH.get(ins.sub)
    if fn is None or ins.dst.type not in ("f", "hf") or any(s.type not in ("f", "hf") for s in ins.srcs):
        raise SimulatorGap(ins.line, ins.text, f"math.{ins.sub} of {ins.dst.type}")
    vals = [np.asarray(read(rows), dtype=np.float64) for read in m.readers(ins)]
    _store(m, ins, rows, fn(*vals))


def _dp4a(m: Machine, ins: Instr, rows) -> None:
    if ins.dst.type not in ("d", "ud") or any(s.type not in ("d", "ud") for s in ins.srcs):
        raise SimulatorGap(ins.line, ins.text, "dp4a of other than dword operands")
    a, b, c = (read(rows) for read in m.readers(ins))
    _store(m, ins, rows, alu.op_dp4a(a, b, c, ins.srcs[1].type, ins.srcs[2].type))


def _cmp(m: Machine, ins: Instr, rows, vals) -> None:
    n = ins.exec_size
    if ins.cmod is None:
        raise SimulatorGap(ins.line, ins.text, "cmp without a condition")
    a, b = np.broadcast_arrays(*vals)
    flag = np.broadcast_to(alu.CMP[ins.cmod](a, b), (_nrows(m, rows), n))
    mask = m.channel_mask(ins, rows, n)
    _set_flag(m, ins, rows, flag, mask)
    if ins.dst.kind != "null":
        size = TYPES[ins.dst.type][1]
        raw = np.where(flag, np.uint64((1 << (8 * size)) - 1), np.uint64(0)).astype(np.dtype(f"uint{8 * size}"))
        # the destination as unsigned bits, one operand per instruction kept by the machine (see _index_cache)
        dst = m.cmp_dst.get(id(ins))
        if dst is None:
            dst = m.cmp_dst[id(ins)] = Operand(ins.dst.kind, {1: "ub", 2: "uw", 4: "ud", 8: "uq"}[size],
                                               ins.dst.reg, ins.dst.sub, ins.dst.region)
        m.write(dst, rows, n, raw, mask)
    m._advance(rows)


def _sel(m: Machine, ins: Instr, rows, vals) -> None:
    n = ins.exec_size
    a, b = vals
    if ins.cmod is not None:          # min/max: the condition compares the sources, no flag is written
        res = np.where(alu.CMP[ins.cmod](a, b), a, b)
        mask = m.channel_mask(ins, rows, n)
    elif ins.pred is not None:        # the predicate chooses, every channel is written
        res = np.where(m.channel_mask(ins, rows, n), a, b)
        mask = None
    else:
        res, mask = a, None
    out = alu.convert(np.broadcast_to(res, (_nrows(m, rows), n)), ins.dst.type, ins.sat)
    m.write(ins.dst, rows, n, out, mask)
    m._advance(rows)


def _jmpi(m: Machine, ins: Instr, rows) -> None:
    if ins.pred is None:
        m.pc[rows] = ins.target
        return
    reg, bit, inv = ins.pred
    take = m.flags[rows, reg, bit]
    take = ~take if inv else take
    m.pc[rows] = np.where(take, ins.target, m.pc[rows] + 1)


def _sync(m: Machine, ins: Instr, rows) -> None:
    if ins.sub == "bar":
        return _wait(m, ins, rows)
    if ins.sub not in ("nop", "allrd", "allwr"):
        raise SimulatorGap(ins.line, ins.text, f"sync.{ins.sub}")
    m._advance(rows)


def _wait(m: Machine, ins: Instr, rows) -> None:
    r = m.rows_array(rows)
    pending = m.sig[r] > m.passed[r]
    fired = m.generation[m.group[r]] >= m.sig[r]
    go = ~pending | fired
    m.passed[r[go & pending]] = m.sig[r[go & pending]]
    m.pc[r[go]] += 1
    m.waiting[r[~go]] = True


def _signal(m: Machine, ins: Instr, r: np.ndarray) -> None:
    hdr = ins.srcs[0]
    counts = m.views["ub"][r[:, None], hdr.reg * m.geo.reg_bytes + np.array([10, 11])[None, :]]
    want = m.geo.group_size
    if (counts != want).any():
        raise Fault(ins.line, ins.text, f"barrier header counts {counts[0].tolist()} threads; the group has {want}")
    if (m.sig[r] > m.passed[r]).any():
        raise Fault(ins.line, ins.text, "a barrier signalled twice without a wait between")
    m.sig[r] += 1
    for g in np.unique(m.group[r]):
        members = m.group == g
        active = members & ~m.done
        if (m.sig[active] > m.generation[g]).all():
            m.generation[g] += 1
            m.waiting[members] = False


def _dpas(m: Machine, ins: Instr, rows) -> None:
    if ins.op == "dpasw":
        raise SimulatorGap(ins.line, ins.text, "dpasw (the thread pair's shared operand) is not simulated")
    depth, _, repeat = ins.sub.partition("x")
    sd, rc = int(depth), int(repeat)
    n = ins.exec_size
    dst, c, b, a = ins.dst, *ins.srcs
    bytes_ = {"ub", "b"}     # u8 and s8 mix in either order; other formats pair with themselves
    if not ({a.type, b.type} <= bytes_ or (b.type == a.type and b.type in ("hf", "bf", "tf32"))):
        raise SimulatorGap(ins.line, ins.text, f"dpas of {b.type} x {a.type}")
    opc = 4 // TYPES[b.type][1]  # elements per dword: tf32 takes a whole dword
    rb = m.geo.reg_bytes
    T = _nrows(m, rows)

    def elems(op: Operand, count: int) -> np.ndarray:
        size = TYPES[op.type][1]
        start = (op.reg * rb) // size + op.sub
        view = m.views[op.type]
        x = view[rows, start: start + count]
        if op.type == "bf":
            return alu.bf_to_f32(x).astype(np.float64)
        if op.type == "tf32":
            return alu.tf32_to_f32(x).astype(np.float64)
        return x.astype(np.float64 if op.type in FLOAT_TYPES else np.int64)

    bm = elems(b, sd * n * opc).reshape(T, sd, n, opc)
    am = elems(a, rc * sd * opc).reshape(T, rc, sd, opc)
    prod = am.reshape(T, rc, sd * opc) @ bm.transpose(0, 1, 3, 2).reshape(T, sd * opc, n)
    acc = np.zeros((T, rc, n)) if c.kind == "null" else elems(c, rc * n).reshape(T, rc, n)
    res = (acc + prod).reshape(T, rc * n)
    size = TYPES[dst.type][1]
    start = (dst.reg * rb) // size + dst.sub
    out = alu.convert(res.astype(np.float32) if dst.type == "f" else res.astype(np.int64), dst.type, False)
    if ins.pred is not None:
        raise SimulatorGap(ins.line, ins.text, "predicated dpas")
    if isinstance(rows, slice):
        m.views[dst.type][:, start: start + rc * n] = out
    else:
        m.views[dst.type][rows[:, None], np.arange(start, start + rc * n)[None, :]] = out
    m._advance(rows)


def _send(m: Machine, ins: Instr, rows) -> None:
    from .send import gateway, lsc

    if ins.sub == "gtwy":
        return gateway(m, ins, rows)
    if ins.sub in ("ugm", "slm"):
        return lsc(m, ins, rows)
    raise SimulatorGap(ins.line, ins.text, f"messages to {ins.sub}")


HANDLERS = {op: _alu for op in ("mov", "add", "mul", "add3", "mad", "and", "or", "xor", "not", "mach", "shl",
                                "shr", "asr", "addc", "sel", "cmp", "rnde", "rndd", "rndu", "rndz")}
HANDLERS.update({"jmpi": _jmpi, "sync": _sync, "dpas": _dpas, "dpasw": _dpas, "send": _send, "sendc": _send,
                 "math": _math, "dp4a": _dp4a})

__all__ = ["Geometry", "Machine"]
