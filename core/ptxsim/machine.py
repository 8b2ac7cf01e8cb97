"""The PTX machine: global memory (one byte array per kernel argument), a block's shared memory, and
its warps, each 32 lanes in numpy arrays, interleaved at ``bar.sync``.

It reads only the PTX text, so it is an oracle independent of the generator (the semantics follow the
PTX ISA manual). ``cp.async`` reads global memory at once and writes shared memory only at the
``cp.async.wait_group`` / ``wait_all`` that completes it, so a read before the wait sees the old bytes.
Registers hold raw bits in ``uint64`` arrays; predicates are bool arrays; a register read before any
write reads all ones (poison, as fresh IR registers are).
"""
from __future__ import annotations

import re

import numpy as np

from kdd.core.xesim.errors import Fault, SimError, SimulatorGap

from .alu import LANES, MASK, alu, bits_of, compare, read, write
from .hopper import TMAP_TAG, Barriers, HopperWarp
from .program import Instr, Program

# A warp that runs this many instructions stops the simulation: kdd's limit (a SimulatorGap), not a
# verdict on the kernel, so it is far above what a checked shape runs (a few hundred thousand).
MAX_WARP_STEPS = 20_000_000
# The lane mask of an unpredicated instruction: one read-only array, not a new one per instruction.
_ALL_LANES = np.ones(LANES, dtype=bool)
_ALL_LANES.flags.writeable = False
MMA = {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
       *(f"mma.sync.aligned.m16n8k32.row.col.s32.{a}.{b}.s32" for a in ("s8", "u8") for b in ("s8", "u8"))}


class Machine:
    """Global memory: each kernel argument a byte array at its own base address (argument ``i`` at
    ``(i + 1) << 40``); ``written`` marks the bytes any store wrote, per argument."""

    def __init__(self, program: Program, buffers: list[np.ndarray], tensor_maps: list[dict] = ()):
        self.p = program
        self.buffers = buffers
        self.written = [np.zeros(b.size, dtype=bool) for b in buffers]
        self.base = [(i + 1) << 40 for i in range(len(buffers))]
        self.instructions = 0
        self.tensor_maps = list(tensor_maps)    # the launch's tensor maps, in parameter order

    def tensor_map(self, addr: int) -> dict:
        """The tensor map whose parameter is at ``addr``."""
        i = addr - TMAP_TAG
        if not 0 <= i < len(self.tensor_maps):
            raise Fault(None, "", f"a tensor copy through {addr:#x}, not a tensor-map parameter's address")
        return self.tensor_maps[i]

    def _mem(self, addr: np.ndarray, shared: np.ndarray | None):
        if shared is not None:
            return shared, None, addr.astype(np.int64)
        idx = (addr >> np.uint64(40)).astype(np.int64) - 1
        if len(set(idx.tolist())) != 1 or not 0 <= idx[0] < len(self.buffers):
            raise Fault(None, "", f"addresses outside the arguments: {[hex(a) for a in addr[:4].tolist()]}")
        i = int(idx[0])
        return self.buffers[i], self.written[i], (addr & np.uint64((1 << 40) - 1)).astype(np.int64)

    def load(self, addr, size: int, shared, active):
        out = np.zeros(LANES, dtype=np.uint64)
        if not active.any():
            return out
        mem, _, off = self._mem(addr[active], shared)
        if off.min() < 0 or off.max() + size > mem.size:
            raise Fault(None, "", f"load out of bounds: bytes {off.min()}..{off.max() + size} of {mem.size}")
        val = np.zeros(off.size, dtype=np.uint64)
        for b in range(size):
            val |= mem[off + b].astype(np.uint64) << np.uint64(8 * b)
        out[active] = val
        return out

    def store(self, addr, value, size: int, shared, active):
        if not active.any():
            return
        mem, written, off = self._mem(addr[active], shared)
        if off.min() < 0 or off.max() + size > mem.size:
            raise Fault(None, "", f"store out of bounds: bytes {off.min()}..{off.max() + size} of {mem.size}")
        v = value[active]
        for b in range(size):
            mem[off + b] = ((v >> np.uint64(8 * b)) & np.uint64(0xFF)).astype(np.uint8)
            if written is not None:
                written[off + b] = True

    def run(self, grid, block, shared_bytes: int) -> None:
        """Every block of ``grid`` (x, y, z) of ``block`` threads, one after another."""
        if block[0] % LANES:
            raise SimulatorGap(None, "", f"a block x of {block[0]} threads (whole warps only)")
        warps_per_block = block[0] // LANES * block[1] * block[2]
        for bz in range(grid[2]):
            for by in range(grid[1]):
                for bx in range(grid[0]):
                    shared = np.full(max(shared_bytes, 1), 0xFF, dtype=np.uint8)
                    barriers = Barriers()
                    self._block([Warp(self, (bx, by, bz), w, block, shared, barriers).steps()
                                 for w in range(warps_per_block)], barriers)

    @staticmethod
    def _block(live: list, barriers: Barriers) -> None:
        """Runs a block's warps: each to its next ``bar.sync`` (released when every live warp is there)
        or failed ``mbarrier.try_wait`` (run again later); a round in which no warp arrived, ended or
        changed a barrier while some wait is a deadlock."""
        at_bar: set[int] = set()
        while live:
            progress, epoch = False, barriers.epoch
            for i, w in enumerate(live):
                if w is None or i in at_bar:
                    continue
                got = next(w, "done")
                if got == "done":
                    live[i] = None
                    progress = True
                elif got == "barrier":
                    at_bar.add(i)
                    progress = True
            running = [i for i, w in enumerate(live) if w is not None]
            if running and all(i in at_bar for i in running):
                at_bar.clear()
            if not running:
                return
            if not progress and barriers.epoch == epoch:
                raise Fault(None, "", "deadlock: every warp of the block waits on an mbarrier phase or a bar.sync "
                                      "that nothing completes")


