"""Scattered sends with a vector size (LSC ``d32x8``): the interpreter against a brute-force oracle.

Lane ``l`` moves ``vec`` consecutive elements from its own address; element ``v`` of lane ``l`` is
register element ``v * lanes + l``. Masked-off lanes leave registers (loads) or memory (stores)
unchanged.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.interp import InterpError, Launch, run_ir
from kdd.core.ir import Alloc, FuncCall, Group, Load, MemKind, const, seq, var
from kdd.core.ir.funcs import Send, SendKind, SendOp
from kdd.core.ir.types import s32, u64

XE = dict(simd=8, reg_bytes=32)
WORDS = 96  # dwords of the memory buffer


def _kernel(op: SendOp, lanes: int, vec: int):
    """Loads the lane offsets and mask words into registers, then runs one vector message between
    ``mem`` and the register buffer ``reg`` (filled from ``init`` first) and writes ``reg`` out."""
    mem, ofs, msk, reg = (var(n, u64) for n in ("mem", "ofs", "msk", "reg"))
    init, out = var("init", u64), var("out", u64)
    n = lanes * vec
    vt = s32.with_lanes(lanes)
    block = lambda o, b, off, r, nbytes: FuncCall.make(  # noqa: E731
        Send(o, SendKind.BLOCK, "global", s32, nbytes // 4), [b, const(0), r, const(off), const(True)])
    offsets = Load.make(vt, ofs, const(0))
    mask = Load.make(vt, msk, const(0)).eq(0)
    body = seq(
        block(SendOp.LOAD, var("offs", u64), 0, ofs, 4 * lanes),
        block(SendOp.LOAD, var("masks", u64), 0, msk, 4 * lanes),
        block(SendOp.LOAD, init, 0, reg, 4 * n),
        FuncCall.make(Send(op, SendKind.SCATTERED, "global", s32, n, vec), [mem, offsets, reg, const(0), mask]),
        block(SendOp.STORE, out, 0, reg, 4 * n),
    )
    for b, size in ((reg, 4 * n), (msk, 4 * lanes), (ofs, 4 * lanes)):
        body = Alloc.make(b, size, MemKind.GRF, body)
    return Group.make("kernel", body)


def _oracle_load(memory, offsets, off_lanes, regs, vec):
    out = regs.copy()
    lanes = len(offsets)
    for l in range(lanes):
        if off_lanes[l]:
            continue
        for v in range(vec):
            out[v * lanes + l] = memory[offsets[l] // 4 + v]
    return out


@st.composite
def _messages(draw, disjoint: bool):
    lanes = draw(st.integers(1, 8))
    vec = draw(st.sampled_from((1, 2, 3, 4, 8)))
    if disjoint:  # stores: each lane its own run of dwords (overlapping stores have no defined order)
        slots = draw(st.permutations(range(WORDS // 8)))[:lanes]
        offsets = [8 * 4 * s + 4 * draw(st.integers(0, 8 - vec)) for s in slots]
    else:
        offsets = [4 * draw(st.integers(0, WORDS - vec)) for _ in range(lanes)]
    off = [draw(st.integers(0, 3)) == 0 for _ in range(lanes)]
    return lanes, vec, offsets, off


@settings(max_examples=40, deadline=None)
@given(_messages(disjoint=False))
def test_vector_load_matches_the_oracle(msg):
    lanes, vec, offsets, off = msg
    rng = np.random.default_rng(lanes * 100 + vec)
    memory = rng.integers(1, 1 << 30, WORDS).astype(np.int32)
    init = -np.arange(1, lanes * vec + 1, dtype=np.int32)
    out = np.zeros(lanes * vec, np.int32)
    run_ir(_kernel(SendOp.LOAD, lanes, vec), Launch((1, 1, 1), (1, 1, 1), **XE),
           {"mem": memory, "offs": np.array(offsets, np.int32), "masks": np.array(off, np.int32),
            "init": init, "out": out})
    assert out.tolist() == _oracle_load(memory, offsets, off, init, vec).tolist()


@settings(max_examples=40, deadline=None)
@given(_messages(disjoint=True))
def test_vector_store_matches_the_oracle(msg):
    lanes, vec, offsets, off = msg
    memory = np.full(WORDS, -1, np.int32)
    data = np.arange(100, 100 + lanes * vec, dtype=np.int32)
    expect = memory.copy()
    for l in range(lanes):
        if not off[l]:
            for v in range(vec):
                expect[offsets[l] // 4 + v] = data[v * lanes + l]
    run_ir(_kernel(SendOp.STORE, lanes, vec), Launch((1, 1, 1), (1, 1, 1), **XE),
           {"mem": memory, "offs": np.array(offsets, np.int32), "masks": np.array(off, np.int32),
            "init": data, "out": np.zeros(lanes * vec, np.int32)})
    assert memory.tolist() == expect.tolist()


def test_a_vector_atomic_is_refused():
    with pytest.raises(InterpError, match="one element per lane"):
        run_ir(_kernel(SendOp.ATOMIC_ADD, 8, 2), Launch((1, 1, 1), (1, 1, 1), **XE),
               {"mem": np.zeros(WORDS, np.int32), "offs": np.zeros(8, np.int32), "masks": np.zeros(8, np.int32),
                "init": np.zeros(16, np.int32), "out": np.zeros(16, np.int32)})


def test_a_vector_needs_a_scattered_message_and_whole_lanes():
    with pytest.raises(ValueError):
        Send(SendOp.LOAD, SendKind.BLOCK, "global", s32, 8, 8)
    with pytest.raises(ValueError):
        Send(SendOp.LOAD, SendKind.SCATTERED, "global", s32, 12, 8)
    assert Send(SendOp.LOAD, SendKind.SCATTERED, "global", s32, 64, 8).lanes == 8
