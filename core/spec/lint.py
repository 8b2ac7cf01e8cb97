"""All the checks one document gets on its own, before inheritance and semantics."""
from __future__ import annotations

from .diagnostics import Diagnostic, sort_key
from .document import Document
from .duplicates import duplicate_diagnostics
from .schema_check import schema_diagnostics
from .syntax import syntax_diagnostics


def lint_document(doc: Document, path: str | None = None) -> list[Diagnostic]:
    """Syntax errors, duplicate keys and schema problems of ``doc`` (the text of file ``path``), sorted."""
    found = syntax_diagnostics(doc) + duplicate_diagnostics(doc, path) + schema_diagnostics(doc)
    return sorted(found, key=sort_key)
