"""Checks a document against the schema: unknown tables and keys, value types, allowed values, required keys.

Unknown names get a did-you-mean over the names the schema knows; a type or
value error points at the value, an unknown name at the name itself.
"""
from __future__ import annotations

from typing import Iterable

from .diagnostics import Diagnostic, error
from .document import Document, Entry, KeyPath, Position, Range, Table, Value
from .schema import SCHEMA, TYPE_NAMES, KeySpec, TableSpec, did_you_mean

UNKNOWN_TABLE = "unknown-table"
UNKNOWN_KEY = "unknown-key"
WRONG_TYPE = "wrong-type"
BAD_VALUE = "bad-value"
MISSING = "missing-key"


def schema_diagnostics(doc: Document, tables: tuple[TableSpec, ...] = SCHEMA) -> list[Diagnostic]:
    """Unknown tables/keys, wrong types and values not allowed, for every table and entry of ``doc``."""
    by_name = {t.name: t for t in tables}
    found: list[Diagnostic] = []
    for table in doc.tables:
        if table.path:
            found.extend(_check_table(table, by_name))
    for entry in doc.entries:
        found.extend(entry_diagnostics(entry, tables))
    return found


def entry_diagnostics(entry: Entry, tables: tuple[TableSpec, ...] = SCHEMA) -> list[Diagnostic]:
    """Schema problems of one entry: an unknown name, a wrong type, a value not allowed."""
    if any(isinstance(part, int) for part in entry.path):
        return []  # inside an array: the array's item check covers it
    return _check_entry(entry, {t.name: t for t in tables})


def _check_table(table: Table, by_name: dict[str, TableSpec]) -> list[Diagnostic]:
    if table.is_array:
        return [error(table.header_range, f"arrays of tables ([[{table.name}]]) are not used in kernel configs",
                      UNKNOWN_TABLE)]
    spec = by_name.get(table.path[0])
    if spec is None or not spec.name:
        names = [n for n in by_name if n]
        return [error(table.header_ranges[0], f"unknown table [{table.path[0]}]{did_you_mean(table.path[0], names)}",
                      UNKNOWN_TABLE)]
    owner: TableSpec | KeySpec = spec
    for depth, name in enumerate(table.path[1:], start=1):
        sub = owner.key(name)
        if sub is None:
            return [_unknown(table.path[:depth + 1], owner, table.header_ranges[depth])]
        if "table" not in sub.types:
            return [error(table.header_ranges[depth], f"`{name}` must be {sub.type_name}, not a table",
                          WRONG_TYPE)]
        if sub.any_keys:
            return []
        owner = sub
    return []


def _check_entry(entry: Entry, by_name: dict[str, TableSpec]) -> list[Diagnostic]:
    root = by_name.get("", TableSpec("", "", ()))
    top_level = [k.name for k in root.keys] + [n for n in by_name if n]
    if len(entry.path) == 1:
        name = entry.path[0]
        if name in by_name:
            return [_wrong_type(entry.value, name, ("table",))]
        if root.key(name) is None:
            return [_unknown(entry.path, root, entry.key_part_range(0), top_level)]
        return _check_value(entry.value, root.key(name))
    owner: TableSpec | KeySpec | None = by_name.get(entry.path[0])
    if owner is None or owner is root:
        # An unknown table is reported once: at its header, or here when a top-level dotted key names it.
        if len(entry.key_ranges) == len(entry.path):
            return [_unknown(entry.path[:1], root, entry.key_part_range(0), top_level)]
        return []
    for depth in range(1, len(entry.path)):
        spec = owner.key(entry.path[depth])
        if spec is None:
            return [_unknown(entry.path[:depth + 1], owner, entry.key_part_range(depth))]
        if depth < len(entry.path) - 1:
            if "table" not in spec.types:
                return [_unknown(entry.path[:depth + 2], spec, entry.key_part_range(depth + 1))]
            if spec.any_keys:
                return _check_open_key(entry, depth + 1)
        owner = spec
    return _check_value(entry.value, owner)


