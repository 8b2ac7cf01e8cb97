"""A bounded in-memory memo of stage results, and the counts of what each stage really ran."""
from __future__ import annotations

from collections import Counter, OrderedDict
from typing import Any, Callable, Hashable


class Memo:
    """Least-recently-used results by key, at most ``size`` of them."""

    def __init__(self, size: int = 32):
        self.size = size
        self._items: OrderedDict[Hashable, Any] = OrderedDict()

    def get(self, key: Hashable, default: Any = None) -> Any:
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]
        return default

    def put(self, key: Hashable, value: Any) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def clear(self) -> None:
        self._items.clear()


class StageCounter(Counter):
    """How many times each stage ran (a memo or cache hit is not a run)."""

    def ran(self, stage: str) -> None:
        self[stage] += 1

    def snapshot(self) -> dict[str, int]:
        return dict(self)


def memoized(memo: Memo, key: Hashable, compute: Callable[[], Any]) -> Any:
    """``memo[key]``, computing and storing it first when absent."""
    missing = object()
    value = memo.get(key, missing)
    if value is missing:
        value = compute()
        memo.put(key, value)
    return value
