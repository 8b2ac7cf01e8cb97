"""TOML syntax diagnostics: tree-sitter finds the faults, the recognizer explains them.

tree-sitter marks where the text is broken (its ERROR and MISSING nodes) but
its error recovery says little about *why*, and it accepts a few things TOML
does not (two pairs on one line). Every problem of :mod:`.recognizer` is
reported with its message; a tree-sitter fault that no problem's statement
overlaps still gets a plain "unexpected ..." message on its first token, so
nothing tree-sitter rejects goes unreported.
"""
from __future__ import annotations

from typing import Iterator

from .diagnostics import Diagnostic, error, sort_key
from .document import Document, SyntaxFault, Value
from .recognizer import find_problems

CODE = "syntax"


def syntax_diagnostics(doc: Document) -> list[Diagnostic]:
    """Every recognizer problem, and a plain message for each tree-sitter fault no problem explains."""
    refused = [error(f.range, f.message, CODE) for f in doc.faults if f.message is not None]
    if refused:
        return refused  # the reader refused the text: there is nothing more to say about it
    problems = find_problems(doc.text)
    diagnostics = [error(doc.lines.range(p.start, p.end), p.message, CODE) for p in problems]
    diagnostics += [_unexplained(doc, f) for f in doc.faults if not any(_overlaps(p.statement, f) for p in problems)]
    diagnostics += _invalid_scalars(doc, problems)
    return sorted(diagnostics, key=sort_key)


def _overlaps(statement: tuple[int, int], fault: SyntaxFault) -> bool:
    start, end = statement
    if fault.start == fault.end:
        return start <= fault.start <= end
    return start < fault.end and fault.start < end


def _unexplained(doc: Document, fault: SyntaxFault) -> Diagnostic:
    """A plain message on the first token of a fault the recognizer has no explanation for."""
    if fault.missing is not None:
        return error(fault.range, f"expected {fault.missing!r}", CODE)
    text = doc.text
    start = fault.start
    while start < fault.end and text[start] in " \t\r\n":
        start += 1
    end = start
    while end < fault.end and text[end] not in " \t\r\n":
        end += 1
    if start == end:
        return error(fault.range, "unexpected line break" if fault.start < fault.end else "syntax error", CODE)
    return error(doc.lines.range(start, end), f"unexpected {text[start:end]!r}", CODE)


def _invalid_scalars(doc: Document, problems) -> list[Diagnostic]:
    """Tokens tree-sitter accepts but that are not real values (Feb 30th, an hour 25).

    Values inside a statement the recognizer already explained (a value nested
    too deep) are not reported twice.
    """
    found = []
    for entry in doc.entries:
        for value in _leaves(entry.value):
            if value.kind != "invalid":
                continue
            start = doc.lines.index(value.range.start)
            end = doc.lines.index(value.range.end)
            if any(start <= f.end and f.start <= end for f in doc.faults) or \
                    any(p.statement[0] <= start < p.statement[1] for p in problems):
                continue
            found.append(error(value.range, f"invalid value {doc.text[start:end]!r}", CODE))
    return found


def _leaves(value: Value) -> Iterator[Value]:
    yield value
    for item in value.items:
        yield from _leaves(item)
