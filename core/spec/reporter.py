"""Puts problems found in (possibly inherited) values onto the document being loaded.

A problem in a value written in this document is reported on that value, or on
the exact characters inside a string value when the error carries a span
(``start``/``end`` offsets into the decoded string). A problem in a value
inherited through ``extends`` cannot be shown in a file the editor does not
have open, so it is reported on this document's ``extends`` value, naming the
file and position, with the real location as related information.
"""
from __future__ import annotations

from .diagnostics import Diagnostic, Related, Severity
from .document import Document, Position, Range, Value
from .extends import EXTENDS, Located, display_path


class Reporter:
    """Collects diagnostics for one document; see the module doc for where they land."""

    def __init__(self, doc: Document, path: str | None):
        self.doc = doc
        self.path = path
        self.found: list[Diagnostic] = []

    def on_value(self, located: Located, message: str, code: str, *, value: Value | None = None,
                 span: tuple[int | None, int | None] | None = None, severity: Severity = Severity.ERROR) -> None:
        """A problem with ``located``'s value (or ``value``, an item of it), inside ``span`` when given."""
        value = value or located.entry.value
        if span is not None and span[0] is not None:
            end = span[1] if span[1] is not None else span[0]
            rng = value.sub_range(span[0], end)
        else:
            rng = value.range
        self.at(located, rng, message, code, severity)

    def at(self, located: Located, rng: Range, message: str, code: str,
           severity: Severity = Severity.ERROR) -> None:
        """A problem at ``rng`` of the file ``located`` comes from."""
        if not located.inherited:
            self.found.append(Diagnostic(rng, severity, message, code))
            return
        extends = self.doc.get(EXTENDS)
        anchor = extends.value.range if extends is not None else Range(Position(0, 0), Position(0, 0))
        where = f"{display_path(located.path, self.path)}:{rng.start}"
        self.found.append(Diagnostic(anchor, severity, f"{where}: {message}", code,
                                     related=(Related(located.path, rng, message),)))

    def here(self, rng: Range, message: str, code: str, severity: Severity = Severity.ERROR) -> None:
        """A problem at ``rng`` of this document."""
        self.found.append(Diagnostic(rng, severity, message, code))
