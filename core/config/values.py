"""Structured knob values: buffering (``s=``/``p=``), pipeline flags (``P=``), subtiles (``S=``).

Each value class parses its oneDNN text form (errors as :class:`ConfigError`
with spans into that text), prints it back with ``str()``, and converts from
and to its ``[config]`` TOML form (a scalar or a table).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from .errors import ConfigError

MAX_BUFS = 3
MAX_GMEM_BUFS = 2
MAX_SYNC = 3
_AB = {"a": (True, False), "b": (False, True), "ab": (True, True), "ba": (True, True)}


def toml_int(value: Any, what: str, lo: int, hi: int | None = None) -> int:
    """``value`` as an int in ``[lo, hi]``; TOML booleans are not numbers here."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{what} must be an integer, got {value!r}")
    if value < lo or (hi is not None and value > hi):
        bound = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
        raise ConfigError(f"{what} must be {bound}, got {value}")
    return value


def _toml_table(value: Mapping, cls: type, what: str) -> dict[str, Any]:
    allowed = [f.name for f in fields(cls)]
    unknown = [k for k in value if k not in allowed]
    if unknown:
        raise ConfigError(f"unknown key '{unknown[0]}' in {what} (keys: {', '.join(allowed)})")
    return dict(value)


def _spans(text: str, sep: str) -> list[tuple[str, int]]:
    """``text`` split on ``sep`` with each piece's start offset."""
    out, pos = [], 0
    for piece in text.split(sep):
        out.append((piece, pos))
        pos += len(piece) + len(sep)
    return out


@dataclass(frozen=True)
class Buffering:
    """``bufs`` rotating buffers for the A and/or B tiles.

    Used by SLM buffering (``s=x3``: three SLM buffers, loads of the next
    iterations overlap compute) and prefetching (``p=x3``: prefetch three
    iterations ahead into cache). ``gmem`` (SLM only, ``s=x3.g2``) is the
    number of GRF buffers staging the global→SLM copy; 0 and 1 both stage
    through one buffer, 2 double-buffers it. ``.a`` / ``.b`` restrict the
    buffering to one tensor; without them both A and B are buffered.
    ``sync`` (SLM only, ``s=x3.v1``) is oneDNN's SLM synchronization scheme,
    -1 when not given; kdd reads it and places its own barriers.
    """

    bufs: int
    a: bool = True
    b: bool = True
    gmem: int = 0
    sync: int = -1

    def __post_init__(self):
        if not 0 <= self.bufs <= MAX_BUFS:
            raise ValueError(f"bufs must be 0..{MAX_BUFS}, got {self.bufs}")
        if not 0 <= self.gmem <= MAX_GMEM_BUFS:
            raise ValueError(f"gmem must be 0..{MAX_GMEM_BUFS}, got {self.gmem}")
        if not (self.a or self.b):
            raise ValueError("buffering must apply to A, B or both")
        if not -1 <= self.sync <= MAX_SYNC:
            raise ValueError(f"sync must be 0..{MAX_SYNC} (or -1: not given), got {self.sync}")

    @property
    def enabled(self) -> bool:
        return self.bufs > 0

    def applies_to(self, operand: str) -> bool:
        """Whether this buffering is on for operand ``operand`` ("A" or "B")."""
        return self.enabled and (self.a if operand == "A" else self.b)

    @staticmethod
    def parse(text: str, allow_gmem: bool) -> "Buffering":
        """Parse ``x3``, ``x3.g1``, ``x3.g0.v1``, ``x2.a`` (``g`` and ``v`` only when ``allow_gmem``)."""
        bufs = gmem = sync = None
        a = b = True
        for piece, start in _spans(text, "."):
            span = (start, start + max(1, len(piece)))
            if piece in _AB:
                a, b = _AB[piece]
                continue
            m = re.fullmatch(r"([xgv])(\d+)", piece)
            if not m or (m.group(1) in "gv" and not allow_gmem):
                expected = ("x<bufs>, g<gmem bufs>, v<sync version>, a, b or ab" if allow_gmem
                            else "x<bufs>, a, b or ab")
                raise ConfigError(f"unexpected '{piece}' in buffering '{text}' (expected {expected})", *span)
            value = int(m.group(2))
            if m.group(1) == "x":
                if bufs is not None or not 0 <= value <= MAX_BUFS:
                    raise ConfigError(f"'{piece}': give the buffer count once, 0..{MAX_BUFS}", *span)
                bufs = value
            elif m.group(1) == "v":
                if sync is not None or value > MAX_SYNC:
                    raise ConfigError(f"'{piece}': give the SLM sync version once, 0..{MAX_SYNC}", *span)
                sync = value
            else:
                if gmem is not None or value > MAX_GMEM_BUFS:
                    raise ConfigError(f"'{piece}': give the gmem buffer count once, 0..{MAX_GMEM_BUFS}", *span)
                gmem = value
        if bufs is None:
            raise ConfigError(f"buffering '{text}' needs a buffer count like 'x3'", 0, max(1, len(text)))
        return Buffering(bufs, a, b, gmem or 0, -1 if sync is None else sync)

    def __str__(self) -> str:
        text = f"x{self.bufs}"
        if self.gmem:
            text += f".g{self.gmem}"
        if self.sync >= 0:
            text += f".v{self.sync}"
        if self.a != self.b:
            text += ".a" if self.a else ".b"
        return text

    @staticmethod
    def from_toml(value: Any, allow_gmem: bool, what: str) -> "Buffering":
        """``3`` or ``{ bufs = 3, a = true, b = true, gmem = 1 }`` (missing keys take their defaults)."""
        if isinstance(value, Mapping):
            table = _toml_table(value, Buffering, what)
            for slm_only in ("gmem", "sync"):
                if slm_only in table and not allow_gmem:
                    raise ConfigError(f"'{slm_only}' applies to SLM buffering only, not to {what}")
            if "bufs" not in table:
                raise ConfigError(f"{what} needs 'bufs'")
            for flag in ("a", "b"):
                if not isinstance(table.get(flag, True), bool):
                    raise ConfigError(f"{what}.{flag} must be true or false, got {table[flag]!r}")
            if not (table.get("a", True) or table.get("b", True)):
                raise ConfigError(f"{what} must buffer A, B or both (a and b are both false)")
            return Buffering(toml_int(table["bufs"], f"{what}.bufs", 0, MAX_BUFS), table.get("a", True),
                             table.get("b", True), toml_int(table.get("gmem", 0), f"{what}.gmem", 0, MAX_GMEM_BUFS),
                             toml_int(table.get("sync", -1), f"{what}.sync", -1, MAX_SYNC))
        return Buffering(toml_int(value, what, 0, MAX_BUFS))

    def to_toml(self) -> Any:
        if self.a and self.b and not self.gmem and self.sync < 0:
            return self.bufs
        table = {"bufs": self.bufs, "a": self.a, "b": self.b}
        return table | ({"gmem": self.gmem} if self.gmem else {}) | ({"sync": self.sync} if self.sync >= 0 else {})


