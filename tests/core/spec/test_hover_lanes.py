"""Nested layouts of sm_90 accumulators against the PTX ISA's fragment formulas."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from kdd.core.spec.hover_lanes import fragment_layout, warp_tile_layout
from kdd.core.targets import SM90

MMA_SHAPES = [s for s in SM90.fma_shapes if s.fma == "mma"]
FMA_SHAPES = [s for s in SM90.fma_shapes if s.fma == "fma"]


def ptx_owner(row, col, m):
    """PTX ISA mma C fragment (m16n8k*, m8n8k4): lane groupID*4 + threadID_in_group holds
    rows groupID (c0, c1) and groupID + 8 (c2, c3, m16 only), columns threadID_in_group*2 + (0, 1)."""
    lane = (row % 8) * 4 + col // 2
    register = (row // 8) * 2 + col % 2
    return lane, register


@pytest.mark.parametrize("shape", MMA_SHAPES, ids=lambda s: s.spelling)
def test_each_mma_fragment_puts_every_element_on_the_ptx_lane_and_register(shape):
    frag = fragment_layout(shape)
    assert frag.shape == (shape.m, shape.n)
    _, lanes = frag.lane_of()
    registers = frag.element_of()
    for row in range(shape.m):
        for col in range(shape.n):
            assert (lanes[row, col], registers[row, col]) == ptx_owner(row, col, shape.m)
    # every lane holds m*n/32 elements: 4 for m16n8, 2 for m8n8
    assert frag.elements_per_thread == shape.m * shape.n // 32
    assert sorted(np.bincount(lanes.ravel())) == [frag.elements_per_thread] * 32


@pytest.mark.parametrize("shape", FMA_SHAPES, ids=lambda s: s.spelling)
def test_a_scalar_fma_gives_lane_l_column_l(shape):
    _, lanes = fragment_layout(shape).lane_of()
    assert lanes.tolist() == [list(range(32))]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(MMA_SHAPES), st.integers(1, 6), st.integers(1, 6), st.data())
def test_a_warp_tile_is_a_batch_of_fragments_in_register_order(shape, bm, bn, data):
    tile = warp_tile_layout(shape, bm * shape.m, bn * shape.n)
    row = data.draw(st.integers(0, bm * shape.m - 1))
    col = data.draw(st.integers(0, bn * shape.n - 1))
    (_, lane), = zip(*tile.lane_of(np.array([[row, col]])))
    register = tile.element_of(np.array([[row, col]]))[0]
    in_lane, in_register = ptx_owner(row % shape.m, col % shape.n, shape.m)
    fragment = (row // shape.m) * bn + col // shape.n  # fragments numbered row-major
    per_fragment = shape.m * shape.n // 32
    assert (lane, register) == (in_lane, fragment * per_fragment + in_register)


def test_a_tile_that_is_not_whole_fragments_has_no_warp_layout():
    assert warp_tile_layout(MMA_SHAPES[0], 24, 8) is None
    assert warp_tile_layout(MMA_SHAPES[0], 16, 12) is None
