"""Memory layouts of the kernel's tensors: the problem's tags, with ``any`` resolved.

``any`` lets the kernel choose, as oneDNN's ``format_tag::any`` does. kdd
picks plain layouts that suit the GEMM form: activations channels-last
(``axb``: mb, spatial, channels), weights with the B operand's N dim
innermost (``[g] kd kh kw ic oc`` for fwd and bwd_w, ``... oc ic`` for
bwd_d), GEMM tensors row-major.
"""
from __future__ import annotations

from kdd.core.ir.types import Type
from kdd.core.layout.layout import Layout, parse_layout
from kdd.core.layout.tags import LayoutTagError

from .errors import BuildError

ANY = "any"


def tensor_layout(problem, tensor: str, dtype: Type) -> Layout:
    """The layout of ``src``, ``wei`` or ``dst`` of ``problem``."""
    dims = problem.tensor_dims(tensor)
    names = [n for n, _ in dims]
    sizes = [s for _, s in dims]
    tag = problem.tags.get(tensor, ANY)
    if tag == ANY:
        return Layout.dense(dtype, sizes, [(names.index(n), sizes[names.index(n)]) for n in _any_order(problem, tensor, names)])
    try:
        return parse_layout(tag, sizes, dtype, dim_names=names)
    except LayoutTagError as e:
        raise BuildError(f"{tensor} layout: {e.message}", knob=tensor) from None


def _any_order(problem, tensor: str, names: list[str]) -> list[str]:
    if problem.op == "gemm":
        return names
    if tensor in ("src", "dst"):
        return [names[0]] + names[2:] + [names[1]]
    spatial = [n for n in names if n[0] == "k"]
    channels = ["oc", "ic"] if problem.prop == "bwd_d" else ["ic", "oc"]
    return [n for n in names if n == "g"] + spatial + channels


def vector_layout(size: int, dtype: Type) -> Layout:
    """A plain 1D layout (bias, per-channel operands)."""
    return Layout.dense(dtype, [size], [(0, size)])
