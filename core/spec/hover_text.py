"""Small markdown builders shared by the hover topics.

Hover text is GitHub-flavoured markdown as LSP clients render it: headings
are bold lines (editors draw ``#`` headings too large for a tooltip), tables
are pipe tables, and code is inline backticks or fenced ``text`` blocks.
"""
from __future__ import annotations

from typing import Iterable, Sequence


def code(text: object) -> str:
    """``text`` as inline code, with a longer fence when it contains backticks."""
    text = str(text)
    fence = "`"
    while fence in text:
        fence += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def cell(text: object) -> str:
    """``text`` made safe for one table cell (pipes escaped, lines joined)."""
    return str(text).replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A markdown pipe table."""
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def block(text: str) -> str:
    """``text`` in a fenced block (pictures and grids keep their alignment)."""
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}text\n{text}\n{fence}"


def section(title: str, *body: str) -> str:
    """A bold title line followed by the non-empty parts of ``body``, blank-line separated."""
    return "\n\n".join([f"**{title}**", *(b for b in body if b)])


def join(*parts: str | None) -> str:
    """The non-empty ``parts``, blank-line separated."""
    return "\n\n".join(p for p in parts if p)


_SI = (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))


def count(value: float, unit: str) -> str:
    """``value`` with an SI prefix: ``7.22 G`` + unit (exact below 10 000)."""
    if abs(value) < 10_000:
        return f"{value:g} {unit}"
    prefix, scale = next((p, s) for p, s in _SI if abs(value) >= s)
    return f"{value / scale:.3g} {prefix}{unit}"


def times(values: Iterable[int]) -> str:
    """``2 x 4 x 1``."""
    return " x ".join(map(str, values))
