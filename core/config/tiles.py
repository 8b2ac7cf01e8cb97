"""Tiles: dimension name → block size, written as oneDNN writes them (``mb32oc32ic16``).

A tile names problem dimensions (``g mb ic oc id ih iw od oh ow kd kh kw`` for
convolutions, ``m n k b0 b1..`` for GEMM) with a positive size each. A
dimension a tile does not name has size 1, so ``oc4ow4`` and ``ow4oc4oc1``
are the same tile (equality and hashing ignore order and size-1 entries);
the written order is kept for printing.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from math import prod

from .errors import ConfigError

_NAME = re.compile(r"[a-z]+")
_SIZE = re.compile(r"\d+")
# oneDNN's spelling of the empty tile in a config line (``T=x``: one thread per group).
EMPTY = "x"


@dataclass(frozen=True, eq=False)
class Tile:
    """An ordered ``(dim, size)`` tuple with no repeated dim and sizes >= 1."""

    items: tuple[tuple[str, int], ...] = ()

    def __post_init__(self):
        sizes: dict[str, int] = {}
        for name, size in self.items:
            if not name or not isinstance(size, int) or isinstance(size, bool) or size < 1:
                raise ValueError(f"bad tile entry {name!r}={size!r}: names are non-empty, sizes >= 1")
            if name in sizes:
                raise ValueError(f"dimension '{name}' appears twice in a tile")
            sizes[name] = size
        # Lookups are hot in the defaults search; keep a dict beside the ordered items.
        object.__setattr__(self, "_sizes", sizes)

    @staticmethod
    def of(pairs: Mapping[str, int] | Iterable[tuple[str, int]]) -> "Tile":
        """A tile from a mapping or ``(dim, size)`` pairs."""
        items = pairs.items() if isinstance(pairs, Mapping) else pairs
        return Tile(tuple((str(d), s) for d, s in items))

    @staticmethod
    def parse(text: str, dims: Iterable[str] = ()) -> "Tile":
        """Parse ``mb32oc32ic16``; errors are :class:`ConfigError` with spans into ``text``.

        Names are lowercase letters; ``dims`` lists known names that contain
        digits (``b0``), which are matched first so ``b032`` reads ``b0=32``.
        The empty string and ``x`` (oneDNN's spelling) are the empty tile:
        nothing blocked at this level.
        """
        if text == EMPTY:
            return Tile()
        digit_names = sorted((d for d in dims if not _NAME.fullmatch(d)), key=len, reverse=True)
        items: list[tuple[str, int]] = []
        pos = 0
        while pos < len(text):
            name = next((d for d in digit_names if text.startswith(d, pos) and _SIZE.match(text, pos + len(d))),
                        None)
            if name is None:
                m = _NAME.match(text, pos)
                if not m:
                    bad = re.match(r".[^a-z]*", text[pos:]).group()
                    raise ConfigError(f"expected a dimension name at '{bad}' in tile '{text}'",
                                      pos, pos + len(bad))
                name = m.group()
            start = pos
            pos += len(name)
            m = _SIZE.match(text, pos)
            if not m:
                raise ConfigError(f"dimension '{name}' needs a size in tile '{text}' (like '{name}4')",
                                  start, pos)
            pos = m.end()
            size = int(m.group())
            if size < 1:
                raise ConfigError(f"size of '{name}' must be at least 1, got {m.group()}", start, pos)
            if any(name == seen for seen, _ in items):
                raise ConfigError(f"dimension '{name}' appears twice in tile '{text}'", start, pos)
            items.append((name, size))
        return Tile(tuple(items))

    def __str__(self) -> str:
        return "".join(f"{name}{size}" for name, size in self.items)

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __contains__(self, dim: object) -> bool:
        return dim in self._sizes

    def get(self, dim: str, default: int = 1) -> int:
        """Size of ``dim`` (``default``, 1 unless told, when the tile does not name it)."""
        return self._sizes.get(dim, default)

    def as_dict(self) -> dict[str, int]:
        """``{dim: size}`` of the entries with size > 1 (what the tile means)."""
        return {name: size for name, size in self._sizes.items() if size != 1}

    def product(self, dims: Iterable[str] | None = None) -> int:
        """Product of the sizes of ``dims`` (all named dims when ``None``)."""
        if dims is None:
            return prod(size for _, size in self.items)
        return prod(self.get(d) for d in dims)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tile) and self.as_dict() == other.as_dict()

    def __hash__(self) -> int:
        return hash(frozenset(self.as_dict().items()))
