"""Editor features answered from the document (inlay hints also from its finished compile): inlay
hints, symbols, code lenses, go-to-definition. The figures come from ``kdd.core``; this module only places them."""
from __future__ import annotations

import os
from pathlib import Path

from lsprotocol import types as lsp

from kdd.core.config.budget import estimate_budget
from kdd.core.problem.conv_shape import KEYS as CONV_KEYS
from kdd.core.spec import Document, Position, parse_document

from .convert import spec_range

TILE_KNOBS = ("iter", "tg", "loop")


def inlay_hints(parsed, visible: lsp.Range, registers: dict | None = None) -> list[lsp.InlayHint]:
    """The registers beside the first tile knob, the deduced problem dims beside ``shape``. With
    ``registers`` (the current text's compile, ``stats.registers``) the figure is the compile's (the
    allocation where a code generator ran) with the built IR's register model beside it; before the
    compile, only the floor (C, A and B, what refuses a config before the build), labelled ``floor``."""
    spec = parsed.spec
    if spec is None:
        return []
    hints = []
    shape = parsed.document.get(("problem", "shape"))
    if shape is not None:
        hints.append(_hint(shape.value.range.end, "  " + _dims(spec.problem.shape)))
    try:
        budget = estimate_budget(spec.problem, spec.config, spec.target)
    except Exception:  # noqa: BLE001 - a config the estimate cannot read gets no hint, never an error
        return hints
    if registers is not None:
        label = f"  regs {registers['estimate']}/{registers['budget']} by the {registers['source']}"
        if registers["allocated"] is not None:
            label += f" (IR model {registers['ir']})"
    else:
        label = f"  regs floor {budget.floor_text}/{budget.reg_capacity} {budget.reg_unit}"
    for knob, source in spec.knob_sources.items():
        if knob in TILE_KNOBS and not source.inherited:
            hints.append(_hint(source.range.end, label))
            break
    return [h for h in hints if visible.start.line <= h.position.line <= visible.end.line]


def _dims(shape) -> str:
    d = shape.to_dict()
    if "m" in d:
        batch = "x".join(map(str, d["batch"]))
        return (f"batch {batch} " if batch else "") + f"M {d['m']} N {d['n']} K {d['k']}"
    return " ".join(f"{k}{d[k]}" for k in CONV_KEYS if d[k] and not (k == "g" and d[k] == 1)
                    and not (k in ("id", "od", "kd", "sd") and d[k] == 1))


def _hint(pos, label: str) -> lsp.InlayHint:
    return lsp.InlayHint(position=lsp.Position(pos.line, pos.character), label=label,
                         kind=lsp.InlayHintKind.Type, padding_left=True)


def document_symbols(doc: Document) -> list[lsp.DocumentSymbol]:
    """Each table with its keys."""
    out = []
    for table in doc.tables:
        keys = [lsp.DocumentSymbol(name=".".join(map(str, e.path[len(table.path):])), kind=lsp.SymbolKind.Property,
                                   range=spec_range(e.range), selection_range=spec_range(e.key_range),
                                   detail=_short(str(e.value.scalar) if e.value.scalar is not None else e.value.kind))
                for e in table.entries]
        if not table.path:
            out.extend(keys)
            continue
        header = table.header_range or table.range
        out.append(lsp.DocumentSymbol(name=table.name, kind=lsp.SymbolKind.Namespace, range=spec_range(table.range),
                                      selection_range=spec_range(header), children=keys))
    return out


def _short(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def code_lenses(doc: Document, uri: str) -> list[lsp.CodeLens]:
    """"IR after pass..." and "Assembly" on ``[config]`` (or the first table), "Run check" on ``[check]``."""
    lenses = []
    anchor = doc.table("config") or (doc.tables[1] if len(doc.tables) > 1 else None)
    if anchor is not None and anchor.header_range is not None:
        rng = spec_range(anchor.header_range)
        for title, command in (("IR after pass...", "kdd.showIR"), ("Assembly", "kdd.showAssembly")):
            lenses.append(lsp.CodeLens(rng, lsp.Command(title=title, command=command, arguments=[uri])))
    check = doc.table("check") or doc.table("problem")
    if check is not None and check.header_range is not None:
        run = lsp.Command(title="Run check", command="kdd.runCheck", arguments=[uri])
        lenses.append(lsp.CodeLens(spec_range(check.header_range), run))
    return lenses


def definition(doc: Document, path: str | None, line: int, character: int, read_text) -> lsp.Location | None:
    """From a key to where the config it extends writes the same key; from ``extends`` to the parent file."""
    hit = doc.node_at(Position(line, character))
    if hit is None or hit.entry is None or path is None:
        return None
    key_path = hit.entry.path
    current, current_path = doc, path
    seen = {os.path.abspath(path)}
    while True:
        parent = current.get(("extends",))
        if parent is None or parent.value.kind != "string":
            return None
        parent_path = os.path.abspath(os.path.join(os.path.dirname(current_path), parent.value.value))
        if parent_path in seen:
            return None
        seen.add(parent_path)
        try:
            parent_doc = parse_document(read_text(parent_path))
        except (OSError, UnicodeDecodeError, ValueError):
            return None
        uri = Path(parent_path).as_uri()
        if key_path == ("extends",):
            return lsp.Location(uri, lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)))
        entry = parent_doc.get(key_path)
        if entry is not None:
            return lsp.Location(uri, spec_range(entry.key_range))
        current, current_path = parent_doc, parent_path
