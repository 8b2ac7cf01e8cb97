"""Byte-addressed buffers of the three memory kinds, with bounds checks and race checks.

Every access names bytes by an index array ``idx`` of shape ``(n, k)``: ``n``
is 1 (the same bytes for every thread) or ``T`` (one row per SIMD thread),
``k`` the bytes accessed. ``active`` (``None`` or a bool array broadcastable
to ``(T, k)``) selects the accesses that happen: inactive ones are neither
bounds-checked nor performed. Reads return ``(rows, k)`` uint8 where rows is
``T`` for per-thread memory (registers, SLM) and ``n`` for global memory, so a
uniform global read stays uniform.

* :class:`Registers` - one ``size``-byte array per SIMD thread, ``(T, size)``.
* :class:`SharedMemory` - one array per thread group, ``(groups, size)``. It
  tracks, per byte, which thread of the group wrote or read it since the last
  barrier and raises on a read of another thread's write (RAW), a write over
  another thread's read or write (WAR/WAW): lockstep execution would hide
  those missing barriers.
* :class:`GlobalMemory` - one flat array for the kernel, a view of the
  caller's numpy array; it records which bytes were written.
"""
from __future__ import annotations

import numpy as np

from kdd.core.ir.stmt import MemKind
from kdd.core.ir.types import Scalar, Type

from .errors import InterpError
from .grid import Grid
from .values import bf16_bits, bf16_value, storage_dtype

POISON = 0xFF  # fresh registers and SLM: NaN for every float type, -1 for signed integers


class ElementBytes:
    """The bytes a load or store of ``lanes`` elements of type ``t`` touches, per thread.

    From a scalar byte offset the elements lie ``stride`` bytes apart; from
    a vector offset (one per lane) wherever each lane's offset says.
    ``window`` is true when every thread's elements form one contiguous run.
    """

    def __init__(self, t: Type, lanes: int, stride: int, vector_offset: bool):
        self.size = t.size
        self.vector_offset = vector_offset
        self.window = not vector_offset and (lanes == 1 or stride == t.size)
        self._lane_starts = (np.arange(lanes, dtype=np.int64) * stride)[None, :]
        self._byte_steps = np.arange(t.size, dtype=np.int64)

    def index(self, offset: np.ndarray) -> np.ndarray:
        """``(threads, lanes * size)`` byte indices from the offsets (``(threads,)`` or ``(threads, lanes)``)."""
        starts = offset if self.vector_offset else offset[:, None] + self._lane_starts
        return (starts[:, :, None] + self._byte_steps).reshape(starts.shape[0], -1)


class Memory:
    """A named byte buffer; subclasses define where each thread's bytes live."""

    kind: MemKind

    def __init__(self, name: str, size: int, grid: Grid):
        self.name = name
        self.size = int(size)
        self.grid = grid

    # -- bounds ---------------------------------------------------------------------------------
    def _checked(self, idx: np.ndarray, active, verb: str) -> np.ndarray:
        """``idx`` with inactive out-of-range entries replaced by 0; raises for active ones."""
        oob = (idx < 0) | (idx >= self.size)
        if not oob.any():
            return idx
        bad = oob if active is None else oob & active
        if bad.any():
            pos = np.argwhere(bad)[0]
            row = int(pos[0])
            full = np.broadcast_to(idx, bad.shape)
            who = self.grid.describe(row) if bad.shape[0] == self.grid.threads and bad.shape[0] > 1 \
                else "every thread"
            raise InterpError(f"{who} {verb} byte {int(full[tuple(pos)])} of {self.kind.value} buffer "
                              f"'{self.name}' ({self.size} bytes)")
        return np.where(oob, 0, idx)

    def _rows(self, *arrays) -> int:
        return max(a.shape[0] for a in arrays if a is not None)

    # -- interface ------------------------------------------------------------------------------
    def read(self, idx: np.ndarray, active=None) -> np.ndarray:
        raise NotImplementedError

    def write(self, idx: np.ndarray, data: np.ndarray, active=None) -> None:
        raise NotImplementedError

    def read_window(self, start: int, nbytes: int, rows=None) -> np.ndarray:
        """Bytes ``[start, start + nbytes)`` read by the threads in ``rows`` (None: all)."""
        return self.read(np.arange(start, start + nbytes, dtype=np.int64)[None, :],
                         None if rows is None else rows[:, None])

    def write_window(self, start: int, data: np.ndarray, rows) -> None:
        """Writes ``data`` (``(1|T, nbytes)``) at ``start`` for the threads in ``rows`` (None: all)."""
        idx = np.arange(start, start + data.shape[-1], dtype=np.int64)[None, :]
        self.write(idx, data, None if rows is None else rows[:, None])

    def atomic_add(self, offs: np.ndarray, values: np.ndarray, t: Type, active=None,
                   fetch: bool = False) -> np.ndarray | None:
        """``memory[offs] += values`` per element (``(rows, elems)`` byte offsets); with ``fetch``, the
        memory value each element found, ``(rows, elems)`` (0 where inactive)."""
        raise InterpError(f"atomic add on {self.kind.value} buffer '{self.name}' is not supported")


