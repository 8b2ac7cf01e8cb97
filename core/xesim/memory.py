"""Memory the simulated threads reach: global buffers at 64-bit addresses, and SLM per thread group.

Global memory is the kernel arguments' byte buffers placed at addresses
whose low dword is close to overflowing (``base(i)``), so a 64-bit address
computed without its carry or its offset's sign lands outside every buffer
and faults. Every access is bounds-checked and every stored byte recorded.

SLM keeps, per byte, the last writer thread with the number of barrier
signals it had issued, and the last reader(s): a thread reading a byte
another thread wrote, or writing a byte another thread read or wrote,
without a barrier generation completed between the two is a race
(:class:`~.errors.Fault`), whatever order the simulator happened to run
them in.
"""
from __future__ import annotations

import numpy as np

GAP = 1 << 32


def base(i: int) -> int:
    """The address of argument ``i``: its low dword is 16 KiB short of wrapping."""
    return (i + 1) * GAP + (GAP - (1 << 14))


class Global:
    """The arguments' buffers as one flat byte array addressed through :func:`base`."""

    def __init__(self, buffers: list[np.ndarray]):
        self.bases = np.array([base(i) for i in range(len(buffers))], dtype=np.uint64)
        self.sizes = np.array([b.size for b in buffers], dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)
        self.data = np.concatenate(buffers) if buffers else np.zeros(0, np.uint8)
        self.written = np.zeros(self.data.size, dtype=bool)

    def flat(self, addr: np.ndarray, nbytes: int) -> np.ndarray | None:
        """Flat indices of ``nbytes`` bytes at each address (shape ``addr.shape + (nbytes,)``), or None
        when one of them is outside every buffer."""
        a = addr.astype(np.uint64)
        which = np.searchsorted(self.bases, a, side="right").astype(np.int64) - 1
        if (which < 0).any():
            return None
        off = (a - self.bases[which]).astype(np.int64)
        if ((off + nbytes) > self.sizes[which]).any():
            return None
        return (self.starts[which] + off)[..., None] + np.arange(nbytes)

    def buffer(self, i: int) -> np.ndarray:
        return self.data[self.starts[i]: self.starts[i] + self.sizes[i]]

    def written_of(self, i: int) -> np.ndarray:
        return self.written[self.starts[i]: self.starts[i] + self.sizes[i]]


class Slm:
    """Shared local memory of every thread group, with the race bookkeeping of the module docstring."""

    def __init__(self, groups: int, size: int):
        self.size = size
        total = groups * size
        self.data = np.zeros(total, dtype=np.uint8)
        self.w_thread = np.full(total, -1, dtype=np.int64)
        self.w_sig = np.zeros(total, dtype=np.int64)
        self.r_thread = np.full(total, -1, dtype=np.int64)   # -2: read by several threads
        self.r_sig = np.zeros(total, dtype=np.int64)

    def flat(self, group: np.ndarray, addr: np.ndarray, nbytes: int) -> np.ndarray | None:
        a = addr.astype(np.int64)
        if (a < 0).any() or ((a + nbytes) > self.size).any():
            return None
        return (group * self.size)[..., None] + (a[..., None] + np.arange(nbytes))

    def read_race(self, idx: np.ndarray, thread: np.ndarray, sig: np.ndarray, passed: np.ndarray) -> bool:
        """Record a read of ``idx`` (rows: threads) and whether it races with an earlier write."""
        t = np.broadcast_to(thread.reshape((-1,) + (1,) * (idx.ndim - 1)), idx.shape)
        w = self.w_thread[idx]
        p = np.broadcast_to(passed.reshape(t.shape[:1] + (1,) * (idx.ndim - 1)), idx.shape)
        race = bool(((w >= 0) & (w != t) & (self.w_sig[idx] >= p)).any())
        s = np.broadcast_to(sig.reshape(t.shape[:1] + (1,) * (idx.ndim - 1)), idx.shape)
        flat, tf = idx.reshape(-1), t.reshape(-1)
        prev = self.r_thread[flat]
        many = (prev == -2) | ((prev >= 0) & (prev != tf))
        order = np.lexsort((tf, flat))
        fs, ts = flat[order], tf[order]
        multi = fs[1:][(fs[1:] == fs[:-1]) & (ts[1:] != ts[:-1])]   # bytes several threads read at once
        shared = np.isin(flat, multi) if multi.size else np.zeros(flat.shape, dtype=bool)
        self.r_thread[flat] = np.where(many | shared, -2, tf)
        self.r_sig[flat] = np.maximum(self.r_sig[flat], s.reshape(-1))
        return race

    def write_race(self, idx: np.ndarray, thread: np.ndarray, sig: np.ndarray, passed: np.ndarray) -> bool:
        """Record a write of ``idx`` and whether it races with an earlier read or write by another thread."""
        shape = (-1,) + (1,) * (idx.ndim - 1)
        t = np.broadcast_to(thread.reshape(shape), idx.shape)
        p = np.broadcast_to(passed.reshape(shape), idx.shape)
        r = self.r_thread[idx]
        w = self.w_thread[idx]
        race = bool((((r == -2) | ((r >= 0) & (r != t))) & (self.r_sig[idx] >= p)).any()
                    or ((w >= 0) & (w != t) & (self.w_sig[idx] >= p)).any())
        self.w_thread[idx] = t
        self.w_sig[idx] = np.broadcast_to(sig.reshape(shape), idx.shape)
        self.r_thread[idx] = -1
        return race
