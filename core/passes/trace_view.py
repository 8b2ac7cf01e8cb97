"""Reading a pass trace: a table, JSON, the IR after a pass and the diff a pass made.

The pipeline's input is named ``build`` (the builder's IR), so ``ir_after(trace,
"build")`` is the skeleton and ``diff_after(trace, name)`` compares the IR a
pass received with the IR it returned.
"""
from __future__ import annotations

from typing import Any

from ..ir.node import Node
from ..ir.printer import to_text
from ..ir.visitor import count_nodes
from .pipeline import Trace

BUILD = "build"


class UnknownPassError(KeyError):
    """A pass name that is not in the trace; ``token`` is the name as written."""

    def __init__(self, token: str, known: list[str], start: int | None = None, end: int | None = None):
        self.token, self.known, self.start, self.end = token, known, start, end
        where = f" at {start}..{end}" if start is not None else ""
        import difflib  # for the error and the diff only: difflib costs every compile's start-up time

        close = difflib.get_close_matches(token, known, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        super().__init__(f"no pass named '{token}'{where} (passes: {', '.join(known)}){hint}")

    def __str__(self) -> str:
        return self.args[0]


def pass_names(trace: Trace) -> list[str]:
    """``build`` followed by the passes that ran, in order."""
    return [BUILD] + [e.name for e in trace.entries]


def ir_after(trace: Trace, name: str) -> Node:
    """The IR after pass ``name`` (``build``: the builder's IR)."""
    if name == BUILD:
        return trace.input
    for e in trace.entries:
        if e.name == name:
            return e.ir
    raise UnknownPassError(name, pass_names(trace))


def ir_before(trace: Trace, name: str) -> Node:
    """The IR pass ``name`` received."""
    if name == BUILD:
        raise UnknownPassError(name, pass_names(trace)[1:])
    ir_after(trace, name)  # raises for an unknown name
    return trace.before(name)


def diff_after(trace: Trace, name: str, context: int = 3) -> str:
    """Unified diff of the IR text before and after pass ``name`` (empty when it changed nothing)."""
    before, after = ir_before(trace, name), ir_after(trace, name)
    return "" if before is after else text_diff(to_text(before), to_text(after), name, context)


def text_diff(before: str, after: str, name: str, context: int = 3) -> str:
    """Unified diff of two IR texts, labelled with the pass between them."""
    import difflib

    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        fromfile=f"before {name}", tofile=f"after {name}", n=context))


def render_trace_table(traced: dict) -> str:
    """One row per pass of a trace's JSON form (:func:`trace_to_json`): name, changed, milliseconds
    (``cached`` when memoized), node count."""
    passes = traced["passes"]
    width = max([len(BUILD)] + [len(p["name"]) for p in passes])
    rows = [f"{'pass':<{width}}  {'changed':<7}  {'ms':>9}  {'nodes':>7}",
            f"{BUILD:<{width}}  {'':<7}  {'':>9}  {traced['build']['nodes']:>7}"]
    for p in passes:
        ms = "cached" if p["cached"] else f"{p['ms']:.2f}"
        rows.append(f"{p['name']:<{width}}  {'yes' if p['changed'] else 'no':<7}  {ms:>9}  {p['nodes']:>7}")
    return "\n".join(rows) + "\n"


def trace_to_json(trace: Trace, with_ir: bool = True) -> dict:
    """The trace as JSON-ready data: per pass its name, changed, ms, nodes, cached and IR text, and
    ``notes`` where the pass said more than its IR (CSE: what it named and what it skipped)."""
    # Consecutive IRs share most subtrees: one memo of expression texts serves every print, and a
    # pass that changed nothing has its input's text.
    texts: dict[int, str] = {}
    build = {"name": BUILD, "nodes": count_nodes(trace.input)}
    text = None
    if with_ir:
        text = build["ir"] = to_text(trace.input, texts)
    passes = []
    for e in trace.entries:
        entry: dict[str, Any] = {"name": e.name, "changed": e.changed, "ms": round(e.ms, 3), "nodes": e.nodes,
                                 "cached": e.cached}
        if with_ir:
            text = entry["ir"] = to_text(e.ir, texts) if e.changed else text
        if e.notes is not None:
            entry["notes"] = e.notes
        passes.append(entry)
    return {"build": build, "passes": passes}
