"""The kernel config document: parse ``*.kernel.toml`` with source ranges, check it, read it.

* :mod:`.positions` — ``Position``/``Range`` (LSP: 0-based, UTF-16 characters), ``LineIndex``
* :mod:`.document` — ``parse_document``: tables, entries and values with exact ranges, ``node_at``
* :mod:`.diagnostics` — ``Diagnostic``, ``Severity``, ``Related``
* :mod:`.syntax` — TOML syntax errors explained ("expected a value after '='")
* :mod:`.duplicates` — keys and tables defined twice
* :mod:`.schema` / :mod:`.schema_check` — the format's tables and keys; unknown names, types, values
* :mod:`.lint` — ``lint_document``: every check a document gets on its own
* :mod:`.extends` — ``extends = "other.kernel.toml"``: inheritance through an injectable ``read_text``
* :mod:`.confined` — ``ConfinedReader``: the ``read_text`` of servers, kernel configs inside the roots only
* :mod:`.kernel_spec` — ``load_spec``: text to ``KernelSpec`` plus every diagnostic
"""
from .diagnostics import Diagnostic, Related, Severity
from .document import Document, Entry, Hit, Table, Value, parse_document
from .extends import read_file
from .kernel_spec import KernelSpec, KnobSource, load_spec
from .lint import lint_document
from .positions import LineIndex, Position, Range
from .schema import SCHEMA

__all__ = [
    "Diagnostic", "Document", "Entry", "Hit", "KernelSpec", "KnobSource", "LineIndex", "Position", "Range",
    "Related", "SCHEMA", "Severity", "Table", "Value", "lint_document", "load_spec", "parse_document", "read_file",
]
