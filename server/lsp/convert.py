"""The engine's plain results as lsprotocol types (and LSP positions as the engine's)."""
from __future__ import annotations

from lsprotocol import types as lsp

_SEVERITY = {"error": lsp.DiagnosticSeverity.Error, "warning": lsp.DiagnosticSeverity.Warning,
             "information": lsp.DiagnosticSeverity.Information, "hint": lsp.DiagnosticSeverity.Hint}


def range_(r: dict) -> lsp.Range:
    return lsp.Range(lsp.Position(r["start"]["line"], r["start"]["character"]),
                     lsp.Position(r["end"]["line"], r["end"]["character"]))


def diagnostic(d: dict) -> lsp.Diagnostic:
    return lsp.Diagnostic(range=range_(d["range"]), message=d["message"], severity=_SEVERITY[d["severity"]],
                          code=d["code"], source=d.get("source", "kdd"))


def spec_range(r) -> lsp.Range:
    """A ``kdd.core.spec.Range`` as LSP's."""
    return lsp.Range(lsp.Position(r.start.line, r.start.character), lsp.Position(r.end.line, r.end.character))


_COMPLETION_KIND = {"table": lsp.CompletionItemKind.Module, "key": lsp.CompletionItemKind.Property,
                    "value": lsp.CompletionItemKind.EnumMember}


def completion(c) -> lsp.CompletionItem:
    return lsp.CompletionItem(label=c.label, kind=_COMPLETION_KIND[c.kind], detail=c.detail,
                              documentation=lsp.MarkupContent(lsp.MarkupKind.Markdown, c.documentation),
                              insert_text=c.insert)
