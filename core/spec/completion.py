"""Completion in kernel config documents: table names, keys, enum values and layout tags.

Works on the raw text around the cursor, so it completes while the document
is half typed and does not parse. The language server translates the
:class:`Completion` items; the knowledge (which keys, which values) comes
from :data:`~kdd.core.spec.schema.SCHEMA`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .schema import SCHEMA, KeySpec, TableSpec

# oneDNN tags kernel authors use most, per tensor (any tag oneDNN accepts is valid; these are offered).
LAYOUT_TAGS = {
    "src": ("axb", "abx", "aBx16b", "aBx32b", "ABx32a16b", "ABx32a32b", "NChw32n32c", "nchw", "nhwc"),
    "wei": ("axcb", "abx", "xba", "ABx16a16b", "ABx16b16a", "BAx16a16b", "AB8b16a2b", "oihw", "hwio"),
    "dst": ("axb", "abx", "aBx16b", "aBx32b", "ABx32a16b", "NChw32n32c", "nchw", "nhwc"),
}
POST_OPS = ("relu", "gelu_erf", "gelu_tanh", "tanh", "sigmoid", "sum", "linear:1:0", "scale:1", "bias")
_HEADER = re.compile(r"^\s*\[\s*([A-Za-z0-9_.]*)\s*\]")
_KEY_PREFIX = re.compile(r"^\s*([A-Za-z_]*)$")
_VALUE_PREFIX = re.compile(r'^\s*([A-Za-z_]+)\s*=\s*(\[?\s*(?:"[^"]*",\s*)*)?"?([^"]*)$')


@dataclass(frozen=True)
class Completion:
    """One proposal: ``kind`` is ``table``, ``key`` or ``value``; ``insert`` the text that replaces the
    word being typed."""

    label: str
    kind: str
    detail: str
    documentation: str
    insert: str


def _table_at(lines: list[str], line: int) -> TableSpec | None:
    for text in reversed(lines[:line]):
        m = _HEADER.match(text)
        if m:
            return next((t for t in SCHEMA if t.name == m.group(1)), None)
    return SCHEMA[0]


def complete(text: str, line: int, character: int) -> list[Completion]:
    """The proposals at (``line``, ``character``): 0-based, characters as UTF-16 code units."""
    lines = text.split("\n")
    if line >= len(lines):
        return []
    current = lines[line]
    prefix = current.encode("utf-16-le")[:2 * character].decode("utf-16-le", errors="ignore")
    if prefix.lstrip().startswith("["):
        return [Completion(t.name, "table", "table", t.doc, t.name) for t in SCHEMA if t.name]
    table = _table_at(lines, line)
    if table is None:
        return []
    if _KEY_PREFIX.match(prefix):
        written = {m.group(1) for t in lines if (m := re.match(r"^\s*([A-Za-z_]+)\s*=", t))}
        return [Completion(k.name, "key", k.type_name, k.doc, f"{k.name} = {k.example}" if k.example else k.name)
                for k in table.keys if k.name not in written]
    m = _VALUE_PREFIX.match(prefix)
    if m:
        spec = table.key(m.group(1))
        return _values(table, spec) if spec is not None else []
    return []


def _values(table: TableSpec, spec: KeySpec) -> list[Completion]:
    if spec.allowed:
        return [Completion(str(v), "value", spec.name, spec.doc, str(v)) for v in spec.allowed]
    if table.name == "problem" and spec.name in LAYOUT_TAGS:
        return [Completion(tag, "value", f"{spec.name} layout", "oneDNN memory format tag (hover shows its "
                           "blocks and strides)", tag) for tag in LAYOUT_TAGS[spec.name]]
    if table.name == "problem" and spec.name == "post_ops":
        return [Completion(op, "value", "post-op", "benchdnn --attr-post-ops entry", op) for op in POST_OPS]
    return []
