"""A small PTX simulator for tests: runs the instructions kdd's PTX generator emits, per warp (32 lanes as
numpy arrays), with warps of a block interleaved at ``bar.sync``. It reads only the PTX text, so it is an
oracle independent of the generator (the semantics follow the PTX ISA manual; ``cp.async`` reads global
memory at once and writes shared memory only at the ``cp.async.wait_group`` / ``wait_all`` that
completes it, so a read before the wait sees the old bytes). Registers hold raw bits in ``uint64``
arrays; predicates are bool arrays.
"""
from __future__ import annotations

import re

import numpy as np

LANES = 32
MASK = {8: 0xFF, 16: 0xFFFF, 32: 0xFFFFFFFF, 64: 0xFFFFFFFFFFFFFFFF}


class SimError(Exception):
    pass


def _bits(t: str) -> int:
    return int(re.sub(r"\D", "", t) or 32)


def _signed(v: np.ndarray, bits: int) -> np.ndarray:
    v = v.astype(np.uint64) & np.uint64(MASK[bits])
    out = v.astype(np.int64) if bits == 64 else v.astype(np.int64)
    if bits < 64:
        out = np.where(out >= (1 << (bits - 1)), out - (1 << bits), out)
    return out


def _u(v, bits: int) -> np.ndarray:
    return (np.asarray(v).astype(np.int64).astype(np.uint64)) & np.uint64(MASK[bits])


def _f32(v) -> np.ndarray:
    return (np.asarray(v).astype(np.uint64) & np.uint64(MASK[32])).astype(np.uint32).view(np.float32)


def _from_f32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)


class Program:
    def __init__(self, text: str):
        self.params = re.findall(r"\.param \.u64 (\w+)", text)
        self.ops: list[tuple] = []
        self.labels: dict[str, int] = {}
        body = text[text.index("{", text.index(".entry")) + 1:]
        for raw in body.splitlines():
            line = raw.strip()
            if not line or line.startswith((".loc", ".reg", "}", "//")):
                continue
            if line.endswith(":"):
                self.labels[line[:-1]] = len(self.ops)
                continue
            line = line.rstrip(";")
            pred = None
            if line.startswith("@"):
                pred, line = line.split(None, 1)
                pred = pred[1:]
            parts = line.split(None, 1)
            self.ops.append((pred, parts[0], _operands(parts[1]) if len(parts) > 1 else []))


