"""The correctness check the engine runs: a kernel in the interpreter against the float64 reference."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .failure import Failure, StageFailed


@dataclass(frozen=True)
class InterpreterCheck:
    """The check of kernels of ``problem``: the interpreter against the float64 reference.

    Called on a kernel it gives ``(ok, detail)``, the form :func:`~kdd.core.passes.pass_bisect.bisect` takes.
    """

    problem: Any
    seed: int = 0
    tol: float | None = None
    unbounded: bool = False

    def result(self, kernel) -> dict:
        """The check's JSON object (``error`` set when the kernel broke the IR semantics while running).

        Raises :class:`StageFailed` when the problem is over the interpreter's bound."""
        from kdd.core.interp import InterpError
        from kdd.core.interp.check import CheckResult, CheckTooLarge, check_kernel

        try:
            kwargs = {"max_macs": None} if self.unbounded else {}
            return check_kernel(kernel, self.problem, seed=self.seed, tol=self.tol, **kwargs).to_dict()
        except CheckTooLarge as exc:
            raise StageFailed(Failure("check", f"{exc} (or run it anyway: kdd check --unbounded)",
                                      "check-too-large", knob="shape")) from None
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
