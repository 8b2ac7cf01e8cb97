"""A reorder moves every element where the permutation says, checked by executing the emitted moves on a
byte array (an independent oracle): in place (destination over its source's registers), and the VNNI
interleave of rows whose moves read 2D source regions."""
from __future__ import annotations

import random

from types import SimpleNamespace

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kdd.core.codegen.xe import tensor
from kdd.core.codegen.xe.operand import Reg, Rows
from kdd.core.ir.types import f16, u32

RB = 32


class _Recorder:
    def __init__(self):
        self.ops = []

    def op(self, mnemonic, lanes, dst, srcs, **kw):
        self.ops.append((mnemonic, lanes, dst, srcs))


def _fake_cg(bounce_at: int):
    def temp(t, lanes=1, whole=False):
        return Reg(bounce_at, u32, 1)
    return SimpleNamespace(rb=RB, xe=SimpleNamespace(max_exec=16), em=_Recorder(), temp=temp)


def _element(src, i: int) -> int:
    """The byte lane ``i`` of a source region reads."""
    if isinstance(src, Rows):
        return src.byte + ((i // src.w) * src.v + (i % src.w) * src.h) * src.size
    return src.byte + i * src.stride * src.size


def _run(ops, mem: bytearray) -> None:
    for mnemonic, lanes, dst, srcs in ops:
        assert mnemonic == "mov"
        src = srcs[0]
        data = [bytes(mem[_element(src, i): _element(src, i) + src.size])
                for i in range(lanes)]            # an instruction reads all its sources first
        for i, b in enumerate(data):
            at = dst.byte + i * max(dst.stride, 1) * dst.size
            mem[at:at + dst.size] = b


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.randoms(use_true_random=False))
def test_in_place_permutation(nregs, rnd):
    n = nregs * RB // 2
    perm = list(range(n))
    rnd.shuffle(perm)
    dst_bytes = np.arange(n, dtype=np.int64) * 2
    src_bytes = np.array(perm, dtype=np.int64) * 2
    cg = _fake_cg(bounce_at=64 * RB)
    tensor._in_place(cg, dst_bytes, src_bytes, f16, f16)
    mem = bytearray(128 * RB)
    original = bytes(np.random.default_rng(nregs).integers(0, 256, nregs * RB, dtype=np.uint8))
    mem[:nregs * RB] = original
    _run(cg.em.ops, mem)
    for i, p in enumerate(perm):
        assert mem[2 * i:2 * i + 2] == original[2 * p:2 * p + 2]


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([1, 2, 4]), st.sampled_from([2, 4, 8]), st.booleans(), st.randoms(use_true_random=False))
@example(2, 8, False, random.Random(0))
def test_vnni_interleave_of_gathered_rows(lanes_per_row, row_elems, shuffle, rnd):
    """16-bit rows gathered a dword a lane on Xe-HPC (16 lanes, 64-byte registers: lane ``l``'s dword
    ``v`` in register ``v``), interleaved in pairs of rows (VNNI): every element lands where the layout
    says; in the lanes' own order the moves read rows of 2 elements 4 apart (``<1;2,4>``), 4 a move."""
    rb, lanes = 64, 16
    order = list(range(lanes))
    if shuffle:
        rnd.shuffle(order)
    dst_bytes, src_bytes = [], []
    for r in range(lanes // lanes_per_row):
        for c in range(row_elems * lanes_per_row):
            lane = order[r * lanes_per_row + c // row_elems]
            col = c % row_elems
            src_bytes.append(64 * rb + (col // 2) * rb + lane * 4 + (col % 2) * 2)
            dst_bytes.append(((r // 2) * row_elems * lanes_per_row + c) * 4 + (r % 2) * 2)
    cg = SimpleNamespace(rb=rb, xe=SimpleNamespace(max_exec=32), em=_Recorder())
    tensor._move_runs(cg, dst_bytes, src_bytes, f16, f16)
    mem = bytearray(128 * rb)
    mem[64 * rb:] = bytes(np.random.default_rng(lanes_per_row).integers(0, 256, 64 * rb, dtype=np.uint8))
    before = bytes(mem)
    _run(cg.em.ops, mem)
    for d, s_ in zip(dst_bytes, src_bytes):
        assert mem[d:d + 2] == before[s_:s_ + 2]
    if not shuffle and lanes_per_row == 2 and row_elems == 8:     # the blocked example's B tile
        assert all(isinstance(o[3][0], Rows) and o[1] == 4 for o in cg.em.ops) and len(cg.em.ops) == 32