def _operands(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


class Machine:
    """Global memory: each kernel argument a byte array at its own base address."""

    def __init__(self, program: Program, buffers: list[np.ndarray]):
        self.p = program
        self.buffers = buffers
        self.base = [(i + 1) << 40 for i in range(len(buffers))]

    def _mem(self, addr: np.ndarray, shared: np.ndarray | None):
        if shared is not None:
            return shared, addr.astype(np.int64)
        idx = (addr >> np.uint64(40)).astype(np.int64) - 1
        if len(set(idx.tolist())) != 1 or not 0 <= idx[0] < len(self.buffers):
            raise SimError(f"addresses outside the arguments: {addr[:4]}")
        return self.buffers[int(idx[0])], (addr & np.uint64((1 << 40) - 1)).astype(np.int64)

    def load(self, addr, size: int, shared, active):
        if not active.any():
            return np.zeros(LANES, dtype=np.uint64)
        mem, off = self._mem(addr[active], shared)
        if off.size and (off.min() < 0 or off.max() + size > mem.size):
            raise SimError(f"load out of bounds: {off.min()}..{off.max() + size} of {mem.size}")
        out = np.zeros(LANES, dtype=np.uint64)
        val = np.zeros(off.size, dtype=np.uint64)
        for b in range(size):
            val |= mem[off + b].astype(np.uint64) << np.uint64(8 * b)
        out[active] = val
        return out

    def store(self, addr, value, size: int, shared, active):
        if not active.any():
            return
        mem, off = self._mem(addr[active], shared)
        if off.size and (off.min() < 0 or off.max() + size > mem.size):
            raise SimError(f"store out of bounds: {off.min()}..{off.max() + size} of {mem.size}")
        v = value[active]
        for b in range(size):
            mem[off + b] = ((v >> np.uint64(8 * b)) & np.uint64(0xFF)).astype(np.uint8)

    def run(self, grid, block, shared_bytes: int) -> None:
        warps_per_block = block[0] // LANES * block[1] * block[2]
        for bz in range(grid[2]):
            for by in range(grid[1]):
                for bx in range(grid[0]):
                    shared = np.full(max(shared_bytes, 1), 0xFF, dtype=np.uint8)
                    warps = [self._warp((bx, by, bz), w, block, shared) for w in range(warps_per_block)]
                    live = list(warps)
                    while live:
                        live = [w for w in live if next(w, "done") != "done"]

    def _warp(self, ctaid, w, block, shared):
        tid_x = (w % (block[0] // LANES)) * LANES + np.arange(LANES)
        rest = w // (block[0] // LANES)
        special = {"%tid.x": tid_x, "%tid.y": np.full(LANES, rest % block[1]),
                   "%tid.z": np.full(LANES, rest // block[1]),
                   "%ctaid.x": np.full(LANES, ctaid[0]), "%ctaid.y": np.full(LANES, ctaid[1]),
                   "%ctaid.z": np.full(LANES, ctaid[2]), "kdd_smem": np.zeros(LANES)}
        regs: dict[str, np.ndarray] = {}
        ops, labels = self.p.ops, self.p.labels
        pc = 0
        steps = 0
        state = {"active": None}
        copies = {"open": [], "groups": []}     # cp.async copies: not committed yet, committed groups

        def val(a, bits=64):
            if a in regs:
                return regs[a]
            if a in special:
                return _u(special[a], 64)
            if a.startswith("%"):       # never written: poison, as fresh IR registers are
                return np.full(LANES, MASK[32], dtype=np.uint64)
            if a.startswith("0f"):
                return np.full(LANES, int(a[2:], 16), dtype=np.uint64)
            return _u(np.full(LANES, int(a, 0)), bits)

        def set_(name, value):
            act = state["active"]
            if act is None:
                regs[name] = value
            else:
                old = regs.get(name)
                regs[name] = np.where(act, value, old if old is not None else np.zeros(LANES, dtype=value.dtype))

        def addr(a):
            inner = a.strip("[]")
            m = re.match(r"([%\w$.]+)(?:\+(-?\d+))?$", inner)
            return val(m.group(1)) + np.uint64(int(m.group(2) or 0) & MASK[64])

        while True:
            pred, op, args = ops[pc]
            pc += 1
            steps += 1
            if steps > 50_000_000:
                raise SimError("too many steps")
            active = np.ones(LANES, dtype=bool)
            state["active"] = None
            if pred is not None:
                neg = pred.startswith("!")
                active = regs[pred.lstrip("!")].copy()
                if neg:
                    active = ~active
                state["active"] = active

            name = op.split(".")
            base = name[0]
            if base == "ret":
                return
            if base == "bra":
                if active.any():
                    if not active.all():
                        raise SimError(f"divergent bra.uni at {pc - 1}")
                    pc = labels[args[0]]
                continue
            if base == "bar":
                yield "barrier"
                continue
            if base in ("mov", "cvta"):
                t = name[-1]
                set_(args[0], val(args[1]) & np.uint64(MASK[_bits(t) if t != "pred" else 64]))
                continue
            if op == "ld.param.u64":
                set_(args[0], np.full(LANES, self.base[self.p.params.index(args[1].strip("[]"))], dtype=np.uint64))
                continue
            if base == "st" and name[2].startswith("v"):     # st.space.vN.b32 [a], {r0, ..}: r_j at a + 4j
                shared_mem = shared if name[1] == "shared" else None
                size = _bits(name[3]) // 8
                words = [x.strip() for x in args[1].strip("{}").split(",")]
                if len(words) != int(name[2][1:]) or any((addr(args[0]) % (size * len(words)))[active]):
                    raise SimError(f"misaligned or malformed vector store: {op} {args}")
                for j, w in enumerate(words):
                    self.store(addr(args[0]) + np.uint64(j * size), val(w), size, shared_mem, active)
                continue
            if base in ("ld", "st"):
                shared_mem = shared if name[1] == "shared" else None
                size = _bits(name[2]) // 8
                if base == "ld":
                    set_(args[0], self.load(addr(args[1]), size, shared_mem, active))
                else:
                    self.store(addr(args[0]), val(args[1]), size, shared_mem, active)
                continue
            if base == "ldmatrix":
                self._ldmatrix(name, args, addr(args[1]), shared, set_)
                continue
            if op in ("cp.async.ca.shared.global", "cp.async.cg.shared.global"):
                n = int(args[2])
                src_n = val(args[3]) if len(args) > 3 else np.full(LANES, n, dtype=np.uint64)
                dst, src = addr(args[0]), addr(args[1])
                for part in range(0, n, 8):          # read now, land in shared memory at the wait
                    k = min(8, n - part)
                    data = self.load(src + np.uint64(part), k, None, active & (src_n > 0))
                    copies["open"].append((dst + np.uint64(part), np.where(src_n > 0, data, 0).astype(np.uint64),
                                           k, active.copy()))
                continue
            if op == "cp.async.commit_group":
                copies["groups"].append(copies["open"])
                copies["open"] = []
                continue
            if op in ("cp.async.wait_group", "cp.async.wait_all"):
                keep = int(args[0]) if op == "cp.async.wait_group" else 0
                groups = copies["groups"] + ([copies["open"]] if op == "cp.async.wait_all" else [])
                done = groups[:len(groups) - keep] if keep else groups
                for g in done:
                    for dst, data, k, act in g:
                        self.store(dst, data, k, shared, act)
                copies["groups"] = copies["groups"][len(copies["groups"]) - keep:] if keep else []
                if op == "cp.async.wait_all":
                    copies["open"] = []
                continue
            if base == "shfl":
                src = val(args[1])
                lane = (val(args[2]) & np.uint64(31)).astype(np.int64)
                set_(args[0], src[lane])
                continue
            if base == "mma":
                self._mma(args, regs)
                continue
            if base == "setp":
                cmp, t = name[1], name[-1]
                bits = _bits(t)
                a, b = val(args[1]), val(args[2])
                if t.startswith("f"):
                    x, y = _f32(a).astype(np.float64), _f32(b).astype(np.float64)
                elif t.startswith("s"):
                    x, y = _signed(a, bits), _signed(b, bits)
                else:
                    x, y = a & np.uint64(MASK[bits]), b & np.uint64(MASK[bits])
                r = {"eq": x == y, "ne": x != y, "neu": x != y, "lt": x < y, "le": x <= y, "gt": x > y,
                     "ge": x >= y}[cmp]
                if len(name) == 4:           # setp.cmp.and.type p, a, b, q
                    r = r & regs[args[3]] if name[2] == "and" else r | regs[args[3]]
                set_(args[0], r)
                continue
            if name[-1] == "pred":
                a = [regs[x] for x in args[1:]]
                r = {"and": lambda: a[0] & a[1], "or": lambda: a[0] | a[1], "not": lambda: ~a[0],
                     "mov": lambda: a[0]}[base]()
                set_(args[0], r)
                continue
            set_(args[0], self._alu(op, [val(x) for x in args[1:]]))

    @staticmethod
    def _alu(op: str, v: list[np.ndarray]) -> np.ndarray:
        name = op.split(".")
        base, t = name[0], name[-1]
        bits = _bits(t)
        if op == "cvt.rn.f16.f32":
            return _f32(v[0]).astype(np.float16).view(np.uint16).astype(np.uint64)
        if t == "f32":
            x = [_f32(a) for a in v]
            r = {"max": lambda: np.maximum(x[0], x[1]), "mul": lambda: x[0] * x[1], "add": lambda: x[0] + x[1],
                 "fma": lambda: (x[0].astype(np.float64) * x[1] + x[2]).astype(np.float32)}[base]()
            return _from_f32(r)
        if op in ("cvt.u32.u16", "cvt.u16.u32"):
            return v[0] & np.uint64(0xFFFF)
        if base == "selp":
            return np.where(v[2].astype(bool) if v[2].dtype == bool else v[2] != 0, v[0], v[1])
        if base == "bfe":
            pos, ln = v[1].astype(np.int64), v[2].astype(np.int64)
            r = (v[0] >> v[1]) & ((np.uint64(1) << v[2]) - np.uint64(1))
            if t == "s32":
                r = _u(np.where(r >> (ln - 1).astype(np.uint64) & np.uint64(1), r.astype(np.int64) - (1 << ln), r), 32)
            return r & np.uint64(MASK[32]) if pos.size else r
        if base == "bfi":
            m = ((np.uint64(1) << v[3]) - np.uint64(1)) << v[2]
            return ((v[1] & ~m) | ((v[0] << v[2]) & m)) & np.uint64(MASK[32])
        if base == "mad" and name[1] == "wide":
            return _u(_signed(v[0], 32) * _signed(v[1], 32) + _signed(v[2], 64), 64)
        if base == "mul" and name[1] == "hi" and t == "u32":     # u32 x u32 fits in 64 bits
            m = np.uint64(MASK[32])
            return ((v[0] & m) * (v[1] & m)) >> np.uint64(32)
        signed = t.startswith("s")
        x = [_signed(a, bits) if signed else (a & np.uint64(MASK[bits])).astype(np.int64) for a in v]
        if base in ("shl", "shr"):
            amount = np.minimum(v[1].astype(np.int64), bits)
            if base == "shl":
                return _u(np.where(amount >= bits, 0, (v[0] & np.uint64(MASK[bits])) << amount.astype(np.uint64)), bits)
            if signed:
                return _u(x[0] >> np.minimum(amount, bits - 1), bits)
            return _u(np.where(amount >= bits, 0, x[0] >> amount), bits)
        if base in ("and", "or", "xor"):
            r = {"and": v[0] & v[1], "or": v[0] | v[1], "xor": v[0] ^ v[1]}[base]
            return r & np.uint64(MASK[bits])
        if base == "div":
            q = np.where(x[1] == 0, 0, np.abs(x[0]) // np.where(x[1] == 0, 1, np.abs(x[1])))
            return _u(q * np.sign(x[0]) * np.sign(x[1]), bits)
        if base == "rem":
            q = np.where(x[1] == 0, 0, np.abs(x[0]) % np.where(x[1] == 0, 1, np.abs(x[1])))
            return _u(q * np.sign(x[0]), bits)
        r = {"add": lambda: x[0] + x[1], "sub": lambda: x[0] - x[1], "mul": lambda: x[0] * x[1],
             "mad": lambda: x[0] * x[1] + x[2], "min": lambda: np.minimum(x[0], x[1]),
             "max": lambda: np.maximum(x[0], x[1]), "neg": lambda: -x[0]}[base]()
        return _u(r, bits)

    def _ldmatrix(self, name, args, lane_addr, shared, set_) -> None:
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
                m[:, c] = self.load(np.resize(rows + np.uint64(2 * c), LANES), 2, shared, everyone)[:8]
            if trans:
                lo, hi = m[2 * (lane % 4), lane // 4], m[2 * (lane % 4) + 1, lane // 4]
            else:
                lo, hi = m[lane // 4, 2 * (lane % 4)], m[lane // 4, 2 * (lane % 4) + 1]
            set_(dest, lo | (hi << np.uint64(16)))

    @staticmethod
    def _mma(args, regs) -> None:
        """mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 with the PTX fragment layouts."""
        d, a, b, c = ([x.strip() for x in arg.strip("{}").split(",")] for arg in args)
        lane = np.arange(LANES)
        g, t = lane >> 2, lane % 4

        def halves(name):
            v = regs[name] & np.uint64(MASK[32])
            lo = (v & np.uint64(0xFFFF)).astype(np.uint16).view(np.float16).astype(np.float64)
            hi = (v >> np.uint64(16)).astype(np.uint16).view(np.float16).astype(np.float64)
            return lo, hi
        A = np.zeros((16, 16))
        for i in range(8):
            lo_hi = halves(a[i // 2])[i % 2]
            row = g + (8 if i in (2, 3, 6, 7) else 0)
            col = 2 * t + (i & 1) + (8 if i >= 4 else 0)
            A[row, col] = lo_hi
        B = np.zeros((16, 8))
        for i in range(4):
            B[2 * t + (i & 1) + (8 if i >= 2 else 0), g] = halves(b[i // 2])[i % 2]
        C = np.zeros((16, 8))
        for i in range(4):
            C[g + (8 if i >= 2 else 0), 2 * t + (i & 1)] = _f32(regs[c[i]]).astype(np.float64)
        D = (A @ B + C).astype(np.float32)
        for i in range(4):
            regs[d[i]] = _from_f32(D[g + (8 if i >= 2 else 0), 2 * t + (i & 1)])


def simulate(ptx: str, launch: dict, buffers: list[np.ndarray]) -> None:
    """Run the PTX kernel on ``buffers`` (byte arrays, in parameter order; modified in place)."""
    Machine(Program(ptx), buffers).run(launch["grid"], launch["block"], launch["shared_bytes"])
