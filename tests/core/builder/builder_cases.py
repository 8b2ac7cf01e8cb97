"""Small problems for builder tests, reduced from benchdnn's shape files.

Channels above 32 become ``16 + c % 16`` (a tail stays a tail), spatial inputs
are cut to a few kernel extents, ``mb`` to 2 and groups to 4, so every case
runs in the interpreter in a fraction of a second while keeping the shape's
strides, paddings, dilations, groups and tails.
"""
from __future__ import annotations

from pathlib import Path

from kdd.core.problem import Problem, parse_data_types
from kdd.core.problem.conv_shape import compute_out, kernel_extent, parse_conv_shape
from kdd.core.problem.gemm_shape import GemmShape, parse_gemm_shape

BENCHDNN = Path("/work/shared/data/benchdnn")


def _lines(path: Path) -> list[str]:
    out = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(line)
    return out


def _channels(c: int) -> int:
    return c if c <= 32 else 16 + c % 16


def reduce_conv(text: str):
    """A small version of conv descriptor ``text`` (None when no valid reduction exists)."""
    s = parse_conv_shape(text)
    g = min(s.g, 4)
    parts = [f"g{g}", f"mb{min(s.mb, 2)}", f"ic{g * _channels(s.ic // s.g)}", f"oc{g * _channels(s.oc // s.g)}"]
    for a in s.used_axes:
        ax = s.axis(a)
        i = min(ax.i, max(kernel_extent(ax.k, ax.d) + 2 * ax.s, 6))
        if compute_out(i, ax.k, ax.s, ax.pl, ax.d) < 1:
            return None
        parts.append(f"i{a}{i}k{a}{ax.k}s{a}{ax.s}p{a}{ax.pl}d{a}{ax.d}")
    return parse_conv_shape("_".join(parts))


def reduce_gemm(text: str) -> GemmShape:
    s = parse_gemm_shape(text)
    cut = lambda x: x if x <= 48 else 16 + x % 32  # noqa: E731
    return GemmShape(tuple(min(b, 2) for b in s.batch), cut(s.m), cut(s.n), cut(s.k))


def conv_shapes() -> list:
    """Reduced, distinct shapes of shapes_basic, shapes_tails and shapes_1x1, in file order."""
    seen, out = set(), []
    for name in ("shapes_basic", "shapes_tails", "shapes_1x1"):
        for line in _lines(BENCHDNN / "conv" / name):
            shape = reduce_conv(line)
            if shape is not None and shape.canonical() not in seen:
                seen.add(shape.canonical())
                out.append(shape)
    return out


def gemm_shapes() -> list:
    seen, out = set(), []
    for name in ("shapes_2d", "shapes_bert", "shapes_perf_basic"):
        for line in _lines(BENCHDNN / "matmul" / name):
            shape = reduce_gemm(line)
            if shape.canonical() not in seen:
                seen.add(shape.canonical())
                out.append(shape)
    return out


def problem(shape, prop: str = "fwd", types: str = "f32", tags=None, post_ops=()) -> Problem:
    op = "gemm" if isinstance(shape, GemmShape) else "conv"
    return Problem(op=op, prop=prop, shape=shape, types=parse_data_types(types), tags=tags or {},
                   post_ops=tuple(post_ops))
