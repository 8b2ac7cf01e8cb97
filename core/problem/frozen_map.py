"""An immutable, hashable string mapping (layout tags per tensor, batch-file options)."""
from __future__ import annotations

from collections.abc import Iterator, Mapping


class FrozenMap(Mapping):
    """A read-only ``Mapping`` that keeps insertion order and can be hashed.

    Equality is the mapping's (order-insensitive), like ``dict``; the hash agrees.
    """

    __slots__ = ("_items",)

    def __init__(self, items: Mapping | None = None, /, **kwargs):
        self._items = dict(items or {}, **kwargs)

    def __getitem__(self, key):
        return self._items[key]

    def __iter__(self) -> Iterator:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(frozenset(self._items.items()))

    def __eq__(self, other) -> bool:
        return isinstance(other, Mapping) and dict(self._items) == dict(other)

    def __repr__(self) -> str:
        return f"FrozenMap({self._items!r})"

    def updated(self, changes: Mapping) -> "FrozenMap":
        """A copy with ``changes`` applied."""
        return FrozenMap({**self._items, **changes})
