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
        self.w_thread = np.full(total, -1, dtype=np.int32)
        self.w_sig = np.zeros(total, dtype=np.int32)
        self.r_thread = np.full(total, -1, dtype=np.int32)   # -2: read by several threads
        self.r_sig = np.zeros(total, dtype=np.int32)

    def flat(self, group: np.ndarray, addr: np.ndarray, nbytes: int) -> np.ndarray | None:
        a = addr.astype(np.int64)
        if (a < 0).any() or ((a + nbytes) > self.size).any():
            return None
        return (group * self.size)[..., None] + (a[..., None] + np.arange(nbytes))

    @staticmethod
    def _per_byte(idx: np.ndarray, *per_row: np.ndarray):
        """``idx`` (rows of byte indices, one row per access) flattened, and each per-row array
        repeated for the bytes of its row."""
        k = idx.shape[-1]
        return (idx.reshape(-1),) + tuple(np.repeat(a.astype(np.int32), k) for a in per_row)

    def read_race(self, idx: np.ndarray, thread: np.ndarray, sig: np.ndarray, passed: np.ndarray) -> bool:
        """Record a read of ``idx`` (one row per accessing thread) and whether it races with an
        earlier write by another thread."""
        flat, t, s, p = self._per_byte(idx, thread, sig, passed)
        w = self.w_thread[flat]
        race = bool(((w >= 0) & (w != t) & (self.w_sig[flat] >= p)).any())
        prev = self.r_thread[flat]
        many = (prev == -2) | ((prev >= 0) & (prev != t))
        self.r_thread[flat] = t
        many |= self.r_thread[flat] != t            # another thread of this access read it too
        self.r_thread[flat[many]] = -2
        self.r_sig[flat] = np.maximum(self.r_sig[flat], s)
        return race

    def write_race(self, idx: np.ndarray, thread: np.ndarray, sig: np.ndarray, passed: np.ndarray) -> bool:
        """Record a write of ``idx`` and whether it races with an earlier read or write by another thread."""
        flat, t, s, p = self._per_byte(idx, thread, sig, passed)
        r = self.r_thread[flat]
        w = self.w_thread[flat]
        race = bool((((r == -2) | ((r >= 0) & (r != t))) & (self.r_sig[flat] >= p)).any()
                    or ((w >= 0) & (w != t) & (self.w_sig[flat] >= p)).any())
        self.w_thread[flat] = t
        self.w_sig[flat] = s
        self.r_thread[flat] = -1
        return race
