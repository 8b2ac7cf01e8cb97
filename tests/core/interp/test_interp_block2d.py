"""2D block loads (``load_block2d``): the interpreter and xesim against a numpy slicing oracle.

Block ``a``'s element ``(r, c)`` is the surface's element at row ``y + r``, column ``x + a * width + c``,
zero outside the surface; it lands at register element ``(a * height + r) * width + c``. The simulator
runs the message iga64 assembles for Xe-HPC (12p72) with the same header fields.
"""
import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.interp import Launch, run_ir
from kdd.core.ir import Alloc, FuncCall, Group, MemKind, const, seq, var
from kdd.core.ir.funcs import Send, Send2D, SendKind, SendOp
from kdd.core.ir.types import u16, u64

ROWS, PITCH_ELEMS = 24, 48  # the memory buffer: 24 rows of 48 16-bit elements


def _oracle(memory: np.ndarray, surface: tuple[int, int, int], x: int, y: int, w: int, h: int, a: int):
    """The block by slicing a zero-padded copy of the surface."""
    width, height, base_row = surface
    plane = memory[base_row: base_row + height, :width]
    pad = max(w * a, h) + abs(x) + abs(y) + 64
    padded = np.zeros((height + 2 * pad, width + 2 * pad), memory.dtype)
    padded[pad: pad + height, pad: pad + width] = plane
    window = padded[pad + y: pad + y + h, pad + x: pad + x + a * w]
    return np.concatenate([window[:, i * w: (i + 1) * w] for i in range(a)], axis=0).reshape(-1)


@st.composite
def _loads(draw):
    w = draw(st.sampled_from((2, 4, 8, 16, 32)))
    a = draw(st.sampled_from([n for n in (1, 2, 4) if w * n <= 32 and (n == 1 or w * 2 * 8 % 64 == 0)]))
    h = draw(st.sampled_from((8, 16)) if a > 1 else st.integers(1, 32))
    width = draw(st.sampled_from((32, 40, 48)))          # elements: 64 to 96 bytes, dword multiples
    height = draw(st.integers(1, ROWS - 4))
    base_row = draw(st.integers(0, 4))
    x = 2 * draw(st.integers(-20, 30))                    # whole dwords of 16-bit elements
    y = draw(st.integers(-10, 30))
    return w, h, a, (width, height, base_row), x, y


def _kernel(f: Send2D, surface, x: int, y: int):
    mem, reg, out = var("mem", u64), var("reg", u64), var("out", u64)
    width, height, base_row = surface
    nbytes = f.elems * 2
    load = FuncCall.make(f, [mem, const(base_row * PITCH_ELEMS * 2), const(width * 2), const(height),
                             const(PITCH_ELEMS * 2), const(x), const(y), reg, const(0)])
    store = FuncCall.make(Send(SendOp.STORE, SendKind.BLOCK, "global", u16, f.elems), [out, const(0), reg, const(0),
                                                                                       const(True)])
    return Group.make("kernel", Alloc.make(reg, nbytes, MemKind.GRF, seq(load, store)))


@settings(max_examples=60, deadline=None)
@given(_loads())
def test_block2d_load_is_the_surface_sliced_with_zeros_outside(load):
    w, h, a, surface, x, y = load
    rng = np.random.default_rng(w * 1000 + h * 10 + a)
    memory = rng.integers(1, 1 << 16, (ROWS, PITCH_ELEMS)).astype(np.uint16)
    f = Send2D(u16, w, h, a)
    out = np.full(f.elems, 0xDEAD, np.uint16)
    run_ir(_kernel(f, surface, x, y), Launch((1, 1, 1), (1, 1, 1), simd=16, reg_bytes=64),
           {"mem": memory.reshape(-1), "out": out})
    assert out.tolist() == _oracle(memory, surface, x, y, w, h, a).tolist()


@pytest.mark.skipif(shutil.which("iga64") is None, reason="iga64 is not installed")
@settings(max_examples=25, deadline=None)
@given(_loads())
def test_xesim_runs_the_assembled_block2d_load_like_the_oracle(load):
    """``load_block2d.ugm.d16.a64`` as iga64 assembles it for 12p72, the header written field by field."""
    from kdd.core.targets.catalog import get_target
    from kdd.core.xesim.machine import Geometry, Machine
    from kdd.core.xesim.memory import Global, base
    from kdd.core.xesim.run import load as load_program

    w, h, a, (width, height, base_row), x, y = load
    rb = 64
    nregs = -(-w * h * a * 2 // rb)
    text = "\n".join([f"(W) load_block2d.ugm.d16.a64 (1|M0) r20:{nregs} [r2:1]",
                      "(W) mov (8|M0) r127.0<1>:ud r0.0<1;1,0>:ud",
                      "(W) send.gtwy (8|M0) null r127 null:0 0x0 0x02000010 {EOT}"])
    program, _ = load_program(text, get_target("xehpc").assembler)
    rng = np.random.default_rng(w * 1000 + h * 10 + a)
    memory = rng.integers(1, 1 << 16, (ROWS, PITCH_ELEMS)).astype(np.uint16)
    m = Machine(program, Geometry(1, 1, rb, 128, 0), Global([memory.reshape(-1).view(np.uint8).copy()]))
    m.views["uq"][0, 2 * rb // 8] = np.uint64(base(0) + base_row * PITCH_ELEMS * 2)
    m.views["ud"][0, 2 * rb // 4 + 2: 2 * rb // 4 + 8] = np.array(
        [width * 2 - 1, height - 1, PITCH_ELEMS * 2 - 1, x & 0xFFFFFFFF, y & 0xFFFFFFFF,
         (w - 1) | (h - 1) << 8 | (a - 1) << 16], dtype=np.uint32)
    m.views["uw"][0, 20 * rb // 2: (20 + nregs) * rb // 2] = 0xDEAD
    m.run()
    got = m.views["uw"][0, 20 * rb // 2: 20 * rb // 2 + w * h * a]
    assert got.tolist() == _oracle(memory, (width, height, base_row), x, y, w, h, a).tolist()
