"""Memory layouts of the kernel's tensors: the problem's tags, with ``any`` resolved.

``any`` lets the kernel choose, as oneDNN's ``format_tag::any`` does. kdd
picks plain layouts that suit the GEMM form: activations channels-last
(``axb``: mb, spatial, channels), weights with the B operand's N dim
innermost (``[g] kd kh kw ic oc`` for fwd and bwd_w, ``... oc ic`` for
bwd_d), GEMM tensors row-major. Where the weights are the B
operand of ``dpas``, they are blocked in the FMA's own order instead (oneDNN
blocks them so too): ``[g] spatial, K / (depth * pack), N / simd, depth K
pairs, simd N, pack K`` with ``pack = 4 / element size`` K in a dword (K =
``ic`` for fwd, ``oc`` for bwd_d, ``k`` for GEMM): a thread's B tile is then
one contiguous piece of memory already packed as dpas's VNNI B, so copies
move it with block messages and no reorder (the transposed dpas reads B as
rows of K: ``... K / (depth * pack), N / 8, 8 N, depth * pack K``). Where K
or N does not divide by the blocks, or the builder gives no ``blocking``
(sub-tiled B, ``build``), the plain layout stays.
"""
from __future__ import annotations

from dataclasses import dataclass

from kdd.core.config.operands import operands
from kdd.core.ir.types import Type
from kdd.core.layout.layout import Layout, parse_layout
from kdd.core.layout.tags import LayoutTagError

from .errors import BuildError

ANY = "any"


@dataclass(frozen=True)
class FmaBlocking:
    """The B operand's packing of a matrix FMA: ``depth`` dwords of K per column, ``simd`` columns,
    ``pack`` K elements per dword. ``rows``: the transposed dpas (``fma.DpasKind.transposed``), whose B
    is ``rows`` columns of ``depth`` dwords of K each, a column's K contiguous (0: the VNNI form)."""

    depth: int
    simd: int
    pack: int
    rows: int = 0


def fma_blocking(fma: str, target, problem, transposed: bool = False) -> FmaBlocking | None:
    """The B packing that config knob ``fma`` gives on ``target`` for ``problem``'s types (``dpas``: the
    target's dpas form, ``transposed``: its transposed form), None for FMAs that read B rows as they are
    (``mad``, sm_90's ``mma``)."""
    if fma not in ("dpas", "dpasw"):
        return None
    ops = operands(problem)
    shapes = target.shapes(fma="dpas", a=ops.a, b=ops.b)
    if not shapes or ops.b.size > 4:
        return None
    return FmaBlocking(shapes[0].depth, shapes[0].simd, 4 // ops.b.size, shapes[0].m if transposed else 0)


def tensor_layout(problem, tensor: str, dtype: Type, blocking: FmaBlocking | None = None) -> Layout:
    """The layout of ``src``, ``wei`` or ``dst`` of ``problem``; ``any`` weights that are the B operand
    take ``blocking`` (the FMA's, :func:`fma_blocking`) where their dims divide by it."""
    dims = problem.tensor_dims(tensor)
    names = [n for n, _ in dims]
    sizes = [s for _, s in dims]
    tag = problem.tags.get(tensor, ANY)
    if tag == ANY:
        order = _blocked_order(problem, tensor, dict(dims), blocking) if blocking else None
        if order is None:
            order = [(n, sizes[names.index(n)]) for n in _any_order(problem, tensor, names)]
        return Layout.dense(dtype, sizes, [(names.index(n), s) for n, s in order])
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


def _blocked_order(problem, tensor: str, sizes: dict, b: FmaBlocking) -> list[tuple[str, int]] | None:
    """``(dim, size)`` blocks, outer to inner, of B weights packed as ``b`` (module doc), or None where
    ``tensor`` is not B or its K and N do not divide by the blocks."""
    if tensor != "wei" or operands(problem).tensors[1] != "wei":
        return None
    if problem.op == "gemm":
        k, n = "k", "n"
    else:
        k, n = ("oc", "ic") if problem.prop == "bwd_d" else ("ic", "oc")
    kb, nb = b.depth * b.pack, b.rows or b.simd
    if sizes[k] % kb or sizes[n] % nb:
        return None
    outer = [(d, s) for d, s in sizes.items() if d not in (k, n)]
    if problem.op == "conv":  # groups, then the spatial taps, as the plain layout has them
        outer = [(d, s) for d, s in outer if d == "g"] + [(d, s) for d, s in outer if d != "g"]
    if b.rows:
        return outer + [(k, sizes[k] // kb), (n, sizes[n] // nb), (n, nb), (k, kb)]
    return outer + [(k, sizes[k] // kb), (n, sizes[n] // nb), (k, b.depth), (n, b.simd), (k, b.pack)]


def vector_layout(size: int, dtype: Type) -> Layout:
    """A plain 1D layout (bias, per-channel operands)."""
    return Layout.dense(dtype, [size], [(0, size)])
