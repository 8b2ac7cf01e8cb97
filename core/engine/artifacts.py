"""Engine results as plain data: the one conversion to JSON-ready objects.

``kdd compile --json``, the language server's ``kdd/...`` requests and
``kdd serve`` replies all carry these objects unchanged; the on-disk cache
stores them with msgpack. Positions are LSP's: 0-based lines, UTF-16
characters, exclusive ends.
"""
from __future__ import annotations

from kdd.core.spec import Diagnostic, Range

# The ``source`` of a diagnostic says which stage found it, as editors show it.
SPEC_SOURCE = "kdd/spec"
BUDGET_SOURCE = "kdd/budget"
_BUDGET_CODES = ("register-budget", "slm-budget", "budget")


def range_dict(r: Range) -> dict:
    return {"start": {"line": r.start.line, "character": r.start.character},
            "end": {"line": r.end.line, "character": r.end.character}}


def diagnostic_dict(d: Diagnostic, source: str | None = None) -> dict:
    """A document diagnostic; its source is the spec stage unless it is about a budget."""
    if source is None:
        source = BUDGET_SOURCE if "budget" in d.code or "overflow" in d.message else SPEC_SOURCE
    return {"range": range_dict(d.range), "severity": d.severity.name.lower(), "message": d.message,
            "code": d.code, "source": source}


def failure_diagnostic(failure, whole: Range) -> dict:
    """A failed stage as an error diagnostic, at its knob's range or else at ``whole`` (the document start)."""
    rng = failure.range or whole
    return {"range": range_dict(rng), "severity": "error", "message": failure.message, "code": failure.code,
            "source": f"kdd/{failure.stage}"}


def line_map(printed) -> list[dict]:
    """For each printed IR line: the node kind and its origin (builder step, config knob) when it has one.

    Ranges are joined later (:func:`with_ranges`) because they depend on where
    the knobs sit in the current text, while the map depends only on the IR.
    """
    out = []
    for i, node in enumerate(printed.nodes):
        entry: dict = {"line": i, "kind": type(node).__name__}
        origin = node.origin
        if origin is not None and hasattr(origin, "to_dict"):
            entry["origin"] = origin.to_dict()
        out.append(entry)
    return out


def with_ranges(lines: list[dict], sources: dict[str, Range]) -> list[dict]:
    """``lines`` with each origin's knob range in the current document added (a new list)."""
    out = []
    for entry in lines:
        knob = entry.get("origin", {}).get("knob")
        if knob in sources:
            entry = {**entry, "origin": {**entry["origin"], "range": range_dict(sources[knob])}}
        out.append(entry)
    return out
