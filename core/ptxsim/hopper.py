"""Hopper's asynchronous instructions in the PTX machine, per the PTX ISA (sm_90a).

- ``mbarrier`` objects live at shared addresses; each counts the arrivals its phase still waits for and
  its transaction bytes (signed: bytes may land before they are expected). A phase completes when both
  reach zero; ``try_wait.parity P`` is true once the phase of parity ``P`` completed, i.e. while the
  number of completed phases is odd for ``P = 0`` (even for ``P = 1``).
- ``cp.async.bulk.tensor.Nd`` (tile mode) reads the box its tensor map describes at once and lands it in shared
  memory through the map's swizzle, completing its bytes on the barrier (one legal order of the
  asynchronous copy). The tensor map is the launch's description (what the host encoded), found by the
  parameter whose address the operand holds.
- ``cp.async.bulk.tensor.Nd.global.shared::cta`` (a tensor store) reads its box from shared memory as late as
  the PTX allows: at the ``cp.async.bulk.wait_group.read`` that retires its bulk group, so a kernel that
  writes the shared memory before that stores the new bytes (the race shows as a wrong result). It then
  writes the box's elements inside the tensor. A warp that ends with a group not retired is a fault.
- ``wgmma.mma_async`` reads A and B from shared memory through their matrix descriptors (start address,
  leading and stride byte offsets, 128-byte swizzle) and keeps its accumulators aside until the
  ``wgmma.wait_group`` that retires its group: a read of the registers before then sees the old values.
"""
from __future__ import annotations

import numpy as np

from kdd.core.xesim.errors import Fault, SimulatorGap

from .alu import LANES, read, write

# Tensor-map parameter ``i``'s address (param space, then generic: both the same tag here)
TMAP_TAG = 0xE << 60
_SIZES = {"FLOAT16": 2, "BFLOAT16": 2, "FLOAT32": 4}
_KINDS = {"FLOAT16": "f16", "BFLOAT16": "bf16", "FLOAT32": "f32"}


def swizzle128(addr):
    """A shared address through the 128-byte swizzle: bits 4-6 XOR bits 7-9."""
    return addr ^ (((addr >> 7) & 7) << 4)


class Barriers:
    """The ``mbarrier`` objects of one block, by shared address: ``[expected, pending, tx, completed]``."""

    def __init__(self):
        self.state: dict[int, list[int]] = {}
        self.epoch = 0          # changes whenever a barrier does: the scheduler's progress test

    def _get(self, addr: int) -> list[int]:
        if addr not in self.state:
            raise Fault(None, "", f"an mbarrier operation on shared address {addr} that no mbarrier.init initialized")
        return self.state[addr]

    def init(self, addr: int, count: int) -> None:
        self.state[addr] = [count, count, 0, 0]
        self.epoch += 1

    def arrive(self, addr: int, tx: int = 0) -> None:
        b = self._get(addr)
        b[1] -= 1
        b[2] += tx
        if b[1] < 0:
            raise Fault(None, "", f"more arrivals at the mbarrier at {addr} than its count {b[0]} in one phase")
        self._complete(b)

    def complete_tx(self, addr: int, nbytes: int) -> None:
        b = self._get(addr)
        b[2] -= nbytes
        self._complete(b)

    def _complete(self, b: list[int]) -> None:
        self.epoch += 1
        if b[1] == 0 and b[2] == 0:
            b[1], b[3] = b[0], b[3] + 1

    def done(self, addr: int, parity: int) -> bool:
        return (self._get(addr)[3] % 2) != parity % 2


def _retire(groups: list[list], keep: int, complete) -> None:
    """Completes the oldest of the committed ``groups`` (oldest first) until ``keep`` are left, calling
    ``complete`` on each of their entries in order."""
    while len(groups) > keep:
        for entry in groups.pop(0):
            complete(entry)


