"""The kernel config document: parse ``*.kernel.toml`` with source ranges, check it, read it.

* :mod:`.positions` — ``Position``/``Range`` (LSP: 0-based, UTF-16 characters), ``LineIndex``
* :mod:`.document` — ``parse_document``: tables, entries and values with exact ranges, ``node_at``
* :mod:`.diagnostics` — ``Diagnostic``, ``Severity``, ``Related``
* :mod:`.syntax` — TOML syntax errors explained ("expected a value after '='")
* :mod:`.duplicates` — keys and tables defined twice
* :mod:`.schema` / :mod:`.schema_check` — the format's tables and keys; unknown names, types, values
* :mod:`.lint` — ``lint_document``: every check a document gets on its own
* :mod:`.files` — ``read_file``: a config file, regular and size-capped
* :mod:`.extends` — ``extends = "other.kernel.toml"``: inheritance through an injectable ``read_text``
* :mod:`.confined` — ``ConfinedReader``: the ``read_text`` of servers, kernel configs inside the roots only
* :mod:`.kernel_spec` — ``load_spec``: text to ``KernelSpec`` plus every diagnostic

The names below load their module on first use (:mod:`kdd.core.lazy_exports`), so a caller that
needs one submodule (the command line reading a file to key its cache) does
not load the parser.
"""
from __future__ import annotations

from kdd.core.lazy_exports import lazy_exports

_WHERE = {
    "Diagnostic": "diagnostics", "Related": "diagnostics", "Severity": "diagnostics",
    "Document": "document", "Entry": "document", "Hit": "document", "Table": "document", "Value": "document",
    "parse_document": "document", "read_file": "files", "KernelSpec": "kernel_spec", "KnobSource": "kernel_spec",
    "load_spec": "kernel_spec", "lint_document": "lint", "LineIndex": "positions", "Position": "positions",
    "Range": "positions", "SCHEMA": "schema",
}
__all__ = sorted(_WHERE)

__getattr__ = lazy_exports(__name__, _WHERE)
