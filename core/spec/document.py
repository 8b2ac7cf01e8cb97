"""The kernel config document: a TOML text parsed by tree-sitter-toml into immutable records.

Every key and value keeps its exact source :class:`Range` (LSP positions), so
diagnostics, hovers and inlays can point at the right characters. Parsing never
fails: the parts of the text that tree-sitter could not make sense of are kept
as :class:`SyntaxFault` records (explained by :mod:`kdd.core.spec.syntax`), and
everything else is still available.

A document is a list of tables; the root table (path ``()``) holds top-level
keys such as ``extends``. Keys are addressed by their full path from the root:
``slm = { bufs = 3 }`` under ``[config]`` gives an entry with path
``("config", "slm")`` whose value holds an entry ``("config", "slm", "bufs")``;
``slm.bufs = 3`` gives that second entry directly. Array items are addressed by
their integer index.
"""
from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Iterator

from importlib.machinery import PathFinder
from importlib.util import find_spec, module_from_spec

from tree_sitter import Language, Node, Parser

from .limits import MAX_DOCUMENT_CHARS, MAX_NESTING, too_large_message
from .positions import LineIndex, Position, Range
from .scalars import decode_string, parse_datetime, parse_float, parse_integer

__all__ = ["Position", "Range", "Value", "Entry", "Table", "Comment", "SyntaxFault", "Hit", "Document",
           "parse_document", "iter_entries"]

KeyPath = tuple[str | int, ...]

KEY_TYPES = frozenset({"bare_key", "quoted_key", "dotted_key"})
DATETIME_TYPES = frozenset({"offset_date_time", "local_date_time", "local_date", "local_time"})
VALUE_TYPES = frozenset({"string", "integer", "float", "boolean", "array", "inline_table"}) | DATETIME_TYPES
TABLE_TYPES = frozenset({"table", "table_array_element"})



def _toml_grammar():
    """tree-sitter-toml's compiled grammar (the ``language()`` capsule of its ``_binding`` extension).

    The package's ``__init__`` imports :mod:`importlib.resources` (and with it ``tempfile``, ``random``
    and ``shutil``'s compressors: ~6 ms of every compile) for a highlight query kdd never reads, so the
    extension is loaded from the package's folder without running that ``__init__``, and registered under
    its name so that a later ``import tree_sitter_toml`` finds it; where the package is laid out otherwise,
    it is imported as usual."""
    name = "tree_sitter_toml._binding"
    package = find_spec("tree_sitter_toml")
    spec = PathFinder.find_spec(name, package.submodule_search_locations) if package is not None else None
    if spec is None or name in sys.modules:
        import tree_sitter_toml

        return tree_sitter_toml.language()
    binding = module_from_spec(spec)
    spec.loader.exec_module(binding)
    sys.modules[name] = binding
    return binding.language()


_LANGUAGE = Language(_toml_grammar())
# A tree-sitter parser is not safe to share between threads; the daemon parses from several.
_PARSERS = threading.local()


def _parser() -> Parser:
    if not hasattr(_PARSERS, "parser"):
        _PARSERS.parser = Parser(_LANGUAGE)
    return _PARSERS.parser


@dataclass(frozen=True)
class Value:
    """A TOML value with its source range.

    ``kind`` is one of ``string``, ``integer``, ``float``, ``boolean``,
    ``datetime``, ``array``, ``table`` (an inline table) or ``invalid`` (text
    that did not parse; a syntax diagnostic covers it).
    """

    kind: str
    range: Range
    scalar: Any = None
    items: tuple["Value", ...] = ()
    entries: tuple["Entry", ...] = ()
    # For strings: document index where each decoded character starts, plus the closing quote.
    char_starts: tuple[int, ...] = ()
    lines: LineIndex | None = field(default=None, compare=False, repr=False)

    @property
    def value(self) -> Any:
        """The Python value: scalars as is, arrays as tuples, inline tables as a fresh dict."""
        if self.kind == "array":
            return tuple(item.value for item in self.items)
        if self.kind == "table":
            nested: dict = {}
            for entry in self.entries:
                _insert(nested, entry.written_path, entry.value.value)
            return nested
        return self.scalar

    def sub_range(self, start: int, end: int) -> Range:
        """Source range of the decoded characters ``[start, end)`` of a string value.

        Escapes and multi-line strings are accounted for; offsets are clamped
        to the string. For a non-string value the whole value range is returned.
        """
        if self.kind != "string" or self.lines is None:
            return self.range
        last = len(self.char_starts) - 1
        start = min(max(start, 0), last)
        end = min(max(end, start), last)
        return self.lines.range(self.char_starts[start], self.char_starts[end])


