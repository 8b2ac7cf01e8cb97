"""Find the first pass after which a kernel computes the wrong result.

The builder's IR is checked first, then the IR after each pass in pipeline
order; a pass that returned its input unchanged inherits the previous
verdict without running the check again. The first failing stage is named:
``build`` when the skeleton itself is wrong, else the pass. The check is a
function of a kernel returning ``(ok, detail)``; the engine passes the
interpreter against the float64 reference (``kdd.core.engine.InterpreterCheck``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .kernel_pipeline import KERNEL_PIPELINE, run_pipeline, with_body
from .pipeline import Pipeline, Trace
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


def render_bisect(data: dict) -> str:
    """The text form of a bisection's JSON (:meth:`BisectResult.to_dict`): a line per stage, then the verdict."""
    stages = data["stages"]
    width = max(len(v["name"]) for v in stages)
    lines = []
    for v in stages:
        status = ("ok" if v["ok"] else "WRONG") + ("" if v["checked"] else " (unchanged)")
        lines.append(f"{v['name']:<{width}}  {status}{'  ' + v['detail'] if v['detail'] else ''}")
    first = data["first_bad"]
    lines.append(f"first wrong after: {first}" if first else "every stage computes the right result")
    asm = data.get("assembly")
    if asm is not None:
        lines.append(asm["verdict"])
        registers = asm.get("first_wrong_registers")
        if registers is not None:
            lines.append(f"first wrong registers: {registers['buffer']} in {registers['registers']} disagree with "
                         f"the IR interpreter's (checkpoint {registers['compared']}); last written by "
                         f"{registers['instruction']} (disassembly line {registers['line']})")
            if registers.get("ir"):
                lines.append(f"  from IR: {registers['ir']}")
        wrong = asm.get("first_wrong")
        if wrong is not None:
            lines.append(f"first wrong {wrong['kind']}: {wrong['instruction']} (disassembly line {wrong['line']})")
            if wrong.get("ir"):
                lines.append(f"  from IR: {wrong['ir']}")
    return "\n".join(lines) + "\n"


def bisect(kernel, check: CheckFn, pipeline: Pipeline = KERNEL_PIPELINE, trace: Trace | None = None
           ) -> BisectResult:
    """Check ``kernel`` (a built ``Kernel``) after the build and after each pass of ``pipeline``
    (or of ``trace``, the pipeline's run on it when the caller has one)."""
    trace = trace if trace is not None else run_pipeline(kernel, pipeline)
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
