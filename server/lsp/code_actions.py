"""Code actions: the fixes kdd's diagnostics already name, as workspace edits.

- a quick fix for every "did you mean 'X'?": the misspelt word inside the diagnostic's range becomes X;
- a quick fix for each repair an out-of-registers error lists (the knob change it names, computed by
  :func:`kdd.core.spec.knob_edits.repair_settings` from the config as resolved);
- the refactor "Extract this config's defaults as explicit knobs" (every knob the defaults chose,
  written into ``[config]``).
"""
from __future__ import annotations

import re

from lsprotocol import types as lsp

from kdd.core.spec.knob_edits import TextEdit, explicit_defaults, knob_text, repair_settings, set_knob

from . import convert

EXTRACT_DEFAULTS = "Extract this config's defaults as explicit knobs"
REGISTER_CODES = ("regs", "out-of-registers")
_SUGGESTION = re.compile(r"did you mean '([^']+)'\?")
_QUOTED = re.compile(r"'([^']+)'|\[([^\]]+)\]")  # 'word' or [table]


def code_actions(uri: str, text: str, parsed, params: lsp.CodeActionParams, compiled: dict | None
                 ) -> list[lsp.CodeAction]:
    """The actions for the diagnostics in ``params.context`` and the refactor, filtered by ``context.only``.
    ``compiled`` is the compile of this text (None while it runs): the repairs come from it."""
    only = params.context.only
    actions: list[lsp.CodeAction] = []
    for diagnostic in params.context.diagnostics:
        fix = did_you_mean_fix(uri, text, diagnostic)
        if fix is not None:
            actions.append(fix)
        if diagnostic.code in REGISTER_CODES and parsed.spec is not None:
            actions += repair_fixes(uri, parsed, diagnostic, compiled)
    if parsed.spec is not None:
        edit = explicit_defaults(parsed.document, parsed.spec)
        if edit is not None:
            actions.append(lsp.CodeAction(EXTRACT_DEFAULTS, kind=lsp.CodeActionKind.RefactorExtract,
                                          edit=_workspace_edit(uri, [edit])))
    if only:
        actions = [a for a in actions if any(a.kind == k or a.kind.startswith(k + ".") for k in only)]
    return actions


def did_you_mean_fix(uri: str, text: str, diagnostic: lsp.Diagnostic) -> lsp.CodeAction | None:
    """Replace the word the message quotes (the first word in quotes or brackets found in the diagnostic's
    range that is not the suggestion) with the suggestion."""
    found = _SUGGESTION.search(diagnostic.message)
    if found is None:
        return None
    suggestion = found.group(1)
    start, end = _offsets(text, diagnostic.range)
    written = text[start:end]
    for word in (a or b for a, b in _QUOTED.findall(diagnostic.message[:found.start()])):
        at = written.find(word)
        if word != suggestion and at >= 0:
            rng = _range(text, start + at, start + at + len(word))
            edit = lsp.TextEdit(rng, suggestion)
            return lsp.CodeAction(f"Replace '{word}' with '{suggestion}'", kind=lsp.CodeActionKind.QuickFix,
                                  diagnostics=[diagnostic], is_preferred=True,
                                  edit=lsp.WorkspaceEdit(changes={uri: [edit]}))
    return None


def repair_fixes(uri: str, parsed, diagnostic: lsp.Diagnostic, compiled: dict | None) -> list[lsp.CodeAction]:
    """One quick fix per knob change of each repair the out-of-registers failure of ``compiled`` lists."""
    codegen = ((compiled or {}).get("stats") or {}).get("codegen") or {}
    details = codegen.get("out_of_registers") or {}
    actions = []
    for repair in details.get("repairs", []):
        for knob, value in repair_settings(parsed.spec, repair):
            edit = set_knob(parsed.document, parsed.spec, knob, value)
            if edit is None:
                continue
            actions.append(lsp.CodeAction(f"{repair['repair']}: {knob_text(knob, value)}",
                                          kind=lsp.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                                          edit=_workspace_edit(uri, [edit])))
    return actions


def _workspace_edit(uri: str, edits: list[TextEdit]) -> lsp.WorkspaceEdit:
    return lsp.WorkspaceEdit(changes={uri: [lsp.TextEdit(convert.range_(e.to_dict()["range"]), e.new_text)
                                            for e in edits]})


def _offsets(text: str, rng: lsp.Range) -> tuple[int, int]:
    """String offsets of an LSP range (kdd's configs are checked to be text; characters as code points)."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def at(p: lsp.Position) -> int:
        return min(starts[min(p.line, len(starts) - 1)] + p.character, len(text))
    return at(rng.start), at(rng.end)


def _range(text: str, start: int, end: int) -> lsp.Range:
    def pos(offset: int) -> lsp.Position:
        line = text.count("\n", 0, offset)
        return lsp.Position(line, offset - (text.rfind("\n", 0, offset) + 1))
    return lsp.Range(pos(start), pos(end))
