"""benchdnn's problem sets (``../shared/data/benchdnn`` beside the clone), read and reduced for tests.

``KDD_BENCHDNN_DIR`` overrides the location. A missing directory is an error,
not a skip: these files are the real test cases of the problem parser, the
builder matrix and the pass semantics tests.

Reduction keeps what makes a shape interesting and drops what only makes it
slow: channels above 32 become ``16 + c % 16`` (a tail stays a tail), spatial
inputs are cut to a few kernel extents, ``mb`` to 2 and groups to a cap, GEMM
sizes above 48 to ``16 + x % 32``; strides, paddings, dilations and tails stay.
"""
from __future__ import annotations

import os
from pathlib import Path

from kdd.core.problem.conv_shape import ConvShape, compute_out, kernel_extent, parse_conv_shape
from kdd.core.problem.gemm_shape import GemmShape, parse_gemm_shape

_REPO = Path(__file__).resolve().parents[1]


def _locate() -> Path:
    candidates = [Path(os.environ["KDD_BENCHDNN_DIR"])] if "KDD_BENCHDNN_DIR" in os.environ else []
    candidates.append(_REPO.parent / "shared" / "data" / "benchdnn")
    for path in candidates:
        if (path / "conv").is_dir():
            return path
    raise FileNotFoundError(f"benchdnn problem sets not found (looked in {', '.join(map(str, candidates))}); "
                            f"set KDD_BENCHDNN_DIR")


BENCHDNN = _locate()


def shape_lines(name: str) -> list[str]:
    """The descriptors of problem set ``name`` (``conv/shapes_basic``), comments and blanks dropped."""
    out = []
    for line in (BENCHDNN / name).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(line)
    return out


def _channels(c: int) -> int:
    return c if c <= 32 else 16 + c % 16


def reduce_conv(text: str, max_groups: int = 4) -> ConvShape | None:
    """A small version of conv descriptor ``text`` (None when no valid reduction exists)."""
    s = parse_conv_shape(text)
    g = min(s.g, max_groups)
    parts = [f"g{g}", f"mb{min(s.mb, 2)}", f"ic{g * _channels(s.ic // s.g)}", f"oc{g * _channels(s.oc // s.g)}"]
    for a in s.used_axes:
        ax = s.axis(a)
        i = min(ax.i, max(kernel_extent(ax.k, ax.d) + 2 * ax.s, 6))
        if compute_out(i, ax.k, ax.s, ax.pl, ax.d) < 1:
            return None
        parts.append(f"i{a}{i}k{a}{ax.k}s{a}{ax.s}p{a}{ax.pl}d{a}{ax.d}")
    return parse_conv_shape("_".join(parts))


def reduce_gemm(text: str) -> GemmShape:
    """A small version of matmul descriptor ``text``: batch dims at most 2, large sizes cut."""
    s = parse_gemm_shape(text)
    cut = lambda x: x if x <= 48 else 16 + x % 32  # noqa: E731
    return GemmShape(tuple(min(b, 2) for b in s.batch), cut(s.m), cut(s.n), cut(s.k))
