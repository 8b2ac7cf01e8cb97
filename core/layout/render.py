"""Text pictures of layouts for hovers and logs.

* :func:`cute` — a CuTe-style ``(shape):(stride)`` string of a :class:`Layout`.
* :func:`slice_table` — a markdown table of the element offsets of a 2D slice.
* :func:`describe` — the hover text of a layout (tag, blocks, strides, size, table).
* :func:`lane_grid` / :func:`outer_grids` — which thread holds each element of a
  :class:`NestedLayout`, drawn as seed 001 draws it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from kdd.core.layout.layout import Layout
from kdd.core.layout.nested import NestedLayout
from kdd.core.layout.tags import POSITIONAL

if TYPE_CHECKING:  # numpy is imported where arrays are made, so an Xe compile does not load it
    import numpy as np

_CLIP = "…"


def cute(layout: Layout) -> str:
    """``(shape):(stride)`` with one mode per logical dim (:meth:`Layout.cute`)."""
    return layout.cute()


def slice_table(
    layout: Layout,
    rows: int | None,
    cols: int,
    at: Sequence[int] | None = None,
    *,
    dim_names: Sequence[str] | None = None,
    limit: int = 8,
) -> str:
    """Markdown table of the element offset of each index of a 2D slice.

    Rows walk dim ``rows`` (None: a single row), columns dim ``cols``; every
    other dim stays at its entry of ``at`` (default all 0). At most ``limit``
    rows and columns are shown, a ``…`` marks the clipped rest.
    """
    at = list(at) if at is not None else [0] * layout.ndims
    if len(at) != layout.ndims or rows == cols:
        raise ValueError(f"bad slice rows={rows} cols={cols} at={at} for {layout.ndims} dims")
    names = dim_names or POSITIONAL
    n_rows = layout.dims[rows] if rows is not None else 1
    n_cols = layout.dims[cols]
    col_ids = list(range(min(n_cols, limit)))
    head = f"{names[rows]}\\{names[cols]}" if rows is not None else names[cols]
    lines = [_row([head] + [str(c) for c in col_ids] + ([_CLIP] if n_cols > limit else []))]
    lines.append(_row(["---"] * (len(col_ids) + 1 + (n_cols > limit))))
    for r in range(min(n_rows, limit)):
        cells = []
        for c in col_ids:
            idx = list(at)
            if rows is not None:
                idx[rows] = r
            idx[cols] = c
            cells.append(str(layout.offset_of(idx)))
        label = str(r) if rows is not None else ""
        lines.append(_row([label] + cells + ([_CLIP] if n_cols > limit else [])))
    if n_rows > limit:
        lines.append(_row([_CLIP] * (len(col_ids) + 1 + (n_cols > limit))))
    return "\n".join(lines)


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def describe(layout: Layout, dim_names: Sequence[str] | None = None) -> str:
    """Markdown hover text: tag, type and dims, explicit blocks, CuTe form, size, and an offset table.

    The table's columns walk the dim of the innermost block and its rows the
    dim of the next innermost block of another dim.
    """
    tag = layout.tag(dim_names)
    dims = "x".join(map(str, layout.dims))
    padded = "x".join(map(str, layout.padded_dims))
    lines = [
        f"**{tag or 'custom layout'}** {layout.dtype} {dims}"
        + (f" (padded {padded})" if padded != dims else ""),
        "",
        f"- blocks (outer to inner): `{layout.blocks_str(dim_names)}`",
        f"- shape:stride per dim: `{cute(layout)}`",
        f"- size: {layout.size_bytes()} bytes, {'dense' if layout.is_dense() else 'with holes or overlaps'}",
        "",
    ]
    inner_dims = list(dict.fromkeys(b.dim for b in layout.coalesce().blocks))
    inner_dims += [d for d in reversed(range(layout.ndims)) if d not in inner_dims]
    cols = inner_dims[0]
    rows = inner_dims[1] if layout.ndims > 1 else None
    lines.append(slice_table(layout, rows, cols, dim_names=dim_names))
    return "\n".join(lines)


def lane_grid(
    layout: NestedLayout,
    show: str = "thread",
    num_subgroups: int | None = None,
    limit: int | None = None,
) -> str:
    """The vector drawn as rows of ``[...]``, each cell the ``show``n owner of that element.

    ``show`` is ``"thread"``, ``"subgroup"`` or ``"element"`` (register id).
    Rank 1 draws one row, rank 2 a grid; ``limit`` clips rows and columns.
    """
    if show == "element":
        grid = layout.element_of(None, num_subgroups)
    elif show in ("thread", "subgroup"):
        sg, thr = layout.lane_of(None, num_subgroups)
        grid = thr if show == "thread" else sg
    else:
        raise ValueError(f"show must be 'thread', 'subgroup' or 'element', got {show!r}")
    return _grid_text(grid, limit)


def outer_grids(layout: NestedLayout) -> str:
    """Per outer tile, the thread id at each thread-tile position, as seed 001 draws it::

        outer = 0,0 :
        [0 1 2 3 4]
        [5 6 7 8 9]
    """
    import numpy as np
    threads = _grid_text(layout.thread_grid(), None)
    blocks = []
    for outer in np.ndindex(*layout.outer_tile):
        blocks.append(f"outer = {','.join(map(str, outer))} :\n{threads}")
    return "\n\n".join(blocks)


def _grid_text(grid: np.ndarray, limit: int | None) -> str:
    if grid.ndim == 1:
        grid = grid[None, :]
    if grid.ndim != 2:
        raise ValueError(f"can only draw rank-1 and rank-2 layouts, got rank {grid.ndim}")
    rows, cols = grid.shape
    shown = grid[:limit, :limit] if limit else grid
    width = len(str(int(shown.max())))
    clip_cols = limit is not None and cols > limit
    lines = []
    for row in shown:
        cells = [str(int(v)).rjust(width) for v in row] + ([_CLIP] if clip_cols else [])
        lines.append("[" + " ".join(cells) + "]")
    if limit is not None and rows > limit:
        lines.append(_CLIP)
    return "\n".join(lines)
