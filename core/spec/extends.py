"""``extends = "other.kernel.toml"``: a document starting from another one.

The parent path is relative to the directory of the document that names it
(the working directory for a document without a path). Child keys override the
parent's key by key within each table: a key written in the child replaces the
parent's key of the same name wholesale (``slm = { bufs = 2 }`` replaces the
whole parent ``slm``). Chains are followed to the end.

Files are read through an injectable ``read_text(path)`` so the daemon can
serve unsaved editor buffers. Every problem with the chain (a file that cannot
be read, a cycle, errors inside a parent) is reported on this document's
``extends`` value, with the parent locations as related information.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

from .diagnostics import Diagnostic, Related, Severity, error, warning
from .document import Document, Entry, KeyPath, parse_document
from .files import read_file

ReadText = Callable[[str], str]
EXTENDS = ("extends",)
CODE = "extends"


@dataclass(frozen=True)
class Layer:
    """One document of the chain and the file it came from (None: the document being loaded)."""

    path: str | None
    doc: Document


@dataclass(frozen=True)
class Located:
    """An entry of the merged view and the file it was written in."""

    entry: Entry
    path: str | None
    inherited: bool


@dataclass(frozen=True)
class Chain:
    """A document and its ancestors, nearest first, and the merged entries they give."""

    layers: tuple[Layer, ...]
    entries: tuple[Located, ...]

    def get(self, path: KeyPath) -> Located | None:
        """The merged entry at ``path`` (the last one of its layer when duplicated), or None."""
        path = tuple(path)
        return next((e for e in reversed(self.entries) if e.entry.path == path), None)

    def paths(self) -> set[KeyPath]:
        """Every key path of the merged view, with all prefixes (a table counts when any key is in it)."""
        return {e.entry.path[:n] for e in self.entries for n in range(1, len(e.entry.path) + 1)}


def _merge(layers: tuple[Layer, ...]) -> tuple[Located, ...]:
    """Entries of all layers; a (table, key) written in a nearer layer hides the farther layers' ones."""
    merged: list[Located] = []
    for depth, layer in reversed(list(enumerate(layers))):
        mine = [e for e in layer.doc.entries if e.path != EXTENDS]
        groups = {e.path[:2] for e in mine}
        merged = [m for m in merged if m.entry.path[:2] not in groups]
        merged.extend(Located(e, layer.path, depth > 0) for e in mine)
    return tuple(merged)


def load_chain(doc: Document, path: str | None, read_text: ReadText = read_file,
               lint: Callable[[Document, str | None], list[Diagnostic]] | None = None,
               ) -> tuple[Chain, list[Diagnostic]]:
    """Follow ``extends`` from ``doc`` (the text of file ``path``); diagnostics land on its ``extends`` value.

    ``lint`` checks each parent document; its problems are summarized on the
    ``extends`` value so that a broken parent is visible from the child.
    """
    anchor = doc.get(EXTENDS)
    layers = [Layer(path, doc)]
    seen = [_absolute(path)] if path is not None else []
    diagnostics: list[Diagnostic] = []
    current = layers[0]
    while True:
        entry = current.doc.get(EXTENDS)
        if entry is None or entry.value.kind != "string":
            break
        parent = _absolute(os.path.join(os.path.dirname(_absolute(current.path)) if current.path else os.getcwd(),
                                        entry.value.value))
        related = () if current is layers[0] else (Related(current.path, entry.value.range, "extended here"),)
        if parent in seen:
            cycle = " -> ".join(display_path(p, path) for p in (*seen[seen.index(parent):], parent))
            diagnostics.append(error(anchor.value.range, f"extends cycle: {cycle}", CODE, related))
            break
        try:
            text = read_text(parent)
        except Exception as exc:  # an injected reader may fail any way; it must not take load_spec down
            shown = display_path(parent, path)
            what = f"cannot read '{shown}'" if current is layers[0] else \
                f"'{display_path(current.path, path)}' extends '{shown}', which cannot be read"
            reason = getattr(exc, "strerror", None) or str(exc)
            diagnostics.append(error(anchor.value.range, f"{what}: {reason}", CODE, related))
            break
        seen.append(parent)
        current = Layer(parent, parse_document(text))
        layers.append(current)
        if lint is not None:
            diagnostics.extend(_summarize(lint(current.doc, parent), current.path, path, anchor))
    return Chain(tuple(layers), _merge(tuple(layers))), diagnostics


def _summarize(found: list[Diagnostic], parent: str, path: str | None, anchor: Entry) -> list[Diagnostic]:
    """One diagnostic on the ``extends`` value for the problems of a parent file."""
    if not found:
        return []
    found = sorted(found, key=lambda d: (d.severity, d.range.start))
    first = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    message = f"{display_path(parent, path)}:{first.range.start}: {first.message}{more}"
    related = tuple(Related(parent, d.range, d.message) for d in found)
    make = error if first.severity == Severity.ERROR else warning
    return [make(anchor.value.range, message, CODE, related)]


def _absolute(path: str) -> str:
    return os.path.normpath(os.path.abspath(path))


def display_path(target: str, path: str | None) -> str:
    """``target`` relative to the loaded document's directory, as a user would write it."""
    base = os.path.dirname(_absolute(path)) if path is not None else os.getcwd()
    return os.path.relpath(target, base)
