"""``kdd check`` of sm_90 code: the generated PTX run in the PTX simulator against the float64 reference.

Inputs, poisoning, reference and tolerances are the interpreter check's (:mod:`kdd.core.interp.check`),
so the verdicts compare with the interpreter's and the Xe simulator's (:mod:`kdd.core.xesim.check`).
"""
from __future__ import annotations

import math
import time

from kdd.core.interp.check import CheckResult, check_buffers, kernel_reference, verdict
from kdd.core.xesim.errors import SimError, SimulatorGap

from .run import run_ptx


def check_ptx(kernel, listing: dict, problem=None, *, seed: int = 0, tol: float | None = None) -> dict:
    """The ``kdd check --json`` object of the kernel's PTX (``listing``: the PTX code generator's listing
    as plain data, with ``asm`` and ``launch``) run in the PTX simulator. On a :class:`SimulatorGap` or a
    fault the object is not ok and says which: ``error``, and ``ptx``: ``{"gap": bool, "line",
    "instruction"}`` (a gap is kdd's, never the kernel's)."""
    start = time.perf_counter()
    problem = problem if problem is not None else kernel.problem
    buffers, inputs = check_buffers(kernel, seed)
    try:
        run = run_ptx(listing["asm"], listing["launch"], [buffers[a.name] for a in kernel.args])
    except SimError as exc:
        out = CheckResult(False, math.inf, math.nan, None, problem.shape.canonical(),
                          (time.perf_counter() - start) * 1e3).to_dict()
        out["error"] = str(exc)
        out["ptx"] = {"gap": isinstance(exc, SimulatorGap), "line": exc.line, "instruction": exc.text}
        return out
    outputs = {a.name: buffers[a.name] for a in kernel.outputs}
    written = {a.name: run.written[a.name] for a in kernel.outputs if a.name in run.written}
    result = verdict(kernel, problem, inputs, outputs, written, tol, start, run.seconds * 1e3,
                     kernel_reference(kernel, problem, inputs)).to_dict()
    result["ptx"] = {"instructions": run.instructions, "sim_ms": round(run.seconds * 1e3, 3)}
    return result
