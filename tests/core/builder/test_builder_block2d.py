"""2D block loads of dpas's A on Xe-HPC: A's register blocks ordered so that one message fills many rows.

A dpas reads ``rcount`` rows of one K block (8 x 32 B for bf16) as one piece; A's register layout may
hold ``rows`` consecutive rows of a K block together (``DpasKind.a_layouts``), and the builder takes the
order the fewest ``load_block2d`` messages fill. The interpreter's check against the float64 reference
is the oracle for the dpas offsets and the messages; numpy slicing is the oracle for the fragments.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from builder_cases import problem
from kdd.core.builder import build_kernel
from kdd.core.builder.fma import DpasKind
from kdd.core.config.line import parse_config_line
from kdd.core.interp.check import check_kernel
from kdd.core.ir import For, FuncCall, walk
from kdd.core.ir.funcs import Send2D
from kdd.core.ir.types import bf16, f32
from kdd.core.problem import parse_shape
from kdd.core.targets import get_target

TAGS = {"src": "abc", "wei": "acb", "dst": "abc"}
XEHPC = get_target("xehpc")


def _gemm(shape: str, tile: str):
    p = problem(parse_shape(shape), types="bf16:bf16:f32", tags=TAGS)
    dims = [n for r in "bmnk" for n, _ in getattr(p.gemm_dims(), r)]
    return p, build_kernel(p, parse_config_line(f"fma=dpas simd=16 regs=256 i={tile}", dims), "xehpc")


def _messages(kernel) -> list[tuple[Send2D, int]]:
    """Each ``load_block2d`` with the trips of its message loop (1 where it has none)."""
    looped = {id(c): loop.bound.value for loop in walk(kernel.body) if isinstance(loop, For)
              for c in walk(loop.body) if loop.var.name.startswith("a_msg")}
    return [(c.func, looped.get(id(c), 1)) for c in walk(kernel.body)
            if isinstance(c, FuncCall) and isinstance(c.func, Send2D)]


@pytest.mark.parametrize("tile,message,count", [
    ("m64n32k32", "16x16x2", 4),  # gemm_bert's tile: 16 x 32 x 2 (2048 B) would be 32 registers, one too many
    ("m24n16k32", "16x24x2", 1),  # 24 rows of both K blocks: 1536 B
    ("m40n16k32", "16x20x1", 4),  # 40 rows of one K block together, 20 a message
    ("m64n16k16", "16x32x1", 2),  # one K block: 32 rows, the most a message has
])
def test_a_loads_in_the_largest_blocks_the_target_and_the_tile_allow(tile, message, count):
    """Against the 8-row blocks of A's own layout (gemm_bert: 8 messages of 16 x 8 x 2), rows past the
    problem's M (40) reading zeros."""
    p, kernel = _gemm("1x40x64:1x64x16", tile)
    assert [(f"{f.width}x{f.height}x{f.array}", n) for f, n in _messages(kernel)] == [(message, count)]
    assert check_kernel(kernel, p).ok


