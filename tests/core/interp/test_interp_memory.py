"""The memory model against independent oracles.

SLM's race detector and data: random reads, writes (byte indices or a window per thread), fences and
barriers replayed against a per-byte oracle that keeps, per group and byte, the writing thread and the
set of reading threads since the last barrier, one byte at a time in row-major (thread, byte) order; the
detector must raise the same race, with the same thread, byte and other thread, and leave the same bytes.
Registers' and global memory's window accesses against the accesses of their bytes.
"""
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kdd.core.interp.errors import InterpError
from kdd.core.interp.grid import Grid, Launch
from kdd.core.interp import memory
from kdd.core.interp.memory import POISON, GlobalMemory, Registers, SharedMemory

SIZE = 8


class Oracle:
    """SLM as the docs describe it, byte by byte."""

    def __init__(self, grid: Grid):
        self.grid = grid
        G, T = grid.launch.groups, grid.threads
        self.data = np.full((G, SIZE), POISON, np.uint8)
        self.writer = {}                            # (group, byte) -> local id
        self.readers = {}                           # (group, byte) -> set of local ids
        self.unfenced = [False] * T

    def _accesses(self, idx, active):
        T, k = self.grid.threads, idx.shape[1]
        act = np.ones((T, k), bool) if active is None else np.broadcast_to(active, (T, k))
        full = np.broadcast_to(idx, (T, k))
        return [(t, int(self.grid.group[t]), int(self.grid.local[t]), int(full[t, j]), j)
                for t in range(T) for j in range(k) if act[t, j]]

    def _race(self, kind, t, byte, other):
        return (f"SLM race on 'slm' byte {byte}: {self.grid.describe(t)} {kind} thread {other} "
                f"of its group since the last barrier")

    def _written_by_another(self, acc, what):
        """The race of the first access to a byte another thread of its group wrote since the barrier."""
        for t, g, lt, b, _ in acc:
            w = self.writer.get((g, b), -1)
            if w >= 0 and w != lt:
                return self._race(what, t, b, w)
        return None

    def read(self, idx, active):
        acc = self._accesses(idx, active)
        race = self._written_by_another(acc, "reads a byte written by")
        if race is not None:
            return race
        for t, g, lt, b, _ in acc:
            self.readers.setdefault((g, b), set()).add(lt)
        T, k = self.grid.threads, idx.shape[1]
        full = np.broadcast_to(idx, (T, k))
        return self.data[self.grid.group[:, None], full]

    def write(self, idx, data, active):
        acc = self._accesses(idx, active)
        race = self._written_by_another(acc, "overwrites a byte written by")
        if race is not None:
            return race
        for t, g, lt, b, _ in acc:
            others = self.readers.get((g, b), set()) - {lt}
            if others:
                readers = self.readers[(g, b)]
                return self._race("overwrites a byte read by", t, b, next(iter(readers)) if len(readers) == 1 else -1)
        last = {}
        for t, g, lt, b, _ in acc:
            last[(g, b)] = lt
        for t, g, lt, b, _ in acc:
            if last[(g, b)] != lt:
                return self._race("writes the same byte in one access as", t, b, last[(g, b)])
        src = np.broadcast_to(data, (self.grid.threads, idx.shape[1]))
        for t, g, lt, b, j in acc:
            self.writer[(g, b)] = lt
            self.data[g, b] = src[t, j]
            self.unfenced[t] = True
        return None

    def barrier(self, groups):
        for key in [k for k in self.writer if groups[k[0]]]:
            del self.writer[key]
        for key in [k for k in self.readers if groups[k[0]]]:
            del self.readers[key]

    def fence(self, active):
        for t in range(self.grid.threads):
            if active is None or active[t]:
                self.unfenced[t] = False


