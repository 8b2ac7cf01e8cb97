"""The correctness check the engine runs: a kernel in the interpreter against the float64 reference."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .verdict import NotCheckable


@dataclass(frozen=True)
class InterpreterCheck:
    """The check of kernels of ``problem``: the interpreter against the float64 reference.

    Called on a kernel it gives ``(ok, detail)``, the form :func:`~kdd.core.passes.pass_bisect.bisect` takes.
    """

    problem: Any
    seed: int = 0
    tol: float | None = None
    unbounded: bool = False

    def within_bound(self) -> None:
        """Raises :class:`NotCheckable` when the problem has more multiply-adds than a check runs (the
        interpreter's and the simulators' bound), unless ``unbounded``."""
        from kdd.core.problem.reduced import MAX_CHECK_MACS, check_macs

        macs = check_macs(self.problem)
        if not self.unbounded and macs > MAX_CHECK_MACS:
            raise NotCheckable("check-too-large", f"the check of {self.problem.shape.canonical()} would run {macs} "
                                                  f"multiply-adds, more than the bound of {MAX_CHECK_MACS}: check "
                                                  f"a smaller shape (or run it anyway: kdd check --unbounded)",
                               knob="shape")

    def result(self, kernel) -> dict:
        """The check's JSON object (``error`` set when the kernel broke the IR semantics while running).

        Raises :class:`NotCheckable` when the problem is over the check's bound."""
        from kdd.core.interp import InterpError
        from kdd.core.interp.check import CheckResult, check_kernel

        self.within_bound()
        if getattr(kernel.config, "schedule", None) == "tma_ws_cooperative":
            raise NotCheckable("lockstep", "the interpreter runs a group's threads in lockstep, and a warp-"
                                           "specialized kernel's producer and consumers wait on each other from "
                                           "different branches: check its code instead (kdd check without "
                                           "--stage runs the PTX in kdd's PTX simulator, warps apart)",
                               knob="schedule")
        try:
            return check_kernel(kernel, self.problem, seed=self.seed, tol=self.tol, max_macs=None).to_dict()
        except InterpError as exc:
            out = CheckResult(False, math.inf, math.nan, None, self.problem.shape.canonical(), 0.0).to_dict()
            out["error"] = str(exc)
            return out

    def __call__(self, kernel) -> tuple[bool, str]:
        r = self.result(kernel)
        if "error" in r:
            return False, f"interpreter: {r['error']}"
        if r["ok"]:
            return True, ""
        rel = "nan" if r["rel_err"] is None else f"{r['rel_err']:.3g}"
        unwritten = f", {r['unwritten']} elements never written" if r.get("unwritten") else ""
        return False, f"rel_err {rel} > tol {r['tol']:g}{unwritten}"
