"""TOML's rule that every key and table is defined once.

Checked in source order over table headers and entries (the keys of each
``[[array]]`` element are in a fresh table, but the array itself may not clash): a key defined twice, a
table header repeated, a key that is already a table (or a table that is
already a value), and a dotted key that reaches into a value such as an inline
table (inline tables are closed once written).
"""
from __future__ import annotations

from .diagnostics import Diagnostic, Related, error
from .document import Document, Entry, KeyPath, Range, Table, iter_entries

CODE = "duplicate-key"


def _dotted(path: KeyPath) -> str:
    return ".".join(str(p) for p in path)


def duplicate_diagnostics(doc: Document, path: str | None = None) -> list[Diagnostic]:
    """Diagnostics for keys and tables defined more than once in ``doc`` (``path`` names its file)."""
    # The keys of each [[array.table]] element belong to a fresh table, so only plain tables' keys count.
    items: list[Table | Entry] = [t for t in doc.tables if t.path]
    items += [e for t in doc.tables if not t.is_array for e in iter_entries(t.entries)]
    items.sort(key=lambda item: item.header_range.start if isinstance(item, Table) else item.key_range.start)
    defined: dict[KeyPath, Table | Entry] = {}
    # Tables that exist only as prefixes of longer paths, and the item that made each one.
    implicit: dict[KeyPath, Table | Entry] = {}
    found: list[Diagnostic] = []
    for item in items:
        problem = _conflict(item, defined, implicit)
        if problem is not None:
            message, first = problem
            where = _name_range(first)
            related = (Related(path, where, "first defined here"),)
            found.append(error(_name_range(item), f"{message} (first defined on line {where.start.line + 1})",
                               CODE, related))
            continue
        defined[item.path] = item
        for depth in range(1, len(item.path)):
            implicit.setdefault(item.path[:depth], item)
    return found


def _name_range(item: Table | Entry) -> Range:
    return item.header_range if isinstance(item, Table) else item.key_range


def _conflict(item: Table | Entry, defined: dict[KeyPath, Table | Entry],
              implicit: dict[KeyPath, Table | Entry]) -> tuple[str, Table | Entry] | None:
    """Why ``item`` may not be defined given the earlier definitions, and the one it clashes with."""
    name = _dotted(item.path)
    first = defined.get(item.path)
    if first is not None:
        return _redefined(item, first, name)
    maker = implicit.get(item.path)
    if isinstance(item, Entry) and maker is not None:
        return f"key '{name}' is already a table (made by '{_dotted(maker.path)}')", maker
    if isinstance(item, Table) and isinstance(maker, Entry):
        return f"table [{name}] was already made by the dotted key '{_dotted(maker.path)}'", maker
    for depth in range(1, len(item.path)):
        owner = defined.get(item.path[:depth])
        inside = isinstance(item, Entry) and isinstance(owner, Entry) and owner.value.range.covers(item.range)
        if isinstance(owner, Entry) and not inside:
            return f"cannot add '{name}': '{_dotted(owner.path)}' is already a value", owner
    return None


def _redefined(item: Table | Entry, first: Table | Entry, name: str) -> tuple[str, Table | Entry] | None:
    """Why ``item`` may not define the path ``first`` already defined (None: both are elements of one
    array of tables)."""
    arrays = [isinstance(x, Table) and x.is_array for x in (item, first)]
    if any(arrays):
        if all(arrays):
            return None  # another element of the same array of tables
        if isinstance(first, Entry):
            return f"table [[{name}]] is already defined as a value", first
        return (f"[{name}] is already an array of tables" if arrays[1] else
                f"array of tables [[{name}]] is already defined as a table"), first
    if isinstance(item, Table) and isinstance(first, Table):
        return f"duplicate table [{name}]", first
    if isinstance(first, Table):
        return f"key '{name}' is already defined as a table", first
    if isinstance(item, Table):
        return f"table [{name}] is already defined as a value", first
    return f"duplicate key '{name}'", first
