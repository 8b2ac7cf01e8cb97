"""Layout offsets, size, density, coalesce and split, against brute-force oracles."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.ir.types import f16, f32
from kdd.core.layout import Block, Layout, parse_layout
from layout_strategies import (
    all_indices,
    dense_layouts,
    oracle_dense_positions,
    oracle_offsets,
    strided_layouts,
)

SEED_DIMS = (128, 64, 7, 7)
NAMES = ("mb", "ic", "ih", "iw")


def test_seed_nchw32n32c_blocks_innermost_first():
    layout = parse_layout("NChw32n32c", SEED_DIMS, f16, dim_names=NAMES)
    assert layout.blocks == (
        Block(1, 32, 1), Block(0, 32, 32), Block(3, 7, 1024),
        Block(2, 7, 7 * 1024), Block(1, 2, 49 * 1024), Block(0, 4, 2 * 49 * 1024),
    )
    assert layout.blocks_str(NAMES) == "4n2c7h7w32n32c"


def test_seed_offset_formula():
    layout = parse_layout("NChw32n32c", SEED_DIMS, f32, dim_names=NAMES)
    for n, c, h, w in [(0, 0, 0, 0), (1, 0, 0, 0), (33, 5, 2, 6), (127, 63, 6, 6)]:
        expected = ((((n // 32) * 2 + c // 32) * 7 + h) * 7 + w) * 1024 + (n % 32) * 32 + c % 32
        assert layout.offset_of((n, c, h, w)) == expected
    assert layout.size_bytes() == math.prod(SEED_DIMS) * 4
    assert layout.elems() == math.prod(SEED_DIMS)


def test_padding_counts_in_size_not_elems():
    layout = parse_layout("aBcd16b", (2, 20, 3, 3), f16)
    assert layout.padded_dims == (2, 32, 3, 3)
    assert layout.elems() == 2 * 20 * 9
    assert layout.padded_elems() == 2 * 32 * 9
    assert layout.size_bytes() == 2 * 32 * 9 * 2
    # Index 20..31 of the blocked dim is padding: still addressable storage.
    assert layout.offset_of((0, 31, 0, 0)) == 16 * 9 + 15


def test_offset_counts_in_size_and_offsets():
    layout = parse_layout("ab", (3, 4), f32, offset=10)
    assert layout.offset_of((1, 2)) == 16
    assert layout.size_bytes() == (10 + 12) * 4


def test_offset_of_rejects_out_of_range():
    layout = parse_layout("ab", (3, 4), f32)
    with pytest.raises(IndexError):
        layout.offset_of((3, 0))
    with pytest.raises(ValueError):
        layout.offset_of((1,))


def test_invalid_layouts_raise():
    with pytest.raises(ValueError, match="cover 4 elements"):
        Layout(f32, (5,), (Block(0, 4, 1),))
    with pytest.raises(ValueError, match="names dim 2"):
        Layout(f32, (4, 4), (Block(2, 4, 1),))
    with pytest.raises(ValueError):
        Block(0, 0, 1)


@settings(max_examples=300, deadline=None)
@given(dense_layouts())
def test_offset_of_dense_matches_reshape_transpose(layout):
    idx = all_indices(layout.padded_dims)
    assert np.array_equal(layout.offsets_of(idx), oracle_dense_positions(layout))
    assert layout.offset_of(tuple(idx[-1])) == oracle_dense_positions(layout)[-1]
    assert layout.is_dense()
    assert layout.size_bytes() == (layout.offset + layout.padded_elems()) * layout.dtype.size


@settings(max_examples=300, deadline=None)
@given(strided_layouts())
def test_offset_of_strided_matches_index_grid(layout):
    idx = all_indices(layout.padded_dims)
    offsets = layout.offsets_of(idx)
    assert np.array_equal(offsets, oracle_offsets(layout))
    # Dense means: the padded tensor fills a contiguous range exactly once.
    fills = sorted(offsets.tolist()) == list(range(layout.offset, layout.offset + offsets.size))
    assert layout.is_dense() == fills
    assert layout.size_bytes() == (int(offsets.max()) + 1) * layout.dtype.size


@settings(max_examples=300, deadline=None)
@given(strided_layouts())
def test_coalesce_preserves_offsets_and_is_minimal(layout):
    merged = layout.coalesce()
    idx = all_indices(layout.padded_dims)
    assert np.array_equal(merged.offsets_of(idx), layout.offsets_of(idx))
    assert merged.is_equal(layout) and layout.is_equal(merged)
    assert merged.coalesce() == merged
    assert all(b.size > 1 for b in merged.blocks)
    for inner, outer in zip(merged.blocks, merged.blocks[1:]):
        assert not (inner.dim == outer.dim and outer.stride == inner.stride * inner.size)


def test_coalesce_merges_seed_style_blocks():
    # aBcd16b with 16 channels: the outer channel block has size 1 and vanishes.
    layout = parse_layout("aBcd16b", (2, 16, 3, 3), f16)
    assert layout.coalesce().blocks == (Block(1, 16, 1), Block(3, 3, 16), Block(2, 3, 48), Block(0, 2, 144))
    assert layout.is_equal(parse_layout("acdb", (2, 16, 3, 3), f16))
    assert not layout.is_equal(parse_layout("abcd", (2, 16, 3, 3), f16))
    assert not parse_layout("Ab4a", (8, 3), f32).is_equal(parse_layout("ab", (8, 3), f32))
    assert parse_layout("Ab4a", (4, 3), f32).coalesce().blocks == (Block(0, 4, 1), Block(1, 3, 4))


@st.composite
def layouts_with_tiles(draw):
    layout = draw(dense_layouts())
    tile = []
    for d in range(layout.ndims):
        sizes = [b.size for b in layout.blocks if b.dim == d]  # inner to outer
        whole = draw(st.integers(0, len(sizes)))
        part = math.prod(sizes[:whole])
        if whole < len(sizes):
            divisors = [k for k in range(1, sizes[whole] + 1) if sizes[whole] % k == 0]
            part *= draw(st.sampled_from(divisors))
        tile.append(part)
    return layout, tuple(tile)


@settings(max_examples=300, deadline=None)
@given(layouts_with_tiles())
def test_split_preserves_offsets(case):
    layout, tile = case
    sub, origins = layout.split(tile)
    assert sub.dims == tile
    assert origins.shape == tuple(p // t for p, t in zip(layout.padded_dims, tile))
    idx = all_indices(layout.padded_dims)
    tiles = idx // np.asarray(tile)
    local = idx % np.asarray(tile)
    expected = origins[tuple(tiles.T)] + sub.offsets_of(local)
    assert np.array_equal(layout.offsets_of(idx), expected)


def test_split_seed_layout_into_32x32_tiles():
    layout = parse_layout("NChw32n32c", SEED_DIMS, f16, dim_names=NAMES)
    sub, origins = layout.split((32, 32, 1, 1))
    assert sub.blocks == (Block(1, 32, 1), Block(0, 32, 32))
    assert sub.is_dense() and sub.tag() == "abcd"
    assert origins.shape == (4, 2, 7, 7)
    assert origins[1, 1, 2, 3] == layout.offset_of((32, 32, 2, 3))


def test_split_rejects_misaligned_tile():
    layout = parse_layout("aBcd16b", (2, 32, 3, 3), f16)
    with pytest.raises(ValueError, match="does not align"):
        layout.split((1, 24, 1, 1))
    with pytest.raises(ValueError, match="exceeds"):
        layout.split((4, 16, 1, 1))
