"""C++ template-argument lists as portBLAS's backend headers write them, with the span of every argument.

``64, false, Tile<8, 8, 8, 8>, _t_a, static_cast<int>(gemm_memory_t::no_local)`` reads as five
arguments: an integer, a boolean, a ``Tile<...>`` (whose own arguments are read alike), a name the
dispatcher binds, and an enumerator. Nothing is evaluated here: :mod:`.launcher` gives each
position its meaning. Offsets are into the text given, end exclusive, so a diagnostic can underline
the argument it is about.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from kdd.core.config.errors import ConfigError

_NAME = r"[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*"
_INT = re.compile(r"[+-]?\d+\Z")
_ENUM = re.compile(r"(?:static_cast\s*<\s*int\s*>\s*\(\s*)?(?P<type>[A-Za-z_]\w*)\s*::\s*(?P<member>[A-Za-z_]\w*)"
                   r"\s*(?P<close>\)?)\Z")
_TEMPLATE = re.compile(rf"(?P<name>{_NAME})\s*<(?P<args>.*)>\Z", re.S)
_IDENT = re.compile(rf"{_NAME}\Z")


@dataclass(frozen=True)
class Arg:
    """One template argument: its text, span and what it is.

    ``kind``: ``int`` (``value`` an int), ``bool``, ``enum`` (``value`` the pair type, member),
    ``name`` (an identifier or a type name: ``value`` the text), ``template`` (``value`` the template's
    name, ``args`` its arguments).
    """

    text: str
    start: int
    end: int
    kind: str
    value: object
    args: tuple["Arg", ...] = ()


def split_args(text: str, offset: int = 0) -> list[tuple[str, int, int]]:
    """``text`` cut at its top-level commas: each piece stripped, with its span (shifted by ``offset``)."""
    pieces, start = [], 0
    closers = {"<": ">", "(": ")", "[": "]"}
    stack: list[tuple[str, int]] = []           # (the closer wanted, where its opener is)
    for i, ch in enumerate(text + ","):
        if i < len(text) and ch in closers:
            stack.append((ch, i))
        elif i < len(text) and ch in ">)]":
            if not stack or closers[stack[-1][0]] != ch:
                raise ConfigError(f"unbalanced '{ch}'", offset + i, offset + i + 1)
            stack.pop()
        elif ch == "," and not stack:
            raw = text[start:i]
            lead = len(raw) - len(raw.lstrip())
            piece = raw.strip()
            pieces.append((piece, offset + start + lead, offset + start + lead + len(piece)))
            start = i + 1
    if stack:
        opener, at = stack[-1]
        raise ConfigError(f"'{opener}' is never closed", offset + at, offset + at + 1)
    return pieces


def parse_arg(text: str, start: int) -> Arg:
    """One argument's meaning (see :class:`Arg`); an empty one is an error."""
    end = start + len(text)
    if not text:
        raise ConfigError("empty template argument", start, max(end, start + 1))
    if text in ("true", "false"):
        return Arg(text, start, end, "bool", text == "true")
    if _INT.match(text):
        return Arg(text, start, end, "int", int(text))
    m = _ENUM.match(text)
    if m and (m.group("close") == ")") == text.startswith("static_cast"):
        return Arg(text, start, end, "enum", (m.group("type"), m.group("member")))
    m = _TEMPLATE.match(text)
    if m and not text.startswith("static_cast"):
        inner = m.start("args")
        args = tuple(parse_arg(t, s) for t, s, _ in split_args(m.group("args"), start + inner))
        return Arg(text, start, end, "template", re.sub(r"\s+", "", m.group("name")), args)
    if _IDENT.match(text):
        return Arg(text, start, end, "name", re.sub(r"\s+", "", text))
    raise ConfigError(f"'{text}' is not a template argument kdd reads (an integer, true/false, a name, "
                      f"static_cast<int>(enum_t::member) or Template<...>)", start, end)


def parse_args(text: str) -> list[Arg]:
    """Every top-level argument of ``text``; a surrounding ``Gemm_Launcher<...>`` (or ``blas::``) is allowed."""
    m = re.match(r"\s*(?:blas\s*::\s*)?Gemm_Launcher\s*<", text)
    if m:
        close = text.rstrip()
        if not close.endswith(">"):
            raise ConfigError("Gemm_Launcher< needs its closing '>'", len(close) - 1 if close else 0, len(close))
        body, offset = text[m.end():len(close) - 1], m.end()
    else:
        body, offset = text, 0
    if not body.strip():
        raise ConfigError("no template arguments", 0, max(len(text), 1))
    return [parse_arg(t, s) for t, s, _ in split_args(body, offset)]