class HopperWarp:
    """Mixed into :class:`.machine.Warp`: the sm_90a instructions."""

    def hopper(self, op: str, args, active) -> str | None:
        """Runs Hopper instruction ``op``; ``"wait"`` when a ``try_wait`` found its phase incomplete."""
        name = op.split(".")
        base = name[0]
        if base in ("fence", "setmaxnreg"):
            return None                 # one block at a time, copies land at issue: already ordered; no
            # register file to share out
        if base == "mbarrier":
            return self._mbarrier(name, args, active)
        if op == "cp.async.bulk.commit_group":
            self.bulk_groups.append(self.bulk_open)
            self.bulk_open = []
            return None
        if op == "cp.async.bulk.wait_group.read":
            _retire(self.bulk_groups, int(args[0]), lambda store: store())
            return None
        if base == "cp":
            self._tensor_copy(op, args, active)
            return None
        if op == "wgmma.fence.sync.aligned":
            return None
        if op == "wgmma.commit_group.sync.aligned":
            self.wgmma_groups.append(self.wgmma_open)
            self.wgmma_open = []
            return None
        if op == "wgmma.wait_group.sync.aligned":
            _retire(self.wgmma_groups, int(args[0]), lambda write: self.regs.__setitem__(*write))
            return None
        if base == "wgmma" and name[1] == "mma_async":
            self._wgmma(name, args)
            return None
        raise SimulatorGap(None, "", op)

    def _lanes_of(self, active) -> list[int]:
        return np.flatnonzero(active).tolist()

    def _mbarrier(self, name, args, active) -> str | None:
        bars: Barriers = self.barriers
        verb = name[1]
        if verb == "init":
            addr = self.addr(args[0])
            for lane in self._lanes_of(active):
                bars.init(int(addr[lane]), int(self.val(args[1])[lane]))
            return None
        if verb == "arrive":
            addr = self.addr(args[1])
            tx = self.val(args[2]) if "expect_tx" in name else np.zeros(LANES, dtype=np.uint64)
            for lane in self._lanes_of(active):
                bars.arrive(int(addr[lane]), int(tx[lane]))
            self.set(args[0], np.zeros(LANES, dtype=np.uint64))
            return None
        if verb == "try_wait" and "parity" in name:
            addr, parity = self.addr(args[1]), self.val(args[2])
            ok = np.array([bars.done(int(addr[ln]), int(parity[ln])) if active[ln] else False
                           for ln in range(LANES)])
            self.set(args[0], ok)
            return None if ok[active].all() else "wait"
        raise SimulatorGap(None, "", ".".join(name))

    def _tensor_copy(self, op: str, args, active) -> None:
        name = op.split(".")
        load = (op.startswith(f"cp.async.bulk.tensor.{name[4] if len(name) > 4 else ''}.shared::cluster.global.tile")
                and "complete_tx::bytes" in op)
        store = op == f"cp.async.bulk.tensor.{name[4] if len(name) > 4 else ''}.global.shared::cta.tile.bulk_group"
        if (len(name) < 5 or name[:4] != ["cp", "async", "bulk", "tensor"] or not name[4].endswith("d")
                or not (load or store)):
            raise SimulatorGap(None, "", op)
        inner = args[0 if store else 1].strip("[]")
        tmap_reg, coords = inner.split(",", 1)
        corner = [read(self.val(c.strip()), "s32") for c in coords.strip().strip("{}").split(",")]
        tmap_addr = self.val(tmap_reg.strip())
        slm = self.addr(args[1 if store else 0])
        for lane in self._lanes_of(active):
            m = self.m.tensor_map(int(tmap_addr[lane]))
            if len(corner) != len(m["dims"]) or name[4] != f"{len(m['dims'])}d":
                raise Fault(None, "", f"{op} with {len(corner)} coordinates over a tensor map of "
                                      f"{len(m['dims'])} dims")
            at = [int(c[lane]) for c in corner]
            if store:       # read when its group retires (the latest the PTX allows)
                self.bulk_open.append(lambda m=m, at=at, src=int(slm[lane]): self._copy_box(m, at, src, True))
            else:
                self.barriers.complete_tx(int(self.addr(args[2])[lane]), self._copy_box(m, at, int(slm[lane])))

    def _copy_box(self, m: dict, corner: list[int], at: int, store: bool = False) -> int:
        """The box at ``corner`` of map ``m`` into shared memory at ``at`` (``store``: from shared memory at
        ``at`` into the tensor); its bytes. Elements outside the tensor read as zeros (the map's
        out-of-bounds fill) and are not stored."""
        size = _SIZES[m["dtype"]]
        box, dims = m["box"], m["dims"]
        if m["swizzle"] != 128 or box[0] * size != 128 or at % 1024:
            raise SimulatorGap(None, "", f"a tensor copy of box {box} with swizzle {m['swizzle']} at shared "
                                         f"address {at} (kdd simulates 128-byte rows, 128-byte swizzle, 1024-aligned)")
        param = self.m.p.params.index("p_" + m["buffer"])
        tensor = self.m.buffers[param]
        # element (c, i1, ..) at index [.., i1, c]: rows numbered with i1 fastest
        index = np.meshgrid(*(np.arange(b) for b in reversed(box)), indexing="ij")[::-1]
        inside = np.ones(index[0].shape, dtype=bool)
        start = np.zeros(index[0].shape, dtype=np.int64)
        for d, (i, pitch) in enumerate(zip(index, (size, *m["strides"]))):
            pos = corner[d] + i
            inside &= (pos >= 0) & (pos < dims[d])
            start += pos * pitch
        rows = inside.size // box[0]
        inside, start = inside.reshape(rows, box[0]), np.where(inside, start, 0).reshape(rows, box[0])
        offs = swizzle128(at + np.arange(rows * 128, dtype=np.int64))
        if offs.max() >= self.shared.size:
            raise Fault(None, "", f"a tensor copy past the end of shared memory ({offs.max()} >= {self.shared.size})")
        if store:
            data = self.shared[offs].reshape(rows, box[0] * size)
            for b in range(size):
                tensor[(start + b)[inside]] = data[:, b::size][inside]
                self.m.written[param][(start + b)[inside]] = True
            return rows * 128
        data = np.zeros((rows, box[0] * size), dtype=np.uint8)
        for b in range(size):
            data[:, b::size] = np.where(inside, tensor[start + b], 0)
        self.shared[offs] = data.reshape(-1)
        return rows * 128

    def _operand(self, desc: int, rows: int, cols: int, k_major: bool, kind: str) -> np.ndarray:
        """A ``rows x cols`` operand (``rows`` along M or N, ``cols`` along K) read through ``desc``."""
        start, lead, stride = (desc & 0x3FFF) << 4, ((desc >> 16) & 0x3FFF) << 4, ((desc >> 32) & 0x3FFF) << 4
        if desc >> 62 != 1 or (desc >> 49) & 7:
            raise SimulatorGap(None, "", f"a wgmma descriptor {desc:#x} (kdd simulates the 128-byte swizzle, "
                                         "base offset 0)")
        mn, k = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        if k_major:
            addr = start + (mn // 8) * stride + (mn % 8) * 128 + k * 2
        else:
            addr = start + (mn // 64) * lead + (k // 8) * stride + (k % 8) * 128 + (mn % 64) * 2
        addr = swizzle128(addr)
        if addr.max() + 1 >= self.shared.size:
            raise Fault(None, "", f"a wgmma operand read past the end of shared memory ({addr.max() + 1} >= "
                                  f"{self.shared.size})")
        raw = self.shared[addr].astype(np.uint64) | (self.shared[addr + 1].astype(np.uint64) << np.uint64(8))
        return read(raw, kind).astype(np.float64)

    def _wgmma(self, name, args) -> None:
        """``wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}x2 {d}, descA, descB, scale-d, 1, 1, tA, tB``
        for this warp's 16 rows (its rank in the warpgroup)."""
        shape, dt, at, bt = name[4], name[5], name[6], name[7]
        n = int(shape.split("n")[1].split("k")[0])
        if dt != "f32" or at not in ("f16", "bf16") or at != bt or not shape.startswith("m64") or shape[-3:] != "k16":
            raise SimulatorGap(None, "", ".".join(name))
        d = [x.strip() for x in args[0].strip("{}").split(",")]
        desc_a, desc_b = (int(self.val(a)[0]) for a in args[1:3])
        scale_d = self.regs[args[3]] if args[3] in self.regs else self.val(args[3]).astype(bool)
        imm = [int(a) for a in args[4:8]]
        if imm[:3] != [1, 1, 0]:
            raise SimulatorGap(None, "", f"wgmma with scales/transposes {imm} (kdd simulates 1, 1, 0, 0|1)")
        if len(d) != n // 2:
            raise Fault(None, "", f"wgmma m64n{n}k16 with {len(d)} accumulator registers")
        A = self._operand(desc_a, 64, 16, True, at)
        B = self._operand(desc_b, n, 16, imm[3] == 0, bt).T
        rank = self.warp_rank % 4
        lane = np.arange(LANES)
        pending = dict(r for g in self.wgmma_groups + [self.wgmma_open] for r in g)
        product = A @ B
        writes = []
        for i, reg in enumerate(d):
            row = 16 * rank + lane // 4 + 8 * ((i // 2) % 2)
            col = 8 * (i // 4) + 2 * (lane % 4) + i % 2
            acc = read(pending.get(reg, self.val(reg)), "f32").astype(np.float64)
            value = product[row, col] + np.where(scale_d, acc, 0.0)
            writes.append((reg, write(value, "f32")))
        self.wgmma_open.extend(writes)