@st.composite
def scenario(draw):
    G, P = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    T = G * P
    steps = []
    for _ in range(draw(st.integers(1, 10))):
        op = draw(st.sampled_from(["read", "read", "write", "write", "read_rows", "write_rows", "barrier", "fence"]))
        if op in ("read_rows", "write_rows"):    # a window of k bytes per thread
            k = draw(st.integers(1, 4))
            off = np.array(draw(st.lists(st.integers(0, SIZE - k), min_size=T, max_size=T)), np.int64)
            mask = None if draw(st.booleans()) else np.array(draw(st.lists(st.booleans(), min_size=T, max_size=T)))
            rows = draw(st.sampled_from([1, T]))
            data = np.array(draw(st.lists(st.integers(0, 255), min_size=rows * k, max_size=rows * k)),
                            np.uint8).reshape(rows, k) if op == "write_rows" else k
            steps.append((op, off, mask, data))
        elif op in ("read", "write"):
            k = draw(st.integers(1, 4))
            rows = draw(st.sampled_from([1, T]))
            # Scattered bytes, or a run of k bytes per row: spans that meet, overlap or just miss.
            if draw(st.booleans()):
                idx = np.array(draw(st.lists(st.lists(st.integers(0, SIZE - 1), min_size=k, max_size=k),
                                             min_size=rows, max_size=rows)), np.int64)
            else:
                starts = draw(st.lists(st.integers(0, SIZE - k), min_size=rows, max_size=rows))
                idx = np.array(starts, np.int64)[:, None] + np.arange(k)
            shape = draw(st.sampled_from([None, (1, k), (T, 1), (T, k)]))
            active = None if shape is None else np.array(
                draw(st.lists(st.booleans(), min_size=shape[0] * shape[1], max_size=shape[0] * shape[1]))
            ).reshape(shape)
            data = np.array(draw(st.lists(st.integers(0, 255), min_size=rows * k, max_size=rows * k)),
                            np.uint8).reshape(rows, k) if op == "write" else None
            steps.append((op, idx, active, data))
        elif op == "barrier":
            steps.append((op, np.array(draw(st.lists(st.booleans(), min_size=G, max_size=G))), None, None))
        else:
            steps.append((op, None if draw(st.booleans()) else
                          np.array(draw(st.lists(st.booleans(), min_size=T, max_size=T))), None, None))
    return (G, P, draw(st.sampled_from([0, 2, 64]))), steps


def _run(idx, data=None):
    return ("read" if data is None else "write", np.array(idx, np.int64), None,
            None if data is None else np.array(data, np.uint8))


@settings(max_examples=400, deadline=None)
@given(scenario())
# Spans that share only their edge byte: thread 0 reads the last byte thread 1 wrote / thread 1 writes the
# first byte thread 0 read.
@example(((1, 2, 64), [_run([[0, 1], [2, 3]], [[1, 2], [3, 4]]), _run([[3, 4], [5, 6]])]))
@example(((1, 2, 64), [_run([[4, 5], [6, 7]]), _run([[0, 1], [2, 4]], [[1, 2], [3, 4]])]))
def test_slm_races_and_data_match_a_per_byte_oracle(case):
    (G, P, pending), steps = case
    grid = Grid(Launch((G, 1, 1), (P, 1, 1), simd=8, reg_bytes=32))
    slm, oracle = SharedMemory("slm", SIZE, grid), Oracle(grid)
    saved, memory._PENDING_READS = memory._PENDING_READS, pending   # also when the detector folds early
    try:
        _replay(slm, oracle, steps)
    finally:
        memory._PENDING_READS = saved


