"""Decoding of TOML scalar tokens into Python values.

tree-sitter-toml recognizes the shape of a token but does not decode it; these
functions turn the token text into the Python value. Strings also keep, for
every decoded character, the index in the document where its source starts, so
an error found inside a string value (a bad token in a shape string) can be
pointed at exactly, escapes and multi-line strings included.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import datetime as dt

SIMPLE_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\", "e": "\x1b"}
# Escapes of a fixed number of hex digits: \xHH (TOML 1.1), \uXXXX, \UXXXXXXXX.
HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


@dataclass(frozen=True)
class DecodedString:
    """A decoded string and the document index where each decoded character's source starts.

    ``starts`` has one entry more than ``value``: the index of the closing quote.
    """

    value: str
    starts: tuple[int, ...]


def decode_string(raw: str, offset: int) -> DecodedString:
    """Decode the string token ``raw`` (quotes included) that starts at document index ``offset``."""
    quote = raw[:3] if raw[:3] in ('"""', "'''") else raw[:1]
    body_end = len(raw) - len(quote) if len(raw) >= 2 * len(quote) and raw.endswith(quote) else len(raw)
    i = len(quote)
    if len(quote) == 3:
        # A newline right after the opening delimiter is not part of the value.
        if raw.startswith("\r\n", i):
            i += 2
        elif raw.startswith("\n", i):
            i += 1
    chars: list[str] = []
    starts: list[int] = []
    basic = quote[0] == '"'
    while i < body_end:
        ch = raw[i]
        if basic and ch == "\\" and i + 1 < body_end:
            step, text = _escape(raw, i, body_end, multiline=len(quote) == 3)
            if text:
                chars.append(text)
                starts.append(offset + i)
            i += step
            continue
        chars.append(ch)
        starts.append(offset + i)
        i += 1
    starts.append(offset + body_end)
    return DecodedString("".join(chars), tuple(starts))


def _escape(raw: str, i: int, end: int, multiline: bool) -> tuple[int, str]:
    """Decode the escape at ``raw[i]`` (a backslash): its source length and its text.

    An escape that is not valid TOML is kept verbatim (the syntax checker
    reports it), so decoding never fails.
    """
    code = raw[i + 1]
    if code in SIMPLE_ESCAPES:
        return 2, SIMPLE_ESCAPES[code]
    if code in HEX_ESCAPES:
        digits = raw[i + 2:i + 2 + HEX_ESCAPES[code]]
        if len(digits) == HEX_ESCAPES[code] and all(c in "0123456789abcdefABCDEF" for c in digits):
            point = int(digits, 16)
            if point <= 0x10FFFF and not 0xD800 <= point <= 0xDFFF:
                return 2 + len(digits), chr(point)
    if multiline:
        # A backslash ending a line swallows the line break and the indentation after it.
        j = i + 1
        while j < end and raw[j] in " \t":
            j += 1
        if j < end and raw[j] in "\r\n":
            while j < end and raw[j] in " \t\r\n":
                j += 1
            return j - i, ""
    return 1, "\\"


def parse_integer(text: str) -> int | None:
    """Value of a TOML integer token (decimal, 0x, 0o, 0b, with underscores), or None."""
    digits = text.replace("_", "")
    bases = {"0x": 16, "0o": 8, "0b": 2}
    try:
        if digits[:2] in bases:
            return int(digits[2:], bases[digits[:2]])
        return int(digits, 10)
    except ValueError:
        return None


def parse_float(text: str) -> float | None:
    """Value of a TOML float token (exponents, underscores, inf, nan), or None."""
    try:
        return float(text.replace("_", ""))
    except ValueError:
        return None


def parse_datetime(kind: str, text: str) -> dt.datetime | dt.date | dt.time | None:
    """Value of a TOML date/time token of tree-sitter ``kind``, or None when it is not a real date."""
    import datetime as dt  # here: a kernel config holds no dates, and the module costs start-up time

    normal = text.replace("t", "T").replace(" ", "T").replace("z", "Z")
    parsers = {
        "offset_date_time": dt.datetime.fromisoformat,
        "local_date_time": dt.datetime.fromisoformat,
        "local_date": dt.date.fromisoformat,
        "local_time": dt.time.fromisoformat,
    }
    try:
        return parsers[kind](normal)
    except (KeyError, ValueError):
        return None
