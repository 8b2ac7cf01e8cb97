"""Source positions as the Language Server Protocol counts them.

A :class:`Position` is a 0-based line and a 0-based character offset counted in
UTF-16 code units, which is what LSP clients send and expect by default. Lines
end at ``\\n``, ``\\r\\n`` or a lone ``\\r`` (the LSP definition).

tree-sitter reports UTF-8 byte offsets and the hand-written scanners in this
package work on Python string indices (code points), so :class:`LineIndex`
converts between all three for one text.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from functools import cached_property

# Lone surrogates can reach us from an editor buffer; they must survive encoding.
ENCODING_ERRORS = "surrogatepass"


@dataclass(frozen=True, order=True)
class Position:
    """A 0-based ``line`` and UTF-16 ``character`` offset within that line."""

    line: int
    character: int

    def __str__(self) -> str:
        return f"{self.line + 1}:{self.character + 1}"


@dataclass(frozen=True)
class Range:
    """A half-open span ``[start, end)`` of a document."""

    start: Position
    end: Position

    def __post_init__(self):
        # Compared as plain tuples: the dataclass ordering is several times slower, and documents make many ranges.
        if (self.end.line, self.end.character) < (self.start.line, self.start.character):
            raise ValueError(f"range end {self.end} is before its start {self.start}")

    def contains(self, pos: Position) -> bool:
        """True when ``pos`` lies in the range; the end counts (a cursor right after a token is on it)."""
        return self.start <= pos <= self.end

    def covers(self, other: "Range") -> bool:
        """True when ``other`` lies entirely inside this range."""
        return self.start <= other.start and other.end <= self.end

    def __str__(self) -> str:
        return f"{self.start}-{self.end}"


def utf16_len(text: str) -> int:
    """Number of UTF-16 code units needed for ``text``."""
    return len(text.encode("utf-16-le", ENCODING_ERRORS)) // 2


@dataclass(frozen=True)
class LineIndex:
    """Converts string indices and UTF-8 byte offsets of one text into :class:`Position`."""

    text: str

    @cached_property
    def line_starts(self) -> tuple[int, ...]:
        """String index where each line starts."""
        starts = [0]
        text, i, n = self.text, 0, len(self.text)
        while i < n:
            ch = text[i]
            if ch == "\r" and i + 1 < n and text[i + 1] == "\n":
                i += 1
            if ch in "\r\n":
                starts.append(i + 1)
            i += 1
        return tuple(starts)

    @cached_property
    def byte_starts(self) -> tuple[int, ...]:
        """UTF-8 byte offset of every string index (one extra entry for the end)."""
        offsets, total = [0], 0
        for ch in self.text:
            total += len(ch.encode("utf-8", ENCODING_ERRORS))
            offsets.append(total)
        return tuple(offsets)

    def encoded(self) -> bytes:
        """The text as the UTF-8 bytes that tree-sitter parses."""
        return self.text.encode("utf-8", ENCODING_ERRORS)

    def index_of_byte(self, offset: int) -> int:
        """String index of the character that contains UTF-8 byte ``offset``."""
        return max(0, bisect.bisect_right(self.byte_starts, offset) - 1)

    @cached_property
    def utf16_starts(self) -> tuple[int, ...] | None:
        """UTF-16 code units before every string index (one extra entry for the end); None for ASCII text,
        where units and indices agree. Positions come from it in constant time, so reading a document stays
        linear even when it is one long line."""
        if self.text.isascii():
            return None
        offsets, total = [0], 0
        for ch in self.text:
            total += 2 if ord(ch) > 0xFFFF else 1
            offsets.append(total)
        return tuple(offsets)

    def position(self, index: int) -> Position:
        """Position of string index ``index`` (clamped to the text)."""
        index = min(max(index, 0), len(self.text))
        line = bisect.bisect_right(self.line_starts, index) - 1
        start = self.line_starts[line]
        units = self.utf16_starts
        return Position(line, index - start if units is None else units[index] - units[start])

    def range(self, start: int, end: int) -> Range:
        """Range of the string slice ``text[start:end]``."""
        return Range(self.position(start), self.position(max(start, end)))

    def byte_range(self, start: int, end: int) -> Range:
        """Range of the UTF-8 byte slice ``[start, end)``."""
        return self.range(self.index_of_byte(start), self.index_of_byte(end))

    def index(self, pos: Position) -> int:
        """String index of ``pos``; a character past the line's end clamps to the end of that line."""
        if pos.line < 0:
            return 0
        if pos.line >= len(self.line_starts):
            return len(self.text)
        i = self.line_starts[pos.line]
        line_end = self.line_starts[pos.line + 1] if pos.line + 1 < len(self.line_starts) else len(self.text)
        units = 0
        while i < line_end and units < pos.character and self.text[i] not in "\r\n":
            units += 2 if ord(self.text[i]) > 0xFFFF else 1
            i += 1
        return i

    @property
    def end(self) -> Position:
        """Position just past the last character."""
        return self.position(len(self.text))
