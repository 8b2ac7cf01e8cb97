"""A reduced problem for the correctness check: the same kernel structure at small sizes.

When a config has no ``[check] shape``, interpreting the real problem (a
4096^3 GEMM) would take minutes. :func:`reduced_shape` keeps everything
that shapes the kernel and shrinks only the sizes that merely repeat it:

- kernel sizes, strides, padding (both sides) and dilation are kept;
- an output spatial size over ``2 * 8`` becomes ``8 + o % 8`` and its input
  shrinks by whole strides, so the right padding and the tail stay the same;
- channels (per group), groups, the minibatch and GEMM's M/N/K keep their
  remainder modulo a unit (64 for channels and M/N/K, 8 for the minibatch
  and groups, 2 for GEMM batch dims), so blocks of up to that size meet the
  same tails: ``d`` becomes ``unit + d % unit`` when ``d >= 2 * unit``.
"""
from __future__ import annotations

from dataclasses import replace

from .conv_shape import ConvShape
from .gemm_shape import GemmShape

CHANNELS, MINIBATCH, SPATIAL, GEMM, BATCH = 64, 8, 8, 64, 2


def _shrink(size: int, unit: int) -> int:
    return size if size < 2 * unit else unit + size % unit


def reduced_shape(shape: ConvShape | GemmShape) -> ConvShape | GemmShape:
    """``shape`` at check size (see the module doc); small shapes come back unchanged."""
    if isinstance(shape, GemmShape):
        reduced = replace(shape, batch=tuple(_shrink(b, BATCH) for b in shape.batch), m=_shrink(shape.m, GEMM),
                          n=_shrink(shape.n, GEMM), k=_shrink(shape.k, GEMM))
        return shape if reduced == shape else reduced
    g = _shrink(shape.g, MINIBATCH)
    sizes = {"g": g, "mb": _shrink(shape.mb, MINIBATCH),
             "ic": g * _shrink(shape.ic // shape.g, CHANNELS), "oc": g * _shrink(shape.oc // shape.g, CHANNELS)}
    for a in shape.used_axes:
        o, i = getattr(shape, f"o{a}"), getattr(shape, f"i{a}")
        kept = _shrink(o, SPATIAL)
        if i - (o - kept) * getattr(shape, f"s{a}") >= 1:  # else padding makes most of the output: keep it
            sizes[f"o{a}"] = kept
            sizes[f"i{a}"] = i - (o - kept) * getattr(shape, f"s{a}")
    reduced = replace(shape, **sizes)
    return shape if reduced == shape else reduced


# The interpreter runs a few tens of millions of multiply-adds a second: beyond this a check would
# keep an editor waiting for many seconds, so it is refused unless asked for.
MAX_CHECK_MACS = 1 << 25


def check_macs(problem) -> int:
    """Multiply-adds a correctness check of ``problem`` interprets (half its flops)."""
    return problem.flops() // 2
