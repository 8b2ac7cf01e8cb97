"""Memory layouts (seed 000) and nested register layouts (seed 001).

* :class:`Layout` / :class:`Block` — how logical indices map to element
  offsets in memory; :func:`parse_layout` reads oneDNN tags (``acdb``,
  ``aBx16b``, ``NChw32n32c``, ``4n2c7h7w32n32c``).
* :class:`NestedLayout` — how a vector is spread over subgroups, threads and
  per-thread registers.
* :mod:`kdd.core.layout.render` — text pictures of both for hovers.
"""
from kdd.core.layout.layout import Block, Layout, parse_layout
from kdd.core.layout.nested import NestedLayout
from kdd.core.layout.render import cute, describe, lane_grid, outer_grids, slice_table
from kdd.core.layout.tags import LayoutTagError

__all__ = [
    "Block",
    "Layout",
    "LayoutTagError",
    "NestedLayout",
    "cute",
    "describe",
    "lane_grid",
    "outer_grids",
    "parse_layout",
    "slice_table",
]
