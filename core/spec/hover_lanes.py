"""How a warp's 32 lanes hold the C tile on sm_90, as nested layouts (seed 001).

One ``mma.sync`` accumulator fragment of shape ``m x 8`` (``m16n8k16``,
``m16n8k32``, ``m16n8k8`` and ``m8n8k4`` alike) is, per the PTX ISA's
fragment figures: lane ``l`` is in group ``l // 4`` (its rows ``l // 4`` and,
for ``m = 16``, ``l // 4 + 8``) and holds columns ``2 * (l % 4)`` and ``+1``;
its registers ``c0 c1`` are the first row, ``c2 c3`` the second. As a nested
layout over (rows, cols): outer ``[m / 8, 1]``, thread ``[8, 4]`` with thread
strides ``[4, 1]``, element ``[1, 2]``. A scalar ``fma`` gives lane ``l``
column ``l`` of a ``1 x 32`` row.

A warp's C tile of ``iter`` (``M x N`` per thread) is a batch of such
fragments: batch tile ``[M / m, N / n]``.
"""
from __future__ import annotations

from kdd.core.config import KernelConfig, operands
from kdd.core.layout import NestedLayout, lane_grid
from kdd.core.targets import FmaShape, Target

from .hover_text import block, code, join, section

GRID_LIMIT = 16


def fragment_layout(shape: FmaShape) -> NestedLayout | None:
    """Nested layout of the C fragment of one instruction ``shape`` over a warp; None for other forms."""
    if shape.fma == "mma" and shape.n == 8 and shape.m in (8, 16):
        return NestedLayout(subgroup_tile=(1, 1), batch_tile=(1, 1), outer_tile=(shape.m // 8, 1),
                            thread_tile=(8, 4), element_tile=(1, 2), subgroup_strides=(0, 0),
                            thread_strides=(4, 1))
    if shape.fma == "fma" and (shape.m, shape.n) == (1, shape.simd):  # one lane per column of the warp
        return NestedLayout(subgroup_tile=(1, 1), batch_tile=(1, 1), outer_tile=(1, 1), thread_tile=(1, shape.simd),
                            element_tile=(1, 1), subgroup_strides=(0, 0), thread_strides=(0, 1))
    return None


def warp_tile_layout(shape: FmaShape, m: int, n: int) -> NestedLayout | None:
    """The ``m x n`` C tile of one warp as a batch of ``shape`` fragments; None when it is not whole fragments."""
    frag = fragment_layout(shape)
    if frag is None or m % shape.m or n % shape.n:
        return None
    return NestedLayout(subgroup_tile=frag.subgroup_tile, batch_tile=(m // shape.m, n // shape.n),
                        outer_tile=frag.outer_tile, thread_tile=frag.thread_tile, element_tile=frag.element_tile,
                        subgroup_strides=frag.subgroup_strides, thread_strides=frag.thread_strides)


def fma_form(target: Target, config: KernelConfig, problem) -> FmaShape | None:
    """The instruction form ``config`` uses for ``problem``'s types (exact accumulator first)."""
    ops = operands(problem, config)
    forms = target.shapes(fma=config.fma, simd=config.simd, a=ops.a, b=ops.b)
    exact = [s for s in forms if s.acc == ops.acc]
    if exact:
        return exact[0]
    return forms[0] if forms else None


def fragment_section(shape: FmaShape) -> str:
    """Which lane and register hold each element of one instruction's C."""
    frag = fragment_layout(shape)
    if frag is None:
        return ""
    rows, cols = frag.shape
    return section(
        f"Lanes of one {code(shape.spelling)} accumulator ({rows}x{cols} of C, rows down, columns across)",
        code(str(frag)),
        "lane holding each element:",
        block(lane_grid(frag, "thread")),
        f"register of the lane (c0..c{frag.elements_per_thread - 1}):",
        block(lane_grid(frag, "element")))


def warp_tile_section(shape: FmaShape, m: int, n: int) -> str:
    """Which lane holds each element of a warp's ``m x n`` C tile."""
    tile = warp_tile_layout(shape, m, n)
    if tile is None:
        if fragment_layout(shape) is None:
            return ""
        return f"The warp's C tile {m}x{n} is not whole {shape.m}x{shape.n} fragments of {code(shape.spelling)}."
    bm, bn = tile.batch_tile
    clipped = " (first 16 rows and columns)" if max(tile.shape) > GRID_LIMIT else ""
    # Lanes repeat with every fragment, so the corner that is drawn (one fragment past the limit,
    # which makes lane_grid mark the clipping) stands for the whole tile, however large.
    corner = warp_tile_layout(shape, min(m, (GRID_LIMIT // shape.m + 1) * shape.m),
                              min(n, (GRID_LIMIT // shape.n + 1) * shape.n))
    grid = lane_grid(corner, "thread", limit=GRID_LIMIT)
    return section(
        f"Lanes of the warp's C tile ({m}x{n} = {bm}x{bn} {code(shape.spelling)} fragments)",
        join(code(str(tile)),
             f"Each lane holds {tile.elements_per_thread} accumulators; lane holding each element{clipped}:"),
        block(grid))