def test_every_a_layout_holds_the_fragments_dpas_reads():
    """Each of dpas's A layouts puts fragment ``(mb, kb)`` (rows ``8 mb ..``, K ``16 kb ..``, row-major, as
    numpy slices the matrix) in one contiguous piece of 128 elements; the layouts differ in the pieces'
    order only, and the one a message of ``rows`` rows fills has them in message order."""
    fma = DpasKind(bf16, bf16, f32, 16)
    matrix = np.arange(48 * 64).reshape(48, 64)
    layouts = fma.a_layouts(1, 48, 64, True)
    assert [lay.blocks[1].size for lay in layouts] == [8, 16, 24, 48]
    for layout in layouts:
        regs = np.empty(48 * 64, np.int64)
        regs[layout.offsets_of(np.indices((1, 48, 64)).reshape(3, -1).T)] = matrix.reshape(-1)
        pieces = {}
        for mb in range(6):
            for kb in range(4):
                start = layout.offset_of((0, mb * 8, kb * 16))
                fragment = matrix[mb * 8: mb * 8 + 8, kb * 16: kb * 16 + 16]
                assert (regs[start: start + 128] == fragment.reshape(-1)).all()
                pieces[start] = (mb, kb)
        rows = layout.blocks[1].size
        assert [pieces[s] for s in sorted(pieces)] == [(g * rows // 8 + r, kb) for g in range(48 // rows)
                                                      for kb in range(4) for r in range(rows // 8)]


@settings(max_examples=25, deadline=None)
@given(m_blocks=st.integers(1, 8), k_blocks=st.sampled_from((1, 2, 3, 4)), extra=st.integers(0, 40),
       trips=st.integers(2, 3))
@example(m_blocks=1, k_blocks=3, extra=0, trips=2)  # K 48: B's vector gathers do not split it (was a ValueError)
def test_any_a_tile_loads_within_the_limits_in_no_more_messages_and_computes_the_product(m_blocks, k_blocks,
                                                                                         extra, trips):
    """Any dpas A tile of ``m_blocks`` x 8 rows and ``k_blocks`` x 16 K (bf16): each message is one the
    target has, on whole registers; together they fill the tile once, in no more messages than the 8-row
    blocks of A's own layout (8 x 16 x 2, or x 1 for one K block); the result is the reference's (M at
    least the tile's: a tile padded past the matrix takes 1D messages and zeros; K of 2 tiles or more: a
    surface is at least 64 bytes wide)."""
    m, k = 8 * m_blocks, 16 * k_blocks
    p, kernel = _gemm(f"1x{m + extra}x{k * trips}:1x{k * trips}x16", f"m{m}n16k{k}")
    (f, count), = _messages(kernel)
    reg_bytes = XEHPC.registers.reg_bytes
    assert XEHPC.messages.block2d.block_problem(2, f.width, f.height, f.array, reg_bytes) is None
    assert count == 1 or f.elems * 2 % reg_bytes == 0
    assert count * f.elems == m * k and count <= m * k // (8 * 16 * (2 if k_blocks % 2 == 0 else 1))
    assert check_kernel(kernel, p).ok


def _lands_by_numpy(layout, w: int, h: int, a: int, rows: int, cols: int, size: int, span: int) -> bool:
    """The oracle of ``_lands``: the layout's matrix positions from numpy's vectorized offsets, cut into
    messages and compared with the block shape's as whole arrays; each message's rows inside one run of
    ``span``."""
    index = np.indices(layout.padded_dims).reshape(3, -1).T
    pos = np.full((layout.padded_elems(), 3), -1, dtype=np.int64)
    pos[layout.offsets_of(index) - layout.offset] = index
    chunks = pos.reshape(-1, a, h, w, 3)
    origin = chunks[:, :1, :1, :1, :]
    want = np.zeros((a, h, w, 3), dtype=np.int64)
    want[..., cols] = np.arange(a)[:, None, None] * w + np.arange(w)[None, None, :]
    want[..., rows] = np.arange(h)[None, :, None]
    inside = (origin[..., rows] % span + h <= span).all()
    return not (origin[..., cols] * size % 4).any() and bool(inside) and bool((chunks == origin + want).all())


@settings(max_examples=60, deadline=None)
@given(blocks=st.lists(st.tuples(st.integers(0, 2), st.sampled_from((1, 2, 3, 4, 8))), min_size=1, max_size=5),
       w=st.sampled_from((1, 2, 4, 8)), h=st.integers(1, 4), a=st.sampled_from((1, 2)),
       rows=st.sampled_from((1, 2)), size=st.sampled_from((1, 2, 4)), offset=st.integers(0, 3),
       span=st.sampled_from((1, 2, 3, 4, 64)))
def test_block_shapes_land_where_numpy_places_the_layouts_elements(blocks, w, h, a, rows, size, offset, span):
    """``plan_block2d``'s test of a block shape, in plain integers, agrees with numpy's whole-array form on
    any dense three-dim layout (padded dims, blocks of one dim split and interleaved, an offset), with the
    rows' surface runs (``span``: the innermost view dim of several) of any length."""
    from kdd.core.builder.loads import _lands, _matrix_positions
    from kdd.core.layout.layout import Layout

    padded = [math.prod(s for d, s in blocks if d == dim) for dim in range(3)]
    layout = Layout.dense("bf16", padded, blocks, offset)
    pos = _matrix_positions(layout)
    if len(pos) % (w * h * a):
        return
    assert _lands(pos, list(zip(*pos)), w, h, a, rows, 3 - rows, size, span) == _lands_by_numpy(
        layout, w, h, a, rows, 3 - rows, size, span)