class Warp(HopperWarp):
    """One warp's registers and program counter; :meth:`steps` yields at each ``bar.sync`` and at each
    ``mbarrier.try_wait`` that fails."""

    def __init__(self, machine: Machine, ctaid, w: int, block, shared: np.ndarray, barriers: Barriers):
        self.m, self.shared, self.barriers = machine, shared, barriers
        self.warp_rank = w                          # the warp's index in its block
        self.wgmma_open: list = []                  # (register, value) of MMAs since the last commit
        self.wgmma_groups: list[list] = []          # committed MMA groups, oldest first
        self.bulk_open: list = []                   # tensor stores since the last bulk commit (callables)
        self.bulk_groups: list[list] = []           # committed tensor-store groups, oldest first
        tid_x = (w % (block[0] // LANES)) * LANES + np.arange(LANES)
        rest = w // (block[0] // LANES)
        special = {"%tid.x": tid_x, "%tid.y": np.full(LANES, rest % block[1]),
                   "%tid.z": np.full(LANES, rest // block[1]),
                   "%ctaid.x": np.full(LANES, ctaid[0]), "%ctaid.y": np.full(LANES, ctaid[1]),
                   "%ctaid.z": np.full(LANES, ctaid[2]), "kdd_smem": np.zeros(LANES)}
        self.special = {k: np.asarray(v).astype(np.uint64) for k, v in special.items()}
        self.regs: dict[str, np.ndarray] = {}
        self.active: np.ndarray | None = None       # lanes of the current predicated instruction
        self.open: list = []                        # cp.async copies not committed yet
        self.groups: list[list] = []                # committed cp.async groups, oldest first

    def val(self, a: str) -> np.ndarray:
        if a in self.regs:
            return self.regs[a]
        if a in self.special:
            return self.special[a]
        if a.startswith("tmap_"):   # a tensor-map parameter's address
            return np.full(LANES, TMAP_TAG + int(a[5:]), dtype=np.uint64)
        if a.startswith("%"):       # never written: poison
            return np.full(LANES, MASK[32], dtype=np.uint64)
        if a.startswith(("0f", "0F")):
            return np.full(LANES, int(a[2:], 16), dtype=np.uint64)
        if a.startswith(("0d", "0D")):
            return np.full(LANES, int(a[2:], 16), dtype=np.uint64)
        return np.full(LANES, int(a, 0) & MASK[64], dtype=np.uint64)

    def set(self, name: str, value: np.ndarray) -> None:
        if self.active is None:
            self.regs[name] = value
        else:
            old = self.regs.get(name)
            self.regs[name] = np.where(self.active, value, old if old is not None else np.zeros(LANES, value.dtype))

    def addr(self, a: str) -> np.ndarray:
        m = re.match(r"([%\w$.]+)(?:\+(-?\d+))?$", a.strip("[]"))
        return self.val(m.group(1)) + np.uint64(int(m.group(2) or 0) & MASK[64])

    def steps(self):
        ops, labels = self.m.p.ops, self.m.p.labels
        pc, count = 0, 0
        while True:
            if pc >= len(ops):
                raise Fault(None, "", "the warp ran past the last instruction")
            ins = ops[pc]
            pc += 1
            count += 1
            self.m.instructions += 1
            if count > MAX_WARP_STEPS:
                raise SimulatorGap(ins.line, ins.text, f"a warp ran {MAX_WARP_STEPS} instructions, kdd's limit for "
                                   "one simulation (check a smaller shape)")
            active = _ALL_LANES
            self.active = None
            if ins.pred is not None:
                active = self.regs[ins.pred.lstrip("!")].copy()
                if ins.pred.startswith("!"):
                    active = ~active
                self.active = active
            try:
                jump = self.execute(ins, active)
            except SimError as exc:
                if exc.line is not None:
                    raise
                raise type(exc)(ins.line, ins.text, exc.reason) from None
            if jump == "ret":
                if self.bulk_open or self.bulk_groups:
                    raise Fault(ins.line, ins.text, "the warp ends with tensor stores that may still read shared "
                                                    "memory (no cp.async.bulk.wait_group.read 0 after them)")
                return
            if jump == "bar":
                yield "barrier"
            elif jump == "wait":
                yield "wait"
            elif jump is not None:
                pc = labels[jump]

    def execute(self, ins: Instr, active: np.ndarray):
        """Runs ``ins`` on the ``active`` lanes; returns ``"ret"``, ``"bar"``, a label to jump to or None."""
        op, args = ins.op, ins.args
        name = op.split(".")
        base = name[0]
        if base == "ret":
            return "ret"
        if base == "bra":
            if active.any():
                if not active.all():
                    raise SimulatorGap(None, "", "a divergent bra.uni (its lanes must agree)")
                return args[0]
            return None
        if op == "bar.sync":
            return "bar"
        if op in ("fence.acq_rel.gpu", "bar.warp.sync"):    # one block at a time, a warp's lanes together
            return None
        if base in ("mov", "cvta"):
            self._move(name, args)
            return None
        if op == "ld.param.u64":
            self.set(args[0], np.full(LANES, self.m.base[self.m.p.params.index(args[1].strip("[]"))],
                                      dtype=np.uint64))
            return None
        if base in ("ld", "st", "atom", "red"):
            self.memory(name, args, active)
            return None
        if base == "ldmatrix":
            self._ldmatrix(name, args, self.addr(args[1]))
            return None
        if base in ("mbarrier", "wgmma", "fence", "setmaxnreg") or op.startswith("cp.async.bulk"):
            return self.hopper(op, args, active)
        if base == "cp":
            self.copies(op, args, active)
            return None
        if op == "shfl.sync.idx.b32":
            src = self.val(args[1])
            lane = (self.val(args[2]) & np.uint64(31)).astype(np.int64)
            self.set(args[0], src[lane])
            return None
        if op in MMA:
            self._mma(name, args)
            return None
        if base == "mma":
            raise SimulatorGap(None, "", f"{op} (only {', '.join(sorted(MMA))})")
        if base == "setp" or name[-1] == "pred":
            self._predicate(op, name, args)
            return None
        if base == "selp":       # the predicate operand is a bool array
            t = name[-1]
            self.set(args[0], np.where(self.regs[args[3]], self.val(args[1]), self.val(args[2]))
                     & np.uint64(MASK[bits_of(t)]))
            return None
        self.set(args[0], alu(op, [self.val(x) for x in args[1:]]))
        return None

    def _move(self, name: list[str], args) -> None:
        """``mov``/``cvta``: a predicate copied, a value masked to the type's width."""
        t = name[-1]
        if t == "pred":
            self.set(args[0], self.regs[args[1]].copy())
        else:
            self.set(args[0], self.val(args[1]) & np.uint64(MASK[bits_of(t)]))

    def _predicate(self, op: str, name: list[str], args) -> None:
        """``setp`` (a comparison, optionally combined with a predicate) and the logic of predicates."""
        if name[0] == "setp":
            r = compare(name[1], name[-1], self.val(args[1]), self.val(args[2]))
            if len(name) == 4:           # setp.cmp.and.type p, a, b, q
                q = self.regs[args[3]]
                r = {"and": r & q, "or": r | q, "xor": r ^ q}[name[2]]
            self.set(args[0], r)
            return
        a = [self.regs[x] for x in args[1:]]
        r = {"and": lambda: a[0] & a[1], "or": lambda: a[0] | a[1], "xor": lambda: a[0] ^ a[1],
             "not": lambda: ~a[0]}
        if name[0] not in r:
            raise SimulatorGap(None, "", f"{op}")
        self.set(args[0], r[name[0]]())

    def memory(self, name: list[str], args, active) -> None:
        """``ld``/``st`` (scalar or ``.vN``), ``atom.add.u32`` and ``red.add`` on global or shared memory."""
        base, space = name[0], name[1]
        if space not in ("global", "shared"):
            raise SimulatorGap(None, "", f"{space} memory")
        shared = self.shared if space == "shared" else None
        if base == "st" and name[2].startswith("v"):     # st.space.vN.b32 [a], {r0, ..}: r_j at a + 4j
            size = bits_of(name[3]) // 8
            words = [x.strip() for x in args[1].strip("{}").split(",")]
            where = self.addr(args[0])
            if len(words) != int(name[2][1:]) or any((where % np.uint64(size * len(words)))[active]):
                raise Fault(None, "", "a misaligned or malformed vector store")
            for j, w in enumerate(words):
                self.m.store(where + np.uint64(j * size), self.val(w), size, shared, active)
            return
        if base in ("ld", "st"):
            t = name[2]
            size = bits_of(t) // 8
            if base == "ld":
                got = self.m.load(self.addr(args[1]), size, shared, active)
                self.set(args[0], write(read(got, t), t) if t[0] == "s" else got)
            else:
                self.m.store(self.addr(args[0]), self.val(args[1]), size, shared, active)
            return
        t = name[-1]
        if name[2] != "add":
            raise SimulatorGap(None, "", ".".join(name))
        where = self.addr(args[1] if base == "atom" else args[0])
        value = self.val(args[2] if base == "atom" else args[1])
        size = bits_of(t) // 8
        lanes = np.flatnonzero(active)
        if np.unique(where[lanes]).size == lanes.size:     # distinct addresses: no lane sees another's add
            old = self.m.load(where, size, shared, active)
            self.m.store(where, alu(f"add.{t}", [old, value]), size, shared, active)
            if base == "atom":
                self.set(args[0], np.where(active, old, np.uint64(0)))
            return
        old = np.zeros(LANES, dtype=np.uint64)
        for lane in lanes:        # lanes in order: an atomic's result is some order's
            one = np.zeros(LANES, dtype=bool)
            one[lane] = True
            cur = self.m.load(where, size, shared, one)
            old[lane] = cur[lane]
            new = alu(f"add.{t}", [cur, value])
            self.m.store(where, new, size, shared, one)
        if base == "atom":
            self.set(args[0], old)

    def copies(self, op: str, args, active) -> None:
        if op in ("cp.async.ca.shared.global", "cp.async.cg.shared.global"):
            n = int(args[2])
            src_n = self.val(args[3]) if len(args) > 3 else np.full(LANES, n, dtype=np.uint64)
            dst, src = self.addr(args[0]), self.addr(args[1])
            for part in range(0, n, 8):          # read now, land in shared memory at the wait
                k = min(8, n - part)
                data = self.m.load(src + np.uint64(part), k, None, active & (src_n > 0))
                self.open.append((dst + np.uint64(part), np.where(src_n > 0, data, 0).astype(np.uint64),
                                  k, active.copy()))
        elif op == "cp.async.commit_group":
            self.groups.append(self.open)
            self.open = []
        elif op in ("cp.async.wait_group", "cp.async.wait_all"):
            keep = int(args[0]) if op == "cp.async.wait_group" else 0
            pending = self.groups + ([self.open] if op == "cp.async.wait_all" else [])
            for g in pending[:len(pending) - keep]:
                for dst, data, k, act in g:
                    self.m.store(dst, data, k, self.shared, act)
            self.groups = self.groups[len(self.groups) - keep:] if keep else []
            if op == "cp.async.wait_all":
                self.open = []
        else:
            raise SimulatorGap(None, "", op)

    def _ldmatrix(self, name, args, lane_addr) -> None:
        """ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16: matrix j's 8 rows (16 bytes each) at the
        addresses of lanes 8j..8j+7; lane l gets row l/4, columns 2(l%4), 2(l%4)+1 (transposed: rows
        2(l%4), 2(l%4)+1 of column l/4) of each matrix, low element in the low half."""
        dests = [x.strip() for x in args[0].strip("{}").split(",")]
        trans = "trans" in name
        lane = np.arange(LANES)
        everyone = np.ones(LANES, dtype=bool)
        for j, dest in enumerate(dests):
            rows = lane_addr[8 * j: 8 * j + 8]
            m = np.zeros((8, 8), dtype=np.uint64)       # m[row, column] raw 16-bit elements
            for c in range(8):
                m[:, c] = self.m.load(np.resize(rows + np.uint64(2 * c), LANES), 2, self.shared, everyone)[:8]
            if trans:
                lo, hi = m[2 * (lane % 4), lane // 4], m[2 * (lane % 4) + 1, lane // 4]
            else:
                lo, hi = m[lane // 4, 2 * (lane % 4)], m[lane // 4, 2 * (lane % 4) + 1]
            self.set(dest, lo | (hi << np.uint64(16)))

    def _mma(self, name: list[str], args) -> None:
        """``mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}x2.f32`` and ``m16n8k32...s32.{s8,u8}x2.s32``
        with the PTX ISA's fragments (g = lane / 4, t = lane % 4, e = elements per 32-bit register):
        A register j holds row g (+8 for odd j), columns t*e .. t*e+e-1 (+k/2 for j >= 2); B register j
        rows t*e .. (+k/2 for j = 1), column g; C/D registers 0, 1 row g, columns 2t, 2t+1 (2, 3: row
        g+8). Float products are exact in float64 and the sum rounds once to f32; integers wrap."""
        k = int(name[3].split("k")[1])
        dt, at, bt, ct = name[6:10]
        d, a, b, c = ([x.strip() for x in arg.strip("{}").split(",")] for arg in args)
        lane = np.arange(LANES)
        g, t = lane >> 2, lane % 4

        def elems(reg: str, ty: str) -> list[np.ndarray]:
            bits = bits_of(ty)
            v = self.val(reg)
            out = [read(v >> np.uint64(bits * i), ty) for i in range(32 // bits)]
            return [x.astype(np.float64) if ty in ("f16", "bf16") else x.astype(np.int64) for x in out]
        ea = 32 // bits_of(at)
        A = np.zeros((16, k), dtype=np.float64 if at in ("f16", "bf16") else np.int64)
        for j, reg in enumerate(a):
            for i, x in enumerate(elems(reg, at)):
                A[g + 8 * (j & 1), t * ea + i + (k // 2 if j >= 2 else 0)] = x
        B = np.zeros((k, 8), dtype=A.dtype)
        for j, reg in enumerate(b):
            for i, x in enumerate(elems(reg, bt)):
                B[t * ea + i + (k // 2 if j == 1 else 0), g] = x
        C = np.zeros((16, 8), dtype=A.dtype)
        for i, reg in enumerate(c):
            C[g + (8 if i >= 2 else 0), 2 * t + (i & 1)] = read(self.val(reg), ct)
        D = A @ B + C
        for i in range(4):
            self.regs[d[i]] = write(D[g + (8 if i >= 2 else 0), 2 * t + (i & 1)], dt)


HOPPER_OPS = {"fence.mbarrier_init.release.cluster", "fence.proxy.async.shared::cta", "mbarrier.init.shared::cta.b64",
              "mbarrier.arrive.expect_tx.shared::cta.b64", "mbarrier.try_wait.parity.shared::cta.b64",
              "mbarrier.arrive.shared::cta.b64", "setmaxnreg.inc.sync.aligned.u32", "setmaxnreg.dec.sync.aligned.u32",
              "wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned",
              "cp.async.bulk.commit_group", "cp.async.bulk.wait_group.read"}
_FIXED = {"ret", "bra.uni", "bar.sync", "bar.warp.sync", "fence.acq_rel.gpu", "ld.param.u64", "shfl.sync.idx.b32",
          "cp.async.ca.shared.global", "cp.async.cg.shared.global", "cp.async.commit_group",
          "cp.async.wait_group", "cp.async.wait_all"}


_TENSOR_COPIES = tuple(f"cp.async.bulk.tensor.{rank}d." for rank in range(2, 6))     # the tensor maps' ranks


def supports(op: str) -> bool:
    """Whether :class:`Warp` runs opcode ``op`` (the full PTX opcode, ``cvt.rni.sat.s8.f32``): the
    forms :meth:`Warp.execute` handles itself, else whatever :func:`.alu.alu` or :func:`.alu.compare`
    computes without a :class:`SimulatorGap`."""
    name = op.split(".")
    base = name[0]
    if op in _FIXED or op in MMA or base in ("mov", "cvta", "selp") or name[:3] == ["ldmatrix", "sync", "aligned"]:
        return True
    if op in HOPPER_OPS or name[:2] == ["wgmma", "mma_async"] or op.startswith(_TENSOR_COPIES):
        return True
    if base in ("ld", "st"):
        return name[1] in ("global", "shared")
    if base in ("atom", "red"):
        return name[1] in ("global", "shared") and name[2] == "add"
    if name[-1] == "pred":
        return base in ("and", "or", "xor", "not")
    zeros = np.zeros(LANES, dtype=np.uint64)
    for arity in (2, 1, 3, 4):          # the operand count is the opcode's; a wrong one raises otherwise
        try:
            if base == "setp":
                compare(name[1], name[-1], zeros, zeros)
            else:
                alu(op, [zeros] * arity)
        except SimulatorGap:
            return False
        except (ValueError, IndexError, KeyError):
            continue
        return True
    return False

