"""An in-place reorder (destination over its source's registers) moves every element where the
permutation says, checked by executing the emitted moves on a byte array (an independent oracle)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.codegen.xe import tensor
from kdd.core.codegen.xe.operand import Reg
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


def _run(ops, mem: bytearray) -> None:
    for mnemonic, lanes, dst, srcs in ops:
        assert mnemonic == "mov"
        src = srcs[0]
        data = [bytes(mem[src.byte + i * src.stride * src.size: src.byte + i * src.stride * src.size + src.size])
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
