"""Hover of a layout tag (``[problem] src``, ``wei``, ``dst``).

The tag is read against the tensor's logical dims and data type from the
problem, and drawn with the layout module's own pictures (:func:`describe`:
canonical tag, blocks, CuTe form, size, an offset table), plus every block
with its stride in elements and bytes.
"""
from __future__ import annotations

from kdd.core.config import operands
from kdd.core.layout import Layout, describe, parse_layout

from .document import Value
from .hover_problem import error_text
from .hover_text import code, join, table

INT64_MAX = 2**63 - 1
TENSOR_WORDS = {"src": "source", "wei": "weights", "dst": "destination"}


def block_table(layout: Layout, dim_names: list[str]) -> str:
    """Every block, outer to inner, with its stride."""
    size = layout.dtype.size
    rows = [(i, dim_names[b.dim], b.size, b.stride, b.stride * size)
            for i, b in enumerate(reversed(layout.blocks))]
    return table(("block", "dim", "size", "stride (elements)", "stride (bytes)"), rows)


def layout_hover(ctx, tensor: str, value: Value) -> str:
    """The layout of ``tensor`` that the tag string ``value`` gives."""
    tag = value.value
    problem = ctx.problem
    if problem is None:
        return f"**{tensor} layout** {code(tag)}: shown once [problem] op, shape and types are valid"
    dims = problem.tensor_dims(tensor)
    names = [name for name, _ in dims]
    sizes = [s for _, s in dims]
    dtype = getattr(problem.types, tensor)
    role = "ABC"[operands(problem).tensors.index(tensor)]
    title = (f"**{tensor} layout** {code(tag)}: {TENSOR_WORDS[tensor]}, GEMM operand {role}, {dtype}, "
             f"dims {' '.join(f'{n}{s}' for n, s in dims)}")
    try:
        layout = parse_layout(tag, sizes, dtype, dim_names=names)
    except ValueError as exc:
        return join(title, error_text(exc, tag))
    if layout.size_bytes() > INT64_MAX:
        # Offsets are computed in int64 by the layout's pictures; a tensor this large has only its blocks.
        return join(title, f"Too large to draw: {layout.size_bytes():,} bytes.", block_table(layout, names))
    return join(title, describe(layout, names), block_table(layout, names))
