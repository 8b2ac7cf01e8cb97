"""Memory layouts (seed 000) and nested register layouts (seed 001).

* :class:`Layout` / :class:`Block` — how logical indices map to element
  offsets in memory; :func:`parse_layout` reads oneDNN tags (``acdb``,
  ``aBx16b``, ``NChw32n32c``, ``4n2c7h7w32n32c``).
* :class:`NestedLayout` — how a vector is spread over subgroups, threads and
  per-thread registers.
* :class:`View` — a tensor seen through view dims (M/N/K/batch kinds):
  mapping expressions to tensor dims and access masks;
  :func:`conv_views` and :func:`gemm_views` build the A/B/C views of a problem.
* :mod:`kdd.core.layout.render` — text pictures of layouts for hovers.
"""
from kdd.core.layout.layout import Block, Layout, parse_layout
from kdd.core.layout.nested import NestedLayout
from kdd.core.layout.render import cute, describe, lane_grid, outer_grids, slice_table
from kdd.core.layout.tags import LayoutTagError
from kdd.core.layout.view import DimKind, View, ViewDim
from kdd.core.layout.view_conv import conv_views
from kdd.core.layout.view_gemm import gemm_views

__all__ = [
    "Block",
    "DimKind",
    "Layout",
    "LayoutTagError",
    "NestedLayout",
    "View",
    "ViewDim",
    "conv_views",
    "cute",
    "describe",
    "gemm_views",
    "lane_grid",
    "outer_grids",
    "parse_layout",
    "slice_table",
]