class Registers(Memory):
    """A register buffer: ``size`` bytes per SIMD thread."""

    kind = MemKind.GRF

    def __init__(self, name: str, size: int, grid: Grid):
        super().__init__(name, size, grid)
        self.data = np.full((grid.threads, self.size), POISON, dtype=np.uint8)

    def read(self, idx, active=None):
        idx = self._checked(idx, active, "reads")
        if idx.shape[0] == 1:
            return self.data[:, idx[0]]
        return np.take_along_axis(self.data, idx, axis=1)

    def write(self, idx, data, active=None):
        idx = self._checked(idx, active, "writes")
        T = self.grid.threads
        if active is None and idx.shape[0] == 1:
            self.data[:, idx[0]] = data
            return
        shape = (T, idx.shape[1])
        act = np.ones(shape, bool) if active is None else np.broadcast_to(active, shape)
        r, c = np.nonzero(act)
        self.data[r, np.broadcast_to(idx, shape)[r, c]] = np.broadcast_to(data, shape)[r, c]

    def read_window(self, start, nbytes, rows=None):
        # Registers of masked-off threads may be read: nothing observable happens.
        if start < 0 or start + nbytes > self.size:
            self._checked(np.array([[start if start < 0 else start + nbytes - 1]]), None, "reads")
        return self.data[:, start:start + nbytes]

    def write_window(self, start, data, rows):
        n = data.shape[-1]
        if start < 0 or start + n > self.size:
            self._checked(np.array([[start if start < 0 else start + n - 1]]), None, "writes")
        if rows is None:
            self.data[:, start:start + n] = data
        else:
            self.data[rows, start:start + n] = data if data.shape[0] == 1 else data[rows]