def _check_open_key(entry: Entry, depth: int) -> list[Diagnostic]:
    """A key of an open table (a tile keyed by dimension names): any name, an integer size."""
    name = ".".join(map(str, entry.path[depth - 1:depth + 1]))
    if len(entry.path) > depth + 1:
        return [error(entry.key_part_range(depth + 1), f"`{name}` is a size, it has no sub-keys", UNKNOWN_KEY)]
    if entry.value.kind not in ("integer", "invalid"):
        return [_wrong_type(entry.value, name, ("integer",))]
    return []


def _unknown(path: KeyPath, owner: TableSpec | KeySpec, rng: Range, candidates: list[str] | None = None
             ) -> Diagnostic:
    """An unknown name ``path[-1]`` looked up in the table or key ``owner``."""
    name = str(path[-1])
    if isinstance(owner, KeySpec) and "table" not in owner.types:
        return error(rng, f"`{owner.name}` is {owner.type_name}, it has no key '{name}'", UNKNOWN_KEY)
    if candidates is None:
        candidates = [k.name for k in owner.keys]
    aliases = {alias: k.name for k in owner.keys for alias in k.aliases}
    hint = did_you_mean(name, candidates, aliases)
    if len(path) == 1:
        return error(rng, f"unknown key '{name}'{hint}", UNKNOWN_KEY)
    where = f"[{path[0]}]" if len(path) == 2 else f"'{'.'.join(map(str, path[:-1]))}'"
    return error(rng, f"unknown key '{name}' in {where}{hint}", UNKNOWN_KEY)


def _wrong_type(value: Value, name: str, expected: tuple[str, ...]) -> Diagnostic:
    words = " or ".join(TYPE_NAMES[t] for t in expected)
    return error(value.range, f"`{name}` must be {words}, got {value.kind}", WRONG_TYPE)


def _type_ok(kind: str, expected: tuple[str, ...]) -> bool:
    return kind in expected or ("float" in expected and kind == "integer")


def _check_value(value: Value, spec: KeySpec) -> list[Diagnostic]:
    if value.kind == "invalid":
        return []
    if not _type_ok(value.kind, spec.types):
        return [_wrong_type(value, spec.name, spec.types)]
    if value.kind == "array" and spec.items is not None:
        return [error(item.range, f"`{spec.name}` items must be {TYPE_NAMES[spec.items]}, got {item.kind}",
                      WRONG_TYPE)
                for item in value.items if item.kind != "invalid" and not _type_ok(item.kind, (spec.items,))]
    if spec.allowed and value.value not in spec.allowed:
        shown = value.value if isinstance(value.value, str) else repr(value.value)
        hint = did_you_mean(shown, [str(a) for a in spec.allowed])
        options = ", ".join(str(a) for a in spec.allowed)
        return [error(value.range, f"`{spec.name}` must be one of {options}, got '{shown}'{hint}", BAD_VALUE)]
    return []


def required_diagnostics(present: Iterable[KeyPath], doc: Document,
                         tables: tuple[TableSpec, ...] = SCHEMA) -> list[Diagnostic]:
    """Required tables and keys absent from ``present`` (the key paths after inheritance).

    A missing key is reported on its table's header in ``doc``, a missing
    table at the start of the document.
    """
    present = set(present)
    found: list[Diagnostic] = []
    start = Range(Position(0, 0), Position(0, 0))
    for spec in tables:
        missing = [k.name for k in spec.keys if k.required and (*((spec.name,) if spec.name else ()), k.name)
                   not in present]
        if not missing:
            continue
        names = ", ".join(f"'{m}'" for m in missing)
        header = doc.table(spec.name)
        if spec.name and header is None and not any(p[:1] == (spec.name,) for p in present):
            if spec.required:
                found.append(error(start, f"missing table [{spec.name}] (it needs {names})", MISSING))
            continue
        rng = header.header_range if header is not None and header.header_range else start
        plural = "keys" if len(missing) > 1 else "key"
        found.append(error(rng, f"[{spec.name}] is missing required {plural} {names}", MISSING))
    return found
