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

The names load their module on first use (:mod:`kdd.core.lazy_exports`): importing one module of the
package (``kdd.core.layout.layout``, say) does not load the others (the hovers' pictures).
"""
from kdd.core.lazy_exports import lazy_exports

_WHERE = {
    "Block": "layout", "Layout": "layout", "parse_layout": "layout", "NestedLayout": "nested",
    "cute": "render", "describe": "render", "lane_grid": "render", "outer_grids": "render", "slice_table": "render",
    "LayoutTagError": "tags", "DimKind": "view", "View": "view", "ViewDim": "view", "conv_views": "view_conv",
    "gemm_views": "view_gemm",
}
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

__getattr__ = lazy_exports(__name__, _WHERE)