@dataclass(frozen=True)
class Pipeline:
    """General pipeline flags (``P=``): ``u`` unrolls the pipelined loop, ``r`` reuses
    message headers across iterations instead of keeping one per message."""

    unroll: bool = False
    reuse_headers: bool = False

    @staticmethod
    def parse(text: str) -> "Pipeline":
        """Parse a string of flags ``u`` and ``r`` (empty means neither)."""
        for i, ch in enumerate(text):
            if ch not in "ur" or ch in text[:i]:
                why = "repeated" if ch in text[:i] else "unknown"
                raise ConfigError(f"{why} pipeline flag '{ch}' in '{text}' (flags: u = unroll, "
                                  f"r = reuse headers)", i, i + 1)
        return Pipeline("u" in text, "r" in text)

    def __str__(self) -> str:
        return ("u" if self.unroll else "") + ("r" if self.reuse_headers else "")

    @staticmethod
    def from_toml(value: Any, what: str) -> "Pipeline":
        """``"ur"`` or ``{ unroll = true, reuse_headers = false }``."""
        if isinstance(value, str):
            return Pipeline.parse(value)
        if isinstance(value, Mapping):
            table = _toml_table(value, Pipeline, what)
            for k, v in table.items():
                if not isinstance(v, bool):
                    raise ConfigError(f"{what}.{k} must be true or false, got {v!r}")
            return Pipeline(**table)
        raise ConfigError(f"{what} must be a string of flags like \"ur\" or a table, got {value!r}")

    def to_toml(self) -> Any:
        return str(self)


