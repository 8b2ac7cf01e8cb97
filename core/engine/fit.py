"""Fitting a kernel into its registers the way oneDNN's planner does: sub-tiles chosen by the built kernel.

oneDNN's config lines leave out what its planner decides when a kernel does
not fit: it then loads and multiplies B (or A) in 2 or 4 sub-tiles, so that
only one sub-tile's registers are live (``S=``). kdd does the same where the
document does not write ``subtiles``: when the early estimate
(``config/budget.py``) is over the registers, the kernel is built and the
code generator's allocation decides; if the config as written runs out of
registers, the first sub-tiling whose allocation fits is taken, else the
config as written (which the allocator then refuses, naming the knob). A
check at a reduced shape that gets a config of its own prefers the sub-tiles
fitted for the full problem (``prefer``), so that it runs the structure the
compiled kernel has; the early estimate can be under the registers there while
the allocation is over. On sm_90 ptxas allocates and nothing is changed.
"""
from __future__ import annotations

from dataclasses import replace
from functools import cache, partial
from typing import Callable

from kdd.core.config.budget import estimate_budget
from kdd.core.config.validate import validate_config
from kdd.core.config.values import Subtiles

# B first: its sub-tiles are read straight from the FMA-ready SLM tile into the operand registers.
SUBTILES = (Subtiles(1, 2), Subtiles(2, 1), Subtiles(1, 4), Subtiles(4, 1))


def fitted_config(problem, config, target, user_config, allocated: Callable[[object], int | None],
                  prefer: Subtiles | None = None):
    """``config``, or the first of ``SUBTILES`` whose kernel the allocator fits into ``config.regs``, where the
    user did not write ``subtiles``, the early estimate is over the registers and ``config`` itself does
    not fit. ``allocated(config)``: the registers the code generator allocated for the kernel built from
    ``config`` (None: it does not build or runs out of registers). ``prefer``: sub-tiles tried first, with
    ``config``'s own tried only when they do not fit."""
    if user_config.subtiles is not None or target.registers.lane_bytes is not None:
        return config
    known = cache(partial(_errors, problem, target))   # the config's own errors: asked once per candidate
    if prefer is not None and prefer != config.subtiles:
        preferred = _fitting(config, prefer, known, allocated)
        if preferred is not None:
            return preferred
    if estimate_budget(problem, config, target).reg_total <= config.regs:
        return config
    first = allocated(config)
    if first is not None and first <= config.regs:
        return config
    for sub in SUBTILES:
        candidate = _fitting(config, sub, known, allocated)
        if candidate is not None:
            return candidate
    return config


def _errors(problem, target, config) -> frozenset[str]:
    """The messages of ``config``'s validation errors on ``problem``."""
    return frozenset(i.message for i in validate_config(problem, config, target) if i.severity == "error")


def _fitting(config, subtiles: Subtiles, errors: Callable[[object], frozenset[str]],
             allocated: Callable[[object], int | None]):
    """``config`` with ``subtiles`` when they add no error to it and its kernel fits into its registers,
    else None. (A check shape's config can carry errors of its own, such as a written loop longer than
    the reduced dim; the sub-tiles must not add one.) ``errors``: a config's validation errors, cached."""
    candidate = replace(config, subtiles=subtiles)
    if errors(candidate) - errors(config):
        return None
    got = allocated(candidate)
    return candidate if got is not None and got <= candidate.regs else None