class SharedMemory(Memory):
    """Shared local memory: ``size`` bytes per thread group, with race detection.

    Per byte it keeps the local id of the thread that wrote it and of the
    thread(s) that read it since the last barrier. Reads are only recorded
    (cheap) and folded into the reader map when a write comes before the next
    barrier, so the common epochs (only writes, or only reads, between two
    barriers) pay almost nothing for the checks.
    """

    kind = MemKind.SLM

    def __init__(self, name: str, size: int, grid: Grid):
        super().__init__(name, size, grid)
        G = grid.launch.groups
        self.data = np.full((G, self.size), POISON, dtype=np.uint8)
        # Per byte: local id of the thread that wrote / read it since the last barrier
        # (-1 nobody, -2 several readers).
        self.writer = np.full((G, self.size), -1, dtype=np.int16)
        self.reader = np.full((G, self.size), -1, dtype=np.int16)
        self._written = False        # the writer map has entries
        self._read = False           # the reader map has entries
        self._pending: list = []     # reads not yet folded into the reader map
        self._base = grid.group * self.size
        # Per thread: it wrote SLM since its last ``fence.slm`` (a barrier does not order such writes).
        self.unfenced = np.zeros(grid.threads, dtype=bool)

    def fence(self, active) -> None:
        """A ``fence.slm`` by the ``active`` threads (bool per thread; None: all) completes their writes."""
        if active is None:
            self.unfenced[:] = False
        else:
            self.unfenced[active] = False

    def unfenced_thread(self, groups: np.ndarray) -> int | None:
        """A thread of ``groups`` (bool per group) with SLM writes no fence completed, if any."""
        bad = self.unfenced & groups[self.grid.group]
        return int(np.argmax(bad)) if bad.any() else None

    def barrier(self, groups: np.ndarray) -> None:
        """Orders everything before against everything after in ``groups`` (bool per group)."""
        if groups.all():
            self._pending.clear()
            if self._written:
                self.writer.fill(-1)
            if self._read:
                self.reader.fill(-1)
            self._written = self._read = False
            return
        self._fold_reads()
        self.writer[groups] = -1
        self.reader[groups] = -1

    def _flat(self, idx, active):
        """Flat positions, local thread ids and thread rows of the active accesses."""
        T = self.grid.threads
        shape = (T, idx.shape[1])
        if active is None:
            flat = (self._base[:, None] + idx).reshape(-1)
            r = np.repeat(np.arange(T), shape[1])
        else:
            r, k = np.nonzero(np.broadcast_to(active, shape))
            flat = self._base[r] + np.broadcast_to(idx, shape)[r, k]
        return flat, self.grid.local[r].astype(np.int16), r

    def _race(self, kind: str, pos, rows, other) -> InterpError:
        byte = int(pos % self.size)
        return InterpError(f"SLM race on '{self.name}' byte {byte}: {self.grid.describe(int(rows))} "
                           f"{kind} thread {int(other)} of its group since the last barrier")

    def _fold_reads(self) -> None:
        reader = self.reader.reshape(-1)
        for idx, active in self._pending:
            flat, lt, _ = self._flat(idx, active)
            cur = reader[flat]
            several = (cur == -2) | ((cur >= 0) & (cur != lt))
            fresh = cur == -1
            reader[flat[fresh]] = lt[fresh]
            several |= fresh & (reader[flat] != lt)  # two threads read it in this very access
            reader[flat[several]] = -2
            self._read = True
        self._pending.clear()

    def read(self, idx, active=None):
        idx = self._checked(idx, active, "reads")
        if self._written:
            flat, lt, rows = self._flat(idx, active)
            w = self.writer.reshape(-1)[flat]
            bad = (w >= 0) & (w != lt)
            if bad.any():
                i = int(np.argmax(bad))
                raise self._race("reads a byte written by", flat[i], rows[i], w[i])
        self._pending.append((idx, active))
        return self.data[self.grid.group[:, None], idx]

    def write(self, idx, data, active=None):
        idx = self._checked(idx, active, "writes")
        flat, lt, rows = self._flat(idx, active)
        if self._pending:
            self._fold_reads()
        writer, reader = self.writer.reshape(-1), self.reader.reshape(-1)
        checks = []
        if self._written:
            w = writer[flat]
            checks.append(((w >= 0) & (w != lt), "overwrites a byte written by", w))
        if self._read:
            r = reader[flat]
            checks.append(((r == -2) | ((r >= 0) & (r != lt)), "overwrites a byte read by", r))
        for bad, what, other in checks:
            if bad.any():
                i = int(np.argmax(bad))
                raise self._race(what, flat[i], rows[i], other[i] if other[i] >= 0 else -1)
        writer[flat] = lt
        self._written = True
        self.unfenced[rows] = True
        clash = writer[flat] != lt
        if clash.any():
            i = int(np.argmax(clash))
            raise self._race("writes the same byte in one access as", flat[i], rows[i], writer[flat[i]])
        T = self.grid.threads
        shape = (T, idx.shape[1])
        src = np.broadcast_to(data, shape)
        if active is None:
            values = src.reshape(-1)
        else:
            rr, kk = np.nonzero(np.broadcast_to(active, shape))
            values = src[rr, kk]
        self.data.reshape(-1)[flat] = values

    def atomic_add(self, offs, values, t, active=None, fetch=False):
        G = self.grid.launch.groups
        T = self.grid.threads
        shape = (T, offs.shape[1])
        rows = np.broadcast_to(self.grid.group[:, None], shape)
        return _atomic_add(self, self.data.reshape(-1), np.broadcast_to(offs, shape) + rows * self.size,
                           np.broadcast_to(values, shape), t, active, G * self.size, fetch)