@dataclass(frozen=True)
class Subtiles:
    """Sub-iteration blocking (``S=``): the per-thread multiplication is split into ``a``
    A-subtiles (each loaded and multiplied in turn against one B) or ``b`` B-subtiles,
    so only one subtile's buffer is live. Splitting both at once is not supported."""

    a: int = 1
    b: int = 1

    def __post_init__(self):
        if self.a < 1 or self.b < 1:
            raise ValueError(f"subtiles must be >= 1, got a={self.a} b={self.b}")

    @staticmethod
    def parse(text: str) -> "Subtiles":
        """Parse ``a2``, ``b4``, ``a2b1``; a bare number (``2``) splits B, the usual case."""
        if re.fullmatch(r"\d+", text):
            return Subtiles(b=Subtiles._count(text, text, 0))
        values: dict[str, int] = {}
        pos = 0
        for m in re.finditer(r"([ab])(\d+)|.", text):
            if m.start() != pos or not m.group(1):
                raise ConfigError(f"unexpected '{m.group()}' in subtiles '{text}' (write a<N>, b<N> or both)",
                                  m.start(), m.end())
            if m.group(1) in values:
                raise ConfigError(f"'{m.group(1)}' given twice in subtiles '{text}'", m.start(), m.end())
            values[m.group(1)] = Subtiles._count(m.group(2), text, m.start(2))
            pos = m.end()
        if not values:
            raise ConfigError("empty subtiles: write a<N>, b<N> or both, like 'b2'", 0, 0)
        return Subtiles(**values)

    @staticmethod
    def _count(digits: str, text: str, start: int) -> int:
        if int(digits) < 1:
            raise ConfigError(f"subtile count must be at least 1 in '{text}'", start, start + len(digits))
        return int(digits)

    def __str__(self) -> str:
        return f"a{self.a}b{self.b}"

    @staticmethod
    def from_toml(value: Any, what: str) -> "Subtiles":
        """``"a2b1"``, ``2`` (B subtiles) or ``{ a = 1, b = 2 }``."""
        if isinstance(value, str):
            return Subtiles.parse(value)
        if isinstance(value, Mapping):
            table = _toml_table(value, Subtiles, what)
            return Subtiles(**{k: toml_int(v, f"{what}.{k}", 1) for k, v in table.items()})
        return Subtiles(b=toml_int(value, what, 1))

    def to_toml(self) -> Any:
        return str(self)


@dataclass(frozen=True)
class WalkOrder:
    """oneDNN's kernel-grid walk order (``walk-order=oc4ow2,mb8,``): per grid axis X, Y, Z, the
    blocks ``(dim, size)`` its thread-group index walks, innermost first.

    kdd reads and prints it; its own grid walk (N dims on X, M on Y, B and K
    on Z, each axis last dim fastest) does not change with it. The empty
    walk order, written ``x``, is kdd's own.
    """

    axes: tuple[tuple[tuple[str, int], ...], ...] = ((), (), ())

    def __post_init__(self):
        if len(self.axes) != 3:
            raise ValueError(f"a walk order has 3 axes, got {len(self.axes)}")

    @property
    def is_empty(self) -> bool:
        return not any(self.axes)

    @staticmethod
    def parse(text: str) -> "WalkOrder":
        """Parse up to three comma-separated axes of ``<dim><size>`` blocks; ``x`` is the empty order."""
        if text == "x":
            return WalkOrder()
        parts = _spans(text, ",")
        if len(parts) > 3:
            start = parts[3][1] - 1
            raise ConfigError(f"walk order '{text}' has {len(parts)} axes; the grid has 3 (X,Y,Z)", start,
                              start + 1)
        axes = []
        for piece, start in parts:
            blocks, pos = [], 0
            for m in re.finditer(r"([a-z]+)(\d+)|.", piece):
                if m.start() != pos or not m.group(1) or int(m.group(2)) < 1:
                    raise ConfigError(f"unexpected '{m.group()}' in walk order '{text}' (write blocks like oc4ow2, "
                                      f"axes separated by commas)", start + m.start(), start + m.end())
                blocks.append((m.group(1), int(m.group(2))))
                pos = m.end()
            axes.append(tuple(blocks))
        return WalkOrder(tuple(axes) + ((),) * (3 - len(axes)))

    def __str__(self) -> str:
        if self.is_empty:
            return "x"
        return ",".join("".join(f"{d}{n}" for d, n in axis) for axis in self.axes)
