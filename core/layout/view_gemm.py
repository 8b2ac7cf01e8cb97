"""The A/B/C views of a (batched) GEMM: ``C[b.., m, n] += A[b.., m, k] * B[b.., k, n]``.

A is ``src`` (dims ``b0.. m k``), B is ``wei`` (``b0.. k n``), C is ``dst``
(``b0.. m n``); every tensor index is a view index, and no mask is needed.
"""
from __future__ import annotations

from typing import Mapping

from .layout import Layout
from .view import DimKind, View, ViewDim

OPERANDS = {"A": "src", "B": "wei", "C": "dst"}
_ROLES = {"A": ("b", "m", "k"), "B": ("b", "k", "n"), "C": ("b", "m", "n")}
_KINDS = {"b": DimKind.B, "m": DimKind.M, "n": DimKind.N, "k": DimKind.K}


def gemm_views(problem, layouts: Mapping[str, Layout] | None = None) -> tuple[View, View, View]:
    """The (A, B, C) views of GEMM ``problem`` (a ``Problem`` with op ``gemm``)."""
    if problem.op != "gemm":
        raise ValueError(f"gemm_views needs a gemm problem, got op {problem.op!r}")
    gd = problem.gemm_dims()
    views = []
    for operand in "ABC":
        tensor = OPERANDS[operand]
        vdims = tuple(ViewDim(name, size, _KINDS[role])
                      for role in _ROLES[operand] for name, size in getattr(gd, role))
        tdims = problem.tensor_dims(tensor)
        by_name = {d.name: d for d in vdims}
        mapping = tuple(by_name[name].var for name, _ in tdims)
        views.append(View(operand, tensor, vdims, tdims, mapping, (None,) * len(tdims),
                          (layouts or {}).get(tensor)))
    return tuple(views)
