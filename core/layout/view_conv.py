"""The A/B/C views of a convolution for every propagation kind (seed 000).

Tensors map to GEMM operands as the seed states:

=======  ======  ======  ======
prop     A       B       C
=======  ======  ======  ======
fwd      src     wei     dst
bwd_d    dst     wei     src
bwd_w    src     dst     wei
=======  ======  ======  ======

View dims are the problem's named GEMM dims (``Problem.gemm_dims()``): the
group ``g`` (batch kind), the per-group channels ``ic``/``oc``, ``mb`` and the
spatial dims. Tensor indices follow ``Problem.tensor_dims``: activations carry
*total* channels, so their channel index is ``g * C_per_group + c``; weights
carry per-group channels and a ``g`` dim when ``g > 1``.

Spatial mappings, per axis ``a`` of ``d h w``:

- input from output and kernel (fwd: src as A; bwd_w: src as A):
  ``ia = oa * Sa + ka * (Da + 1) - Pa`` with mask ``0 <= ia < IA``;
- output from input and kernel (bwd_d: dst as A), the inverse with its stride
  condition: ``oa = (ia + Pa - ka * (Da + 1)) / Sa`` with mask
  ``(ia + Pa - ka * (Da + 1)) % Sa == 0 and 0 <= oa < OA``.

A mask that can never be false over the view's index ranges is left out
(``None``), so unpadded stride-1 problems have mask-free views.
"""
from __future__ import annotations

from typing import Mapping

from kdd.core.ir.expr import Expr, land

from .layout import Layout
from .view import DimKind, View, ViewDim, add, mul

# tensor of each GEMM operand, per propagation kind
OPERANDS = {
    "fwd": {"A": "src", "B": "wei", "C": "dst"},
    "bwd_d": {"A": "dst", "B": "wei", "C": "src"},
    "bwd_w": {"A": "src", "B": "dst", "C": "wei"},
}
_OPERAND_KINDS = {"A": (DimKind.B, DimKind.M, DimKind.K), "B": (DimKind.B, DimKind.K, DimKind.N),
                  "C": (DimKind.B, DimKind.M, DimKind.N)}


def conv_views(problem, layouts: Mapping[str, Layout] | None = None) -> tuple[View, View, View]:
    """The (A, B, C) views of convolution ``problem`` (a ``Problem`` with op ``conv``).

    ``layouts`` optionally gives each tensor's memory layout (keyed ``src``,
    ``wei``, ``dst``); the views carry it.
    """
    if problem.op != "conv":
        raise ValueError(f"conv_views needs a conv problem, got op {problem.op!r}")
    dims = _view_dims(problem)
    views = []
    for operand in "ABC":
        tensor = OPERANDS[problem.prop][operand]
        vdims = tuple(d for kind in _OPERAND_KINDS[operand] for d in dims if d.kind is kind)
        tdims = problem.tensor_dims(tensor)
        mapping, masks = [], []
        for name, _ in tdims:
            index, mask = _tensor_index(problem, tensor, name, {d.name for d in vdims})
            mapping.append(index)
            masks.append(mask)
        layout = (layouts or {}).get(tensor)
        views.append(View(operand, tensor, vdims, tdims, tuple(mapping), tuple(masks), layout))
    return tuple(views)


def _view_dims(problem) -> tuple[ViewDim, ...]:
    gd = problem.gemm_dims()
    kinds = ((gd.b, DimKind.B), (gd.m, DimKind.M), (gd.n, DimKind.N), (gd.k, DimKind.K))
    return tuple(ViewDim(name, size, kind) for dims, kind in kinds for name, size in dims)


def _v(name: str) -> Expr:
    return ViewDim(name, 1, DimKind.M).var


def _in_range(x: Expr, size: int) -> Expr:
    return land(x.ge(0), x.lt(size))


def _tensor_index(problem, tensor: str, name: str, view_dims: set[str]) -> tuple[Expr, Expr | None]:
    """Index expression and mask of tensor dim ``name`` of ``tensor`` over the view dims."""
    s = problem.shape
    if name in ("ic", "oc") and tensor in ("src", "dst"):
        per_group = getattr(s, name) // s.g
        return add(mul(_v("g"), per_group), _v(name)), None
    if name[0] in "iok" and len(name) == 2 and name[1] in "dhw" and name not in view_dims:
        return _spatial(problem, name[0], name[1])
    # Direct dims: mb, g, weights' per-group channels, spatial dims the view has itself.
    return _v(name), None


def _spatial(problem, kind: str, axis: str) -> tuple[Expr, Expr | None]:
    """A spatial tensor index computed from the other two spatial view dims of ``axis``."""
    ax = problem.shape.axis(axis)
    dil = ax.d + 1
    if kind == "i":  # input from output and kernel tap
        index = add(_tap(mul(_v("o" + axis), ax.s), axis, ax.k, dil, +1), -ax.pl)
        lo, hi = -ax.pl, (ax.o - 1) * ax.s + (ax.k - 1) * dil - ax.pl
        mask = None if lo >= 0 and hi < ax.i else _in_range(index, ax.i)
        return index, mask
    if kind == "o":  # output from input and kernel tap (backward by data)
        num = _tap(add(_v("i" + axis), ax.pl), axis, ax.k, dil, -1)
        lo, hi = ax.pl - (ax.k - 1) * dil, ax.i - 1 + ax.pl
        if ax.s == 1:
            mask = None if lo >= 0 and hi < ax.o else _in_range(num, ax.o)
            return num, mask
        index = num / ax.s
        return index, land((num % ax.s).eq(0), _in_range(index, ax.o))
    raise ValueError(f"spatial dim {kind}{axis} cannot be derived from the view dims")


def _tap(base: Expr, axis: str, k: int, dil: int, sign: int) -> Expr:
    """``base +/- k<axis> * dil``; a one-tap kernel adds nothing (its index is always 0)."""
    if k == 1:
        return base
    term = mul(_v("k" + axis), dil)
    return base + term if sign > 0 else base - term
