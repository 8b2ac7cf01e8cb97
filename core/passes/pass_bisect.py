"""Find the first pass after which a kernel computes the wrong result.

The builder's IR is checked first, then the IR after each pass in pipeline
order; a pass that returned its input unchanged inherits the previous
verdict without running the check again. The first failing stage is named:
``build`` when the skeleton itself is wrong, else the pass. The check is a
function of a kernel returning ``(ok, detail)``; the default runs the
interpreter against the float64 reference (``kdd.core.interp.check``), and
an interpreter error (an SLM race, an access out of bounds) is a failure
whose detail is the error message.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .kernel_pipeline import KERNEL_PIPELINE, run_pipeline, with_body
from .pipeline import Pipeline
from .trace_view import BUILD

CheckFn = Callable[[object], tuple[bool, str]]


@dataclass(frozen=True)
class Verdict:
    """The check after one stage; ``checked`` is False when the stage changed nothing."""

    name: str
    ok: bool
    checked: bool
    detail: str = ""


@dataclass(frozen=True)
class BisectResult:
    verdicts: tuple[Verdict, ...]
    first_bad: str | None

    def to_dict(self) -> dict:
        return {"first_bad": self.first_bad,
                "stages": [{"name": v.name, "ok": v.ok, "checked": v.checked, "detail": v.detail}
                           for v in self.verdicts]}

    def render(self) -> str:
        """A line per stage, then the verdict."""
        width = max(len(v.name) for v in self.verdicts)
        lines = []
        for v in self.verdicts:
            status = ("ok" if v.ok else "WRONG") + ("" if v.checked else " (unchanged)")
            lines.append(f"{v.name:<{width}}  {status}{'  ' + v.detail if v.detail else ''}")
        lines.append(f"first wrong after: {self.first_bad}" if self.first_bad else "every stage computes the right result")
        return "\n".join(lines) + "\n"


def interpreter_check(problem=None, seed: int = 0, tol: float | None = None) -> CheckFn:
    """The default check: ``check_kernel`` against the reference of ``problem`` (the kernel's own by
    default), with the seed and tolerance a ``[check]`` section sets."""
    from kdd.core.interp.check import check_kernel
    from kdd.core.interp.errors import InterpError

    def check(kernel) -> tuple[bool, str]:
        try:
            r = check_kernel(kernel, problem, seed=seed, tol=tol)
        except InterpError as exc:
            return False, f"interpreter: {exc}"
        detail = "" if r.ok else f"rel_err {r.rel_err:.3g} > tol {r.tol:g}" + (
            f", {r.unwritten} elements never written" if r.unwritten else "")
        return r.ok, detail
    return check


def bisect(kernel, problem=None, pipeline: Pipeline = KERNEL_PIPELINE, check_fn: CheckFn | None = None) -> BisectResult:
    """Check ``kernel`` (a built ``Kernel``) after the build and after each pass of ``pipeline``."""
    check = check_fn or interpreter_check(problem)
    trace = run_pipeline(kernel, pipeline)
    verdicts = []
    ok, detail = check(kernel)
    verdicts.append(Verdict(BUILD, ok, True, detail))
    if not ok:
        return BisectResult(tuple(verdicts), BUILD)
    for e in trace.entries:
        if e.changed:
            ok, detail = check(with_body(kernel, e.ir))
        verdicts.append(Verdict(e.name, ok, e.changed, detail if e.changed else ""))
        if not ok:
            return BisectResult(tuple(verdicts), e.name)
    return BisectResult(tuple(verdicts), None)
