"""Diagnostics: a problem in a kernel config document, pointed at its exact range.

The shape follows LSP's ``Diagnostic`` (range, severity, message, code,
source, related information) so the server only translates field names.
``code`` is a stable kebab-case identifier that scripts and tests can match on.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from .positions import Range


class Severity(IntEnum):
    """LSP's DiagnosticSeverity values."""

    ERROR = 1
    WARNING = 2
    INFORMATION = 3
    HINT = 4


@dataclass(frozen=True)
class Related:
    """A location elsewhere (possibly another file) that explains a diagnostic."""

    path: str | None
    range: Range
    message: str


@dataclass(frozen=True)
class Diagnostic:
    """One problem: where it is, how bad, what it is, and a stable code."""

    range: Range
    severity: Severity
    message: str
    code: str
    source: str = "kdd"
    related: tuple[Related, ...] = ()


def error(rng: Range, message: str, code: str, related: tuple[Related, ...] = ()) -> Diagnostic:
    """An error-severity diagnostic."""
    return Diagnostic(rng, Severity.ERROR, message, code, related=related)


def warning(rng: Range, message: str, code: str, related: tuple[Related, ...] = ()) -> Diagnostic:
    """A warning-severity diagnostic."""
    return Diagnostic(rng, Severity.WARNING, message, code, related=related)


def sort_key(diagnostic: Diagnostic) -> tuple:
    """Orders diagnostics by position, then severity, then message (stable output for clients)."""
    return (diagnostic.range.start, diagnostic.range.end, diagnostic.severity, diagnostic.message)
