"""Pass-trace output for the CLI: ``kdd compile --emit passes|ir:PASS|diff:PASS`` and ``kdd check --bisect``.

The compile and check commands call these functions; all the pass knowledge
lives in ``kdd.core.passes``. Emit items:

- ``passes``: text, a table (pass, changed, ms, nodes) then the final IR;
  JSON, ``"trace"``: ``"build"`` (nodes, IR text) and ``"passes"``, per pass
  name, changed, ms, nodes, cached, IR text
  (and CSE's ``notes``: what it named and what the register budget made it skip);
- ``ir:PASS``: the IR after pass PASS (``ir:build`` is the builder's IR);
- ``diff:PASS``: the unified diff of the IR before and after PASS.
"""
from __future__ import annotations

from kdd.core.ir.printer import to_text
from kdd.core.passes.kernel_pipeline import KERNEL_PIPELINE, PASS_NOTES, run_pipeline
from kdd.core.passes.options import kernel_options
from kdd.core.passes.pass_bisect import bisect, interpreter_check
from kdd.core.passes.trace_view import (BUILD, UnknownPassError, diff_after, ir_after, render_trace_table,
                                        trace_to_json)

EMIT_HELP = "passes (pass table and final IR), ir:PASS (IR after PASS; ir:build), diff:PASS (what PASS changed)"
_PREFIXES = ("ir:", "diff:")


def is_pass_emit(item: str) -> bool:
    """Whether an ``--emit`` item is one of the pass-trace items."""
    return item == "passes" or item.startswith(_PREFIXES)


def check_pass_emits(emit: str) -> str | None:
    """An error message for the first unknown pass named in ``emit`` (the raw ``--emit`` text), else None.

    The message gives the name's character span in ``emit``.
    """
    known = [BUILD] + KERNEL_PIPELINE.names()
    pos = 0
    for raw in emit.split(","):
        item = raw.strip()
        start = pos + raw.index(item) if item else pos
        pos += len(raw) + 1
        for prefix in _PREFIXES:
            if item.startswith(prefix):
                name = item[len(prefix):]
                allowed = known[1:] if prefix == "diff:" else known
                if name not in allowed:
                    s = start + len(prefix)
                    return str(UnknownPassError(name, allowed, s, s + len(name)))
    return None


def pass_emits_text(kernel, items: list[str]) -> str:
    """The text output of the pass-trace ``items`` for a built kernel, in the order given
    (the pipeline runs only when some item asks for it)."""
    if not items:
        return ""
    trace = run_pipeline(kernel)
    parts = []
    for item in items:
        if item == "passes":
            parts.append(render_trace_table(trace) + "=== final IR\n" + to_text(trace.final))
        elif item.startswith("ir:"):
            name = item[3:]
            parts.append(f"=== IR after {name}\n" + to_text(ir_after(trace, name)))
        elif item.startswith("diff:"):
            parts.append(diff_after(trace, item[5:]) or f"=== {item[5:]} changed nothing\n")
    return "".join(parts)


def pass_emits_json(kernel, items: list[str]) -> dict:
    """The JSON fields of the pass-trace ``items``: ``trace``, ``ir_after`` and ``diff`` (by pass name);
    none, and no pipeline run, when no item asks for them."""
    if not items:
        return {}
    trace = run_pipeline(kernel)
    out: dict = {}
    for item in items:
        if item == "passes":
            out["trace"] = trace_to_json(trace, kernel_options(kernel), PASS_NOTES)
        elif item.startswith("ir:"):
            out.setdefault("ir_after", {})[item[3:]] = to_text(ir_after(trace, item[3:]))
        elif item.startswith("diff:"):
            out.setdefault("diff", {})[item[5:]] = diff_after(trace, item[5:])
    return out


def bisect_kernel(kernel, problem, seed: int = 0, tol: float | None = None):
    """``kdd check --bisect``: the check after the build and after every pass; ``.first_bad`` names
    the first stage whose IR computes a wrong result (``.render()`` and ``.to_dict()`` print it)."""
    return bisect(kernel, problem, check_fn=interpreter_check(problem, seed, tol))
