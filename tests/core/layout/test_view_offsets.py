"""``offset_expr``: the IR form of a layout's offset function, against the numpy oracle."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings

from kdd.core.ir import var
from kdd.core.layout.view import eval_numpy, offset_expr
from layout_strategies import dense_layouts, oracle_offsets, strided_layouts


def _check(layout):
    index = [var(f"t{d}") for d in range(layout.ndims)]
    grids = np.indices(layout.padded_dims).reshape(layout.ndims, -1)
    got = eval_numpy(offset_expr(layout, index), {v: grids[d] for d, v in enumerate(index)})
    np.testing.assert_array_equal(np.broadcast_to(got, grids.shape[1:]), oracle_offsets(layout))


@settings(max_examples=200, deadline=None)
@given(dense_layouts())
def test_offset_expr_matches_the_oracle_on_dense_layouts(layout):
    _check(layout)


@settings(max_examples=100, deadline=None)
@given(strided_layouts())
def test_offset_expr_matches_the_oracle_on_strided_layouts(layout):
    _check(layout)
