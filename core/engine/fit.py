"""Fitting a kernel into its registers the way oneDNN's planner does: sub-tiles chosen by the built kernel.

oneDNN's config lines leave out what its planner decides when a kernel does
not fit: it then loads and multiplies B (or A) in 2 or 4 sub-tiles, so that
only one sub-tile's registers are live (``S=``). kdd does the same where the
document does not write ``subtiles``: when the early estimate
(``config/budget.py``) is over the registers, the kernel is built and the
code generator's allocation decides; if the config as written runs out of
registers, the first sub-tiling whose allocation fits is taken, else the
config as written (which the allocator then refuses, naming the knob). On
sm_90 ptxas allocates and nothing is changed.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from kdd.core.config.budget import estimate_budget
from kdd.core.config.validate import validate_config
from kdd.core.config.values import Subtiles

# B first: its sub-tiles are read straight from the FMA-ready SLM tile into the operand registers.
SUBTILES = (Subtiles(1, 2), Subtiles(2, 1), Subtiles(1, 4), Subtiles(4, 1))


def fitted_config(problem, config, target, user_config, allocated: Callable[[object], int | None]):
    """``config``, or the first of ``SUBTILES`` whose kernel the allocator fits into ``config.regs``, where the
    user did not write ``subtiles``, the early estimate is over the registers and ``config`` itself does
    not fit. ``allocated(config)``: the registers the code generator allocated for the kernel built from
    ``config`` (None: it does not build or runs out of registers)."""
    if (user_config.subtiles is not None or target.registers.lane_bytes is not None
            or estimate_budget(problem, config, target).reg_total <= config.regs):
        return config
    first = allocated(config)
    if first is not None and first <= config.regs:
        return config
    for sub in SUBTILES:
        candidate = replace(config, subtiles=sub)
        if any(i.severity == "error" for i in validate_config(problem, candidate, target)):
            continue
        got = allocated(candidate)
        if got is not None and got <= config.regs:
            return candidate
    return config