def _replay(slm, oracle, steps):
    for op, arg, active, data in steps:
        if op in ("read_rows", "write_rows"):   # the same accesses as read / write of every window's bytes
            k = data if op == "read_rows" else data.shape[1]
            idx, act = arg[:, None] + np.arange(k), None if active is None else active[:, None]
            expect = oracle.read(idx, act) if op == "read_rows" else oracle.write(idx, data, act)
            call = (lambda: slm.read_rows(arg, k, active)) if op == "read_rows" else \
                (lambda: slm.write_rows(arg, data, active))
            if isinstance(expect, str):
                with pytest.raises(InterpError) as err:
                    call()
                assert str(err.value) == expect
                return
            got = call()
            if op == "read_rows":
                np.testing.assert_array_equal(got, expect)
            np.testing.assert_array_equal(slm.data, oracle.data)
        elif op == "read":
            expect = oracle.read(arg, active)
            if isinstance(expect, str):
                with pytest.raises(InterpError) as err:
                    slm.read(arg, active)
                assert str(err.value) == expect
                return
            np.testing.assert_array_equal(slm.read(arg, active), expect)
        elif op == "write":
            expect = oracle.write(arg, data, active)
            if expect is not None:
                with pytest.raises(InterpError) as err:
                    slm.write(arg, data, active)
                assert str(err.value) == expect
                return
            slm.write(arg, data, active)
            np.testing.assert_array_equal(slm.data, oracle.data)
        elif op == "barrier":
            slm.barrier(arg)
            oracle.barrier(arg)
        else:
            slm.fence(arg)
            oracle.fence(arg)
        assert slm.unfenced.tolist() == oracle.unfenced


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["grf", "global"]), st.integers(1, 5), st.integers(1, 5), st.data())
def test_row_windows_are_reads_and_writes_of_their_bytes(kind, threads, k, data):
    """``read_rows`` / ``write_rows`` of registers and global memory against ``read`` / ``write`` of the
    windows' byte indices: same bytes, same out-of-range errors (inactive threads' windows unchecked)."""
    grid = Grid(Launch((threads, 1, 1), (1, 1, 1), simd=8, reg_bytes=32))
    off = np.array(data.draw(st.lists(st.integers(-2, SIZE), min_size=threads, max_size=threads)), np.int64)
    mask = data.draw(st.none() | st.lists(st.booleans(), min_size=threads, max_size=threads).map(np.array))
    values = np.array(data.draw(st.lists(st.integers(0, 255), min_size=threads * k, max_size=threads * k)),
                      np.uint8).reshape(threads, k)

    def fresh():
        if kind == "grf":
            mem = Registers("r", SIZE, grid)
            mem.data[:] = np.arange(mem.data.size).reshape(mem.data.shape) % 251
            return mem
        return GlobalMemory("g", np.arange(SIZE, dtype=np.uint8) * 3, grid)

    def outcome(f):
        try:
            return f()
        except InterpError as err:
            return str(err)

    idx, act = off[:, None] + np.arange(k), None if mask is None else mask[:, None]
    by_rows, by_bytes = fresh(), fresh()
    got, expect = outcome(lambda: by_rows.read_rows(off, k, mask)), outcome(lambda: by_bytes.read(idx, act))
    assert type(got) is type(expect)
    if isinstance(expect, str):
        assert got == expect
    else:
        np.testing.assert_array_equal(got, expect)
    assert outcome(lambda: by_rows.write_rows(off, values, mask)) == outcome(lambda: by_bytes.write(idx, values, act))
    np.testing.assert_array_equal(by_rows.data, by_bytes.data)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.data())
def test_global_writes_match_a_byte_loop(threads, k, data):
    """A global write stores each active (thread, byte) in row-major order (later rows win a shared byte)
    and marks exactly the stored bytes written, whatever the activity's shape."""
    grid = Grid(Launch((threads, 1, 1), (1, 1, 1), simd=8, reg_bytes=32))
    rows = data.draw(st.sampled_from([1, threads]))
    idx = np.array(data.draw(st.lists(st.integers(0, SIZE - 1), min_size=rows * k, max_size=rows * k)),
                   np.int64).reshape(rows, k)
    values = np.array(data.draw(st.lists(st.integers(0, 255), min_size=threads * k, max_size=threads * k)),
                      np.uint8).reshape(threads, k)
    shape = data.draw(st.sampled_from([None, (1, k), (threads, 1), (threads, k)]))
    active = None if shape is None else np.array(
        data.draw(st.lists(st.booleans(), min_size=shape[0] * shape[1], max_size=shape[0] * shape[1]))).reshape(shape)
    mem = GlobalMemory("g", np.zeros(SIZE, np.uint8), grid)
    mem.write(idx, values, active)
    expect, written = np.zeros(SIZE, np.uint8), np.zeros(SIZE, bool)
    act = np.ones((threads, k), bool) if active is None else np.broadcast_to(active, (threads, k))
    for t in range(threads):
        for j in range(k):
            if act[t, j]:
                b = idx[t if rows > 1 else 0, j]
                expect[b], written[b] = values[t, j], True
    np.testing.assert_array_equal(mem.data, expect)
    np.testing.assert_array_equal(mem.written, written)