@dataclass(frozen=True)
class Entry:
    """A ``key = value`` pair. ``path`` is the full key path from the document root."""

    path: KeyPath
    # One range per key component as written (the last len(key_ranges) elements of path).
    key_ranges: tuple[Range, ...]
    value: Value
    range: Range

    @property
    def key(self) -> str | int:
        return self.path[-1]

    @property
    def written_path(self) -> KeyPath:
        """The key components as written in the pair (more than one for a dotted key)."""
        return self.path[len(self.path) - len(self.key_ranges):]

    @property
    def key_range(self) -> Range:
        """Range of the whole key as written (all components of a dotted key)."""
        return Range(self.key_ranges[0].start, self.key_ranges[-1].end)

    def key_part_range(self, depth: int) -> Range:
        """Range of the written key component that is ``path[depth]`` (clamped to the written part)."""
        written_from = len(self.path) - len(self.key_ranges)
        return self.key_ranges[min(max(depth - written_from, 0), len(self.key_ranges) - 1)]


@dataclass(frozen=True)
class Table:
    """A ``[table]`` (or ``[[array.table]]``) with its entries; the root table has path ``()``."""

    path: tuple[str, ...]
    header_ranges: tuple[Range, ...]
    range: Range
    entries: tuple[Entry, ...]
    is_array: bool = False

    @property
    def name(self) -> str:
        return ".".join(self.path)

    @property
    def header_range(self) -> Range | None:
        """Range of the table name inside its brackets (None for the root)."""
        if not self.header_ranges:
            return None
        return Range(self.header_ranges[0].start, self.header_ranges[-1].end)


@dataclass(frozen=True)
class Comment:
    """A ``# comment`` and its range."""

    range: Range
    text: str


@dataclass(frozen=True)
class SyntaxFault:
    """Text tree-sitter could not parse (an ERROR node) or a token it had to assume (MISSING).

    ``start``/``end`` are string indices into the document text; ``missing``
    names the assumed token for MISSING nodes; ``message`` is set when the
    reader itself refused the text (a document over the size cap).
    """

    start: int
    end: int
    range: Range
    missing: str | None = None
    message: str | None = None


@dataclass(frozen=True)
class Hit:
    """What lies under a position: a table header, an entry's key, or a value (innermost item)."""

    part: str  # "table" | "key" | "value"
    range: Range
    table: Table | None = None
    entry: Entry | None = None
    value: Value | None = None


