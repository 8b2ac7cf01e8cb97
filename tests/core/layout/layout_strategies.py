"""Hypothesis strategies and brute-force oracles shared by the layout tests."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from kdd.core.ir.types import f16, f32, s8
from kdd.core.layout import Block, Layout

DTYPES = st.sampled_from([f16, f32, s8])


@st.composite
def dense_block_lists(draw, max_dims=4):
    """(dims, [(dim, size), ...] outer to inner): every dim blocked 1-3 times, blocks in any order."""
    ndims = draw(st.integers(1, max_dims))
    dims = [draw(st.integers(1, 12)) for _ in range(ndims)]
    blocks = []
    for d in range(ndims):
        inner = draw(st.lists(st.sampled_from([1, 2, 3, 4]), max_size=2))
        blocks.append((d, -(-dims[d] // math.prod(inner))))
        blocks += [(d, s) for s in inner]
    return dims, draw(st.permutations(blocks))


@st.composite
def dense_layouts(draw, max_dims=4):
    dims, blocks = draw(dense_block_lists(max_dims))
    return Layout.dense(draw(DTYPES), dims, blocks, draw(st.integers(0, 5)))


@st.composite
def strided_layouts(draw):
    """Layouts with arbitrary strides (holes, overlaps and broadcasts allowed)."""
    base = draw(dense_layouts(max_dims=3))
    blocks = tuple(Block(b.dim, b.size, draw(st.integers(0, 40))) for b in base.blocks)
    return Layout(base.dtype, base.dims, blocks, base.offset)


def all_indices(shape) -> np.ndarray:
    """Every index of ``shape`` as ``(prod, ndims)``, row-major."""
    return np.stack(np.unravel_index(np.arange(math.prod(shape)), shape), axis=-1)


def _blocked_axes(layout: Layout):
    """Per dim (in dim order), its blocks outer to inner, with their position in the physical order."""
    outer_to_inner = list(reversed(layout.blocks))
    return [[k for k, b in enumerate(outer_to_inner) if b.dim == d] for d in range(layout.ndims)]


def oracle_offsets(layout: Layout) -> np.ndarray:
    """Offset of every padded index (row-major over padded dims), from numpy reshape + index grids.

    The padded logical array is reshaped so each dim splits into its blocks
    (outer to inner, C order makes the innermost block the fastest digit);
    each block axis then contributes its coordinate times its stride.
    """
    outer_to_inner = list(reversed(layout.blocks))
    groups = _blocked_axes(layout)
    blocked_shape = [outer_to_inner[k].size for g in groups for k in g] or [1]
    strides = [outer_to_inner[k].stride for g in groups for k in g] or [0]
    coords = np.indices(blocked_shape).reshape(len(blocked_shape), -1)
    return layout.offset + np.tensordot(np.asarray(strides), coords, axes=1)


def oracle_dense_positions(layout: Layout) -> np.ndarray:
    """For a dense layout: physical position of every padded index, via reshape/transpose/ravel."""
    padded = layout.padded_dims
    linear = np.arange(math.prod(padded))
    groups = _blocked_axes(layout)
    blocked_shape = [list(reversed(layout.blocks))[k].size for g in groups for k in g]
    order_in_grouped = [k for g in groups for k in g]  # grouped axis j holds physical block k
    physical_axes = [order_in_grouped.index(k) for k in range(len(order_in_grouped))]
    physical = linear.reshape(blocked_shape).transpose(physical_axes).ravel()
    positions = np.empty_like(physical)
    positions[physical] = np.arange(physical.size)
    return layout.offset + positions
