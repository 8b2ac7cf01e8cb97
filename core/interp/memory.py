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
from numpy.lib.stride_tricks import sliding_window_view

from kdd.core.ir.stmt import MemKind
from kdd.core.ir.types import Scalar, Type

from .errors import InterpError
from .grid import Grid
from .values import bf16_bits, bf16_value, storage_dtype

POISON = 0xFF  # fresh registers and SLM: NaN for every float type, -1 for signed integers
_NO_READER = np.iinfo(np.int16).max  # SLM reader_lo of a byte nobody read: above every local id
_PENDING_READS = 64   # SLM reads kept unfolded at most (a write checks each one's span)


def _full(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``a`` broadcast to ``shape`` (np.broadcast_to costs microseconds even when there is nothing to do)."""
    return a if a.shape == shape else np.broadcast_to(a, shape)


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
        self._views: dict = {}

    # -- bounds ---------------------------------------------------------------------------------
    def _checked(self, idx: np.ndarray, active, verb: str) -> np.ndarray:
        """``idx`` with inactive out-of-range entries replaced by 0; raises for active ones."""
        return self._checked_span(idx, active, verb)[0]

    def _checked_span(self, idx: np.ndarray, active, verb: str) -> tuple[np.ndarray, int, int]:
        """:meth:`_checked`'s index and its lowest and highest byte (out-of-range inactive ones as 0)."""
        if idx.size == 0:
            return idx, 0, -1
        lo, hi = int(np.minimum.reduce(idx, axis=None)), int(np.maximum.reduce(idx, axis=None))
        if lo >= 0 and hi < self.size:
            return idx, lo, hi
        oob = (idx < 0) | (idx >= self.size)
        bad = oob if active is None else oob & active
        if bad.any():
            pos = np.argwhere(bad)[0]
            row = int(pos[0])
            full = np.broadcast_to(idx, bad.shape)
            who = self.grid.describe(row) if bad.shape[0] == self.grid.threads and bad.shape[0] > 1 \
                else "every thread"
            raise InterpError(f"{who} {verb} byte {int(full[tuple(pos)])} of {self.kind.value} buffer "
                              f"'{self.name}' ({self.size} bytes)")
        idx = np.where(oob, 0, idx)
        return idx, int(idx.min()), int(idx.max())

    def _rows(self, *arrays) -> int:
        return max(a.shape[0] for a in arrays if a is not None)

    # -- interface ------------------------------------------------------------------------------
    def read(self, idx: np.ndarray, active=None) -> np.ndarray:
        raise NotImplementedError

    def write(self, idx: np.ndarray, data: np.ndarray, active=None) -> None:
        raise NotImplementedError

    def read_rows(self, off: np.ndarray, nbytes: int, rows=None) -> np.ndarray:
        """Bytes ``[off[t], off[t] + nbytes)`` of every thread ``t`` (``off``: ``(T,)``), read by the threads
        in ``rows`` (bool per thread; None: all); the same as :meth:`read` of those indices."""
        return self.read(off[:, None] + np.arange(nbytes, dtype=np.int64), None if rows is None else rows[:, None])

    def write_rows(self, off: np.ndarray, data: np.ndarray, rows) -> None:
        """Writes ``data`` (``(1|T, nbytes)``) at ``off[t]`` (``(T,)``) for the threads in ``rows`` (None: all);
        the same as :meth:`write` of those indices."""
        idx = off[:, None] + np.arange(data.shape[-1], dtype=np.int64)
        self.write(idx, data, None if rows is None else rows[:, None])

    def _inside(self, off: np.ndarray, nbytes: int) -> tuple[int, int] | None:
        """The lowest and highest byte of the windows ``[off, off + nbytes)``, None unless all of them lie
        in the buffer (callers then take the byte path, which raises for active threads only)."""
        if off.size == 0 or nbytes < 1 or nbytes > self.size:
            return None
        lo, hi = int(off.min()), int(off.max()) + nbytes - 1
        return (lo, hi) if lo >= 0 and hi < self.size else None

    def _windows(self, a: np.ndarray, nbytes: int, writeable: bool = False) -> np.ndarray:
        """The view of every ``nbytes``-window of ``a`` along its last axis (cached: ``a`` is one of this
        buffer's arrays, updated in place)."""
        key = (id(a), nbytes, writeable)
        view = self._views.get(key)
        if view is None:
            view = self._views[key] = sliding_window_view(a, nbytes, axis=-1, writeable=writeable)
        return view

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
        self._threads = np.arange(grid.threads)

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

    def read_rows(self, off, nbytes, rows=None):
        if self._inside(off, nbytes) is None or off.shape[0] != self.grid.threads:
            return super().read_rows(off, nbytes, rows)
        return self._windows(self.data, nbytes)[self._threads, off]

    def write_rows(self, off, data, rows):
        n = data.shape[-1]
        if self._inside(off, n) is None or off.shape[0] != self.grid.threads:
            super().write_rows(off, data, rows)
            return
        # Each thread's window is its own bytes: no two writes meet.
        view = self._windows(self.data, n, writeable=True)
        data = _full(data, (self.grid.threads, n))
        if rows is None:
            view[self._threads, off] = data
        else:
            view[self._threads[rows], off[rows]] = data[rows]

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


class _Accesses:
    """The active accesses of one SLM access of index ``idx`` (``(1|T, k)``), in row-major order.

    ``flat`` is each one's position in the buffer's ``groups * size`` bytes, ``lt`` the local id of
    its thread (int16), ``rows`` the threads taking part. An activity that selects whole columns (the
    same bytes for every thread) or whole threads is applied by slicing; only an activity that differs
    per thread and byte pays for ``np.nonzero``.
    """

    __slots__ = ("flat", "lt", "rows", "_shape", "_cols", "_every", "_each", "_width")

    def __init__(self, mem: SharedMemory, idx: np.ndarray, active):
        T, k = mem.grid.threads, idx.shape[1]
        self._shape, self._cols, self._every, self._each = (T, k), None, False, None
        if active is not None and active.shape[0] == 1:     # the same bytes for every thread
            cols = np.broadcast_to(active, (1, k))[0]
            if not cols.all():
                self._cols, idx = cols, idx[:, cols]
            active = None
        if active is None:
            self._every, self._width = True, idx.shape[1]
            self.rows = mem.threads if self._width else mem.threads[:0]
            self.flat = (mem.base_col + idx).reshape(-1)
            self.lt = mem.local_ids(self._width)
        elif active.shape[1] == 1:                           # whole threads
            self.rows, self._width = np.flatnonzero(active[:, 0]), k
            self.flat = (mem.base_col[self.rows] + (idx if idx.shape[0] == 1 else idx[self.rows])).reshape(-1)
            self.lt = np.repeat(mem.local16[self.rows], k)
        else:
            r, c = np.nonzero(np.broadcast_to(active, (T, k)))
            self.rows, self._each, self._width = r, (r, c), 1
            self.flat = mem.base[r] + np.broadcast_to(idx, (T, k))[r, c]
            self.lt = mem.local16[r]

    def row(self, i: int) -> int:
        """The thread (row) of access ``i``."""
        return int(self.rows[i // self._width])

    def pos(self, i: int) -> int:
        """The flat position of access ``i``."""
        return int(self.flat[i])

    def gather(self, a: np.ndarray) -> np.ndarray:
        """The entries of ``a`` (a flat per-byte map of the buffer) at the accesses."""
        return a[self.flat]

    def select(self, a: np.ndarray) -> np.ndarray:
        """The entries of ``a`` (broadcastable to ``(T, k)``) at the accesses, in their order."""
        full = _full(a, self._shape)
        if self._each is not None:
            return full[self._each]
        if self._cols is not None:
            full = full[:, self._cols]
        return (full if self._every else full[self.rows]).reshape(-1)


class _Windows:
    """The accesses of ``nbytes`` consecutive bytes from ``start`` (flat, ``(T,)``) by the threads of ``rows``
    (bool per thread; None: all): :class:`_Accesses`'s interface, with maps gathered window by window."""

    __slots__ = ("lt", "rows", "_mem", "_starts", "_width", "_flat", "_all")

    def __init__(self, mem: SharedMemory, start: np.ndarray, nbytes: int, rows):
        self._mem, self._width, self._flat, self._all = mem, nbytes, None, rows is None
        if rows is None:
            self.rows, self._starts, self.lt = mem.threads, start, mem.local_ids(nbytes)
        else:
            self.rows = np.flatnonzero(rows)
            self._starts, self.lt = start[self.rows], np.repeat(mem.local16[self.rows], nbytes)

    @property
    def flat(self) -> np.ndarray:
        if self._flat is None:
            self._flat = (self._starts[:, None] + np.arange(self._width)).reshape(-1)
        return self._flat

    def row(self, i: int) -> int:
        return int(self.rows[i // self._width])

    def pos(self, i: int) -> int:
        return int(self._starts[i // self._width]) + i % self._width

    def gather(self, a: np.ndarray) -> np.ndarray:
        return self._mem._windows(a, self._width)[self._starts].reshape(-1)

    def select(self, a: np.ndarray) -> np.ndarray:
        full = _full(a, (self._mem.grid.threads, self._width))
        return (full if self._all else full[self.rows]).reshape(-1)


class SharedMemory(Memory):
    """Shared local memory: ``size`` bytes per thread group, with race detection.

    Per byte it keeps the local id of the thread that wrote it since the last
    barrier and the lowest and highest local ids of the threads that read it
    (several readers when they differ). Reads are only recorded (cheap), with
    the span of bytes they touch, and folded into the reader maps when a write
    to bytes of that span comes before the next barrier, so the common epochs
    (only writes, only reads, or reads of one buffer half while the other is
    written) pay little for the checks. Likewise a read is compared with the
    writer map only where it meets the span written since the last barrier.
    """

    kind = MemKind.SLM

    def __init__(self, name: str, size: int, grid: Grid):
        super().__init__(name, size, grid)
        G = grid.launch.groups
        self.data = np.full((G, self.size), POISON, dtype=np.uint8)
        self._bytes = self.data.reshape(-1)
        # Per byte (flat over groups): local id of the thread that wrote it since the last barrier (-1:
        # nobody), and the lowest / highest local id of the threads that read it (_NO_READER / -1: nobody).
        self.writer = np.full(G * self.size, -1, dtype=np.int16)
        self.reader_lo = np.full(G * self.size, _NO_READER, dtype=np.int16)
        self.reader_hi = np.full(G * self.size, -1, dtype=np.int16)
        self._written_span = (self.size, -1)  # span (lowest, highest byte in a group) the writer map may hold
        self._read = False               # the reader maps have entries
        self._pending: list = []         # reads not folded into the reader maps: (_Accesses | (idx, active), lo, hi)
        self.base = grid.group * self.size
        self.base_col = self.base[:, None]
        self.local16 = grid.local.astype(np.int16)
        self.threads = np.arange(grid.threads)
        self._local_ids: dict[int, np.ndarray] = {}
        # Per thread: it wrote SLM since its last ``fence.slm`` (a barrier does not order such writes).
        self.unfenced = np.zeros(grid.threads, dtype=bool)

    def local_ids(self, k: int) -> np.ndarray:
        """The local id of every access of a ``(T, k)`` access, row-major (cached per ``k``)."""
        ids = self._local_ids.get(k)
        if ids is None:
            ids = self._local_ids[k] = np.repeat(self.local16, k)
        return ids

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
            if self._written_span[0] <= self._written_span[1]:
                self.writer.fill(-1)
            if self._read:
                self.reader_lo.fill(_NO_READER)
                self.reader_hi.fill(-1)
            self._written_span, self._read = (self.size, -1), False
            return
        self._fold_reads(0, self.size)
        per_group = (groups.size, self.size)
        self.writer.reshape(per_group)[groups] = -1
        self.reader_lo.reshape(per_group)[groups] = _NO_READER
        self.reader_hi.reshape(per_group)[groups] = -1

    def _race(self, kind: str, pos, row: int, other) -> InterpError:
        byte = int(pos % self.size)
        return InterpError(f"SLM race on '{self.name}' byte {byte}: {self.grid.describe(row)} "
                           f"{kind} thread {int(other)} of its group since the last barrier")

    def _fold_reads(self, lo: int, hi: int) -> None:
        """Folds the pending reads that touch bytes ``lo..hi`` (of any group) into the reader maps."""
        if len(self._pending) > _PENDING_READS:
            lo, hi = 0, self.size     # bounded bookkeeping: fold them all
        fold, keep = [], []
        for p in self._pending:
            (fold if p[1] <= hi and p[2] >= lo else keep).append(p)
        if not fold:
            return
        self._pending = keep
        reads = [a() if callable(a) else a for a, _, _ in fold]
        flat = np.concatenate([a.flat for a in reads]) if len(reads) > 1 else reads[0].flat
        lt = np.concatenate([a.lt for a in reads]) if len(reads) > 1 else reads[0].lt
        np.minimum.at(self.reader_lo, flat, lt)
        np.maximum.at(self.reader_hi, flat, lt)
        self._read = True

    def _meets_written(self, lo: int, hi: int) -> bool:
        return lo <= self._written_span[1] and hi >= self._written_span[0]

    def read(self, idx, active=None):
        idx, lo, hi = self._checked_span(idx, active, "reads")
        self._record_read(lambda: _Accesses(self, idx, active), lo, hi)
        return self._bytes[self.base_col + idx]

    def read_rows(self, off, nbytes, rows=None):
        span = self._inside(off, nbytes)
        if span is None or off.shape[0] != self.grid.threads:
            return super().read_rows(off, nbytes, rows)
        start = self.base + off
        self._record_read(lambda: _Windows(self, start, nbytes, rows), *span)
        return self._windows(self._bytes, nbytes)[start]

    def _record_read(self, accesses, lo: int, hi: int) -> None:
        """Checks a read (``accesses()``: its accesses; ``lo..hi``: its span) against the writer map and
        keeps it for the reader maps; its accesses are only worked out if needed."""
        if self._meets_written(lo, hi):
            acc = accesses()
            w = acc.gather(self.writer)
            bad = (w != acc.lt) & (w >= 0)
            if bad.any():
                i = int(np.argmax(bad))
                raise self._race("reads a byte written by", acc.pos(i), acc.row(i), w[i])
            self._pending.append((acc, lo, hi))
        else:
            self._pending.append((accesses, lo, hi))

    def write(self, idx, data, active=None):
        idx, lo, hi = self._checked_span(idx, active, "writes")
        self._write(_Accesses(self, idx, active), data, lo, hi)

    def write_rows(self, off, data, rows):
        span = self._inside(off, data.shape[-1])
        if span is None or off.shape[0] != self.grid.threads:
            super().write_rows(off, data, rows)
            return
        self._write(_Windows(self, self.base + off, data.shape[-1], rows), data, *span)

    def _write(self, acc, data: np.ndarray, lo: int, hi: int) -> None:
        self._fold_reads(lo, hi)
        lt = acc.lt
        if self._meets_written(lo, hi):
            w = acc.gather(self.writer)
            bad = (w != lt) & (w >= 0)
            if bad.any():
                i = int(np.argmax(bad))
                raise self._race("overwrites a byte written by", acc.pos(i), acc.row(i), w[i])
        if self._read:
            r_lo, r_hi = acc.gather(self.reader_lo), acc.gather(self.reader_hi)
            bad = (r_lo < lt) | (r_hi > lt)      # a reader other than the writing thread
            if bad.any():
                i = int(np.argmax(bad))
                raise self._race("overwrites a byte read by", acc.pos(i), acc.row(i),
                                 r_lo[i] if r_lo[i] == r_hi[i] else -1)
        flat = acc.flat
        self.writer[flat] = lt
        if lo <= hi:
            self._written_span = (min(self._written_span[0], lo), max(self._written_span[1], hi))
        self.unfenced[acc.rows] = True
        w = acc.gather(self.writer)
        clash = w != lt
        if clash.any():
            i = int(np.argmax(clash))
            raise self._race("writes the same byte in one access as", acc.pos(i), acc.row(i), w[i])
        self._bytes[flat] = acc.select(data)

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

    def read_rows(self, off, nbytes, rows=None):
        if self._inside(off, nbytes) is None:
            return super().read_rows(off, nbytes, rows)
        return self._windows(self.data, nbytes)[off]

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
        if active.shape[0] == 1 and shape[0] > 1:   # the same bytes of every row: select columns
            cols = np.broadcast_to(active, (1, shape[1]))[0]
            at, values = full[:, cols].reshape(-1), src[:, cols].reshape(-1)
        else:
            act = np.broadcast_to(active, shape)
            at, values = full[act], src[act]
        self.data[at] = values
        self.written[at] = True

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