@dataclass(frozen=True)
class Document:
    """A parsed kernel config document."""

    text: str
    tables: tuple[Table, ...]
    comments: tuple[Comment, ...]
    faults: tuple[SyntaxFault, ...]
    lines: LineIndex = field(compare=False, repr=False)

    @cached_property
    def entries(self) -> tuple[Entry, ...]:
        """Every entry of every table, inline-table entries right after their parent, in source order."""
        return tuple(e for table in self.tables for e in iter_entries(table.entries))

    def get(self, path: KeyPath) -> Entry | None:
        """The entry at ``path`` (the last one when a key is duplicated), or None."""
        path = tuple(path)
        found = None
        for entry in self.entries:
            if entry.path == path:
                found = entry
        return found

    def table(self, name: str) -> Table | None:
        """The first table called ``name`` (dotted for nested tables; "" is the root)."""
        return next((t for t in self.tables if t.name == name), None)

    def to_python(self) -> dict:
        """The document as nested Python dicts (later duplicates win)."""
        result: dict = {}
        for table in self.tables:
            if table.path:
                _insert(result, table.path, {}, keep=True)
            for entry in table.entries:
                _insert(result, entry.path, entry.value.value)
        return result

    def node_at(self, pos: Position) -> Hit | None:
        """The innermost table header, key or value at ``pos``, or None (whitespace, comments)."""
        for table in self.tables:
            header = table.header_range
            if header is not None and header.contains(pos):
                return Hit("table", header, table=table)
        hit = None
        # Entries come outer before inner, so the last match is the innermost.
        for entry in self.entries:
            if entry.key_range.contains(pos):
                hit = Hit("key", entry.key_range, entry=entry)
            elif entry.value.range.contains(pos):
                value = _innermost_item(entry.value, pos)
                hit = Hit("value", value.range, entry=entry, value=value)
        return hit

    @property
    def full_range(self) -> Range:
        return Range(Position(0, 0), self.lines.end)


def iter_entries(entries: tuple[Entry, ...]) -> Iterator[Entry]:
    """``entries`` and, after each, the entries nested in its value (inline tables, arrays of them)."""
    for entry in entries:
        yield entry
        yield from _walk_value(entry.value)


def _walk_value(value: Value) -> Iterator[Entry]:
    yield from iter_entries(value.entries)
    for item in value.items:
        yield from _walk_value(item)


def _innermost_item(value: Value, pos: Position) -> Value:
    for item in value.items:
        if item.range.contains(pos):
            return _innermost_item(item, pos)
    return value


def _insert(target: dict, path: KeyPath, value: Any, keep: bool = False) -> None:
    """Set ``target[path[0]]...[path[-1]] = value``, replacing non-dicts met on the way."""
    for key in path[:-1]:
        if not isinstance(target.get(key), dict):
            target[key] = {}
        target = target[key]
    if not (keep and isinstance(target.get(path[-1]), dict)):
        target[path[-1]] = value


BOM = "\ufeff"


def parse_document(text: str) -> Document:
    """Parse ``text`` (any string at all) into a :class:`Document`.

    A leading UTF-8 byte-order mark is read as a blank (one character, so every
    position stays what the editor counts). A text over the size cap of
    :mod:`.limits` is not read at all: the document is empty but for one fault
    saying so.
    """
    if len(text) > MAX_DOCUMENT_CHARS:
        # Refused in constant time (an editor sends it again on every keystroke): not even its lines
        # are indexed, so the document is empty.
        start = Range(Position(0, 0), Position(0, 0))
        fault = SyntaxFault(0, 0, start, message=too_large_message(len(text)))
        return Document("", (Table((), (), start, ()),), (), (fault,), LineIndex(""))
    if text.startswith(BOM):
        text = " " + text[1:]
    lines = LineIndex(text)
    tree = _parser().parse(lines.encoded())
    return _Builder(text, lines).build(tree.root_node)