class GlobalMemory(Memory):
    """A kernel argument: a flat byte view of the caller's array; ``written`` marks stored bytes."""

    kind = MemKind.GLOBAL

    def __init__(self, name: str, array: np.ndarray, grid: Grid):
        if not array.flags.c_contiguous:
            raise InterpError(f"global buffer '{name}' must be a C-contiguous array")
        self.data = array.reshape(-1).view(np.uint8)
        super().__init__(name, self.data.size, grid)
        self.written = np.zeros(self.size, dtype=bool)

    def read(self, idx, active=None):
        idx = self._checked(idx, active, "reads")
        return self.data[idx]

    def write(self, idx, data, active=None):
        idx = self._checked(idx, active, "writes")
        rows = self._rows(idx, data, active)
        shape = (rows, idx.shape[1])
        full = np.broadcast_to(idx, shape)
        src = np.broadcast_to(data, shape)
        if active is None:
            self.data[full] = src
            self.written[full] = True
            return
        act = np.broadcast_to(active, shape)
        self.data[full[act]] = src[act]
        self.written[full[act]] = True

    def atomic_add(self, offs, values, t, active=None, fetch=False):
        rows = self._rows(offs, values, active)
        shape = (rows, offs.shape[1])
        return _atomic_add(self, self.data, np.broadcast_to(offs, shape), np.broadcast_to(values, shape),
                           t, active, self.size, fetch)


def _atomic_add(mem: Memory, flat: np.ndarray, offs, values, t: Type, active, total: int,
                fetch: bool = False) -> np.ndarray | None:
    """``flat[offs] += values`` element-wise in type ``t``, duplicates accumulating (np.add.at).

    ``offs`` are byte offsets into ``flat`` (already per row); they must be aligned to the type.
    bf16 sums are accumulated in float32 and rounded once per call. With ``fetch`` (integers only) the
    adds to one element happen one at a time in thread (row) order, and each element gets the value
    it found: ``(rows, elems)``, 0 where inactive.
    """
    es = t.size
    act = np.ones(offs.shape, bool) if active is None else np.broadcast_to(active, offs.shape)
    found = np.zeros(offs.shape, dtype=storage_dtype(t)) if fetch else None
    if fetch and not t.is_int:
        raise InterpError(f"atomic fetch-add of {t} on '{mem.name}': only integers return their old values")
    offs, values = offs[act], values[act]
    if offs.size == 0:
        return found
    local = offs % mem.size if isinstance(mem, SharedMemory) else offs
    mem._checked(np.concatenate([local, local + es - 1])[None, :], None, "atomically adds to")
    if (offs % es).any():
        bad = int(local[np.argmax(offs % es != 0)])
        raise InterpError(f"atomic add of {t} at byte {bad} of '{mem.name}' is not {es}-byte aligned")
    view = flat[: (total // es) * es].view(storage_dtype(t))
    elems = offs // es
    if fetch:
        order = np.argsort(elems, kind="stable")   # row-major: thread order within each element
        ordered, adds = elems[order], values[order].astype(np.int64)
        before = np.cumsum(adds) - adds
        before -= before[np.searchsorted(ordered, ordered, side="left")]  # adds of earlier threads only
        old = np.empty(elems.shape, dtype=np.int64)
        old[order] = view[ordered].astype(np.int64) + before
        found[act] = old.astype(found.dtype)      # wraps around, as the hardware's adds do
    if t.scalar is Scalar.BF16:
        touched, inv = np.unique(elems, return_inverse=True)
        acc = bf16_value(view[touched]).astype(np.float32)
        np.add.at(acc, inv, values.astype(np.float32))
        view[touched] = bf16_bits(acc)
    else:
        np.add.at(view, elems, values.astype(view.dtype))
    if isinstance(mem, GlobalMemory):
        mem.written[(offs[:, None] + np.arange(es)).reshape(-1)] = True
    return found
