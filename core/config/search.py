"""A small config space per problem for tuning runs on the device (``bench/gpu_tune.py``).

:func:`search_space` takes the defaults heuristic's best per-thread tiles (rule 4's score in rule 3's
register mode, :mod:`.defaults`) and varies around each what the heuristic fixes: the group shape (rule 5,
started from the target's default or from twice as many threads along N or M) and, for the best
tile, the SLM buffer count (rule 7's, and one less). Every config is complete and within the
register and SLM budget estimate; the device decides between them.
"""
from __future__ import annotations

from dataclasses import replace

from kdd.core.targets import Target

from .budget import estimate_budget
from .defaults import GROUP_SHAPE, _Plan, ranked_in_mode
from .kernel_config import KernelConfig
from .values import Buffering


def search_space(problem, target: Target, tiles: int = 3) -> list[KernelConfig]:
    """Distinct complete configs: the ``tiles`` best per-thread tiles by the heuristic's score, each
    with the default and the two doubled group shapes; the best tile also with one SLM buffer less.
    The heuristic's own default comes first."""
    plan, ranked = ranked_in_mode(_Plan.make(problem, target, KernelConfig()), problem, target)
    x, y = GROUP_SHAPE[target.isa]
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
            cfg = replace(base, tg=tg, slm=plan._slm(replace(base, tg=tg)))
            add(cfg)
            if rank == 0 and shape == (x, y) and cfg.slm.bufs > 2:
                add(replace(cfg, slm=Buffering(cfg.slm.bufs - 1, cfg.slm.a, cfg.slm.b, cfg.slm.gmem)))
    return out