class _Builder:
    """Turns a tree-sitter-toml tree into :class:`Document` records."""

    def __init__(self, text: str, lines: LineIndex):
        self.text = text
        self.lines = lines

    def index(self, byte: int) -> int:
        return self.lines.index_of_byte(byte)

    def range(self, node: Node) -> Range:
        return self.lines.byte_range(node.start_byte, node.end_byte)

    def source(self, node: Node) -> str:
        return self.text[self.index(node.start_byte):self.index(node.end_byte)]

    def build(self, root: Node) -> Document:
        root_entries: list[Entry] = []
        tables: list[Table] = []
        for child in root.children:
            if child.type == "pair":
                root_entries.extend(self.pair(child, ()))
            elif child.type in TABLE_TYPES:
                tables.extend(self.table(child))
        whole = self.lines.range(0, len(self.text))
        root_table = Table((), (), whole, tuple(root_entries))
        comments, faults = self.scan(root)
        return Document(self.text, (root_table, *tables), comments, faults, self.lines)

    def scan(self, root: Node) -> tuple[tuple[Comment, ...], tuple[SyntaxFault, ...]]:
        """Collect comments, ERROR nodes (outermost only) and MISSING nodes, in source order."""
        comments: list[Comment] = []
        faults: list[SyntaxFault] = []
        stack = [root]
        while stack:
            node = stack.pop()
            if node.type == "comment":
                comments.append(Comment(self.range(node), self.source(node)))
            elif node.is_error or node.is_missing:
                start, end = self.index(node.start_byte), self.index(node.end_byte)
                faults.append(SyntaxFault(start, end, self.lines.range(start, end),
                                          node.type if node.is_missing else None))
                continue
            elif node.has_error or node.child_count:
                stack.extend(reversed(node.children))
        comments.sort(key=lambda c: c.range.start)
        faults.sort(key=lambda f: (f.start, f.end))
        return tuple(comments), tuple(faults)

    def table(self, node: Node) -> list[Table]:
        key = next((c for c in node.children if c.type in KEY_TYPES), None)
        if key is None:
            return []
        parts = self.key_parts(key)
        entries = [e for c in node.children if c.type == "pair" for e in self.pair(c, tuple(n for n, _ in parts))]
        return [Table(tuple(n for n, _ in parts), tuple(r for _, r in parts), self.range(node), tuple(entries),
                      is_array=node.type == "table_array_element")]

    def pair(self, node: Node, prefix: KeyPath, depth: int = 0) -> list[Entry]:
        """The entry of a ``key = value`` node; none when the pair itself is broken."""
        if any(c.is_error or c.is_missing for c in node.children):
            return []
        key = next((c for c in node.children if c.type in KEY_TYPES), None)
        value = next((c for c in node.children if c.type in VALUE_TYPES), None)
        if key is None or value is None:
            return []
        parts = self.key_parts(key)
        path = (*prefix, *(n for n, _ in parts))
        return [Entry(path, tuple(r for _, r in parts), self.value(value, path, depth), self.range(node))]

    def key_parts(self, node: Node) -> list[tuple[str, Range]]:
        """The components of a (dotted) key, in order; iterative, as dotted keys nest one level per dot."""
        parts: list[tuple[str, Range]] = []
        stack = [node]
        while stack:
            node = stack.pop()
            if node.type == "dotted_key":
                stack.extend(reversed([c for c in node.children if c.type in KEY_TYPES]))
                continue
            text = self.source(node)
            if node.type == "quoted_key":
                text = decode_string(text, 0).value
            parts.append((text, self.range(node)))
        return parts

    def value(self, node: Node, path: KeyPath, depth: int = 0) -> Value:
        """The value of ``node``; ``depth`` counts the arrays and inline tables around it."""
        rng = self.range(node)
        if node.has_error or (node.type in ("array", "inline_table") and depth >= MAX_NESTING):
            # Too deep: the recognizer reports it; the reader stops so nothing after it recurses deeply.
            return Value("invalid", rng)
        kind, text = node.type, self.source(node)
        if kind == "string":
            decoded = decode_string(text, self.index(node.start_byte))
            return Value("string", rng, decoded.value, char_starts=decoded.starts, lines=self.lines)
        if kind == "array":
            items = [c for c in node.children if c.type in VALUE_TYPES]
            return Value("array", rng, items=tuple(self.value(c, (*path, i), depth + 1) for i, c in enumerate(items)))
        if kind == "inline_table":
            entries = [e for c in node.children if c.type == "pair" for e in self.pair(c, path, depth + 1)]
            return Value("table", rng, entries=tuple(entries))
        if kind == "boolean":
            return Value("boolean", rng, text == "true")
        if kind == "integer":
            scalar = parse_integer(text)
        elif kind == "float":
            scalar = parse_float(text)
        else:
            scalar, kind = parse_datetime(kind, text), "datetime"
        return Value(kind if scalar is not None else "invalid", rng, scalar)
