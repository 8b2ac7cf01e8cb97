"""A small config space per problem for tuning runs (``kdd tune --space auto``).

:func:`search_space` takes the defaults heuristic's best per-thread tiles (rule 4's score in rule 3's
register mode, :mod:`.defaults`) and varies around each what the heuristic fixes: the group shape (rule 5,
started from the target's default or from twice as many threads along N or M) and, for the best
tile, the SLM buffer count (rule 7's, and one less) and, for a GEMM with weight decompression, seed
002's decompression steps the weights allow at the ALU's width (``decompress``). Every config is complete and within the
register and SLM budget estimate; the device decides between them. :func:`tuning_space` adds, for
a config whose grid has few thread groups, the same config with K split across the grid.
"""
from __future__ import annotations

from dataclasses import replace

from kdd.core.ir.types import f16
from kdd.core.targets import Target

from .budget import estimate_budget
from .decompress import MODES, Decompress
from .defaults import _Plan, ranked_in_mode
from .kernel_config import KernelConfig
from .tiles import Tile
from .tiling import derive_tiling
from .values import Buffering

SPLITS = (2, 4)     # split-K parts tried for a config whose grid fills few cores


def search_space(problem, target: Target, tiles: int = 3) -> list[KernelConfig]:
    """Distinct complete configs: the ``tiles`` best per-thread tiles by the heuristic's score, each
    with the default and the two doubled group shapes; the best tile also with one SLM buffer less.
    The heuristic's own default comes first."""
    plan, ranked = ranked_in_mode(_Plan.make(problem, target, KernelConfig()), problem, target)
    x, y = target.default_group
    out: list[KernelConfig] = []
    seen: set[str] = set()

    def add(cfg: KernelConfig) -> None:
        line = cfg.line()
        if line not in seen and estimate_budget(problem, cfg, target).within_estimate:
            seen.add(line)
            out.append(cfg)

    for rank, (_, base, tile) in enumerate(ranked[:tiles]):
        for shape in ((x, y), (2 * x, y), (x, 2 * y)):
            tg = plan._group(tile, base.loop, shape)
            cfg = replace(base, tg=tg, slm=plan._slm(base.iter, tg, base.loop))
            add(cfg)
            if rank == 0 and shape == (x, y) and cfg.slm.bufs > 2:
                add(replace(cfg, slm=Buffering(cfg.slm.bufs - 1, cfg.slm.a, cfg.slm.b, cfg.slm.gmem)))
            if rank == 0 and shape == (x, y):
                for mode in decompress_modes(problem):
                    add(replace(cfg, decompress=Decompress(mode, target.lanes.alu)))
    return out


def decompress_modes(problem) -> tuple[str, ...]:
    """The ``decompress`` modes a problem's weights take: every mode for u8 weights multiplied in f16 (the
    denormal conversion reads u8 bits as f16), ``cvt`` and ``mad`` otherwise; none without decompression."""
    d = getattr(problem, "decompression", None)
    if d is None:
        return ()
    return MODES if not problem.types.wei.is_signed and d.math == f16 else ("cvt", "mad")


def split_k_variants(problem, cfg: KernelConfig, below: int) -> list[KernelConfig]:
    """``cfg`` with its reduction split across 2 and 4 thread groups, when its kernel grid has fewer than
    ``below`` groups: the K dim with the most loop iterations runs 1/parts of them, and the kernel grid
    takes the rest (an f32 scratch and the last arrival's epilogue where the destination is f16).
    :func:`search_space` keeps the whole reduction in one group, which leaves a deep-K layer with few
    output tiles (res5a_branch2b: 98 groups over K = 4608) on part of the cores."""
    tiling = derive_tiling(problem, cfg)
    if tiling.groups >= below or tiling.split_k:
        return []
    k_dims = [d for d in tiling.role("k") if d.loop > 1]
    if not k_dims:
        return []
    dim = max(k_dims, key=lambda d: d.loop)
    return [replace(cfg, loop=Tile.of({**cfg.loop.as_dict(), dim.name: dim.loop // parts}))
            for parts in SPLITS if dim.loop % parts == 0]


def tuning_space(problem, target: Target, tiles: int = 2) -> list[KernelConfig]:
    """:func:`search_space`'s configs and the split-K variants of those whose grid has fewer than two
    thread groups per core of the target's first device (an SM of an H100, an Xe-core of an Arc)."""
    space = search_space(problem, target, tiles)
    below = 2 * target.devices[0].cores if target.devices else 0
    seen = {cfg.line() for cfg in space}
    for cfg in list(space):
        for variant in split_k_variants(problem, cfg, below):
            if variant.line() not in seen:
                seen.add(variant.line())
                space.append(variant)
    return space
