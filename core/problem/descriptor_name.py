"""The trailing name of a benchdnn descriptor: ``n"resnet_50:conv1"`` or ``nNAME``.

benchdnn takes everything after ``n`` as the name, quotes included. kdd strips
the quotes when present, so ``n"x"`` and ``nx`` both name the problem ``x``, and
always prints the quoted form. A name therefore may not contain ``"``;
``n""`` means no name.
"""
from __future__ import annotations

from .errors import ProblemError


def parse_name(text: str, start: int) -> str | None:
    """Parse the name that starts with the ``n`` at ``text[start]`` and runs to the end."""
    body_start = start + 1
    body = text[body_start:]
    if body.startswith('"'):
        close = body.find('"', 1)
        if close < 0:
            raise ProblemError(f"unterminated name {text[start:]!r}: missing closing '\"'", start, len(text))
        after = body_start + close + 1
        if after != len(text):
            raise ProblemError(f"unexpected {text[after:]!r} after the name {text[start:after]!r}",
                               after, len(text))
        name = body[1:close]
    else:
        if not body:
            raise ProblemError("'n' must be followed by a name, e.g. n\"layer1\"", start, start + 1)
        if '"' in body:
            quote = body_start + body.index('"')
            raise ProblemError(f"name {body!r} contains '\"'; quote the whole name: n\"...\"",
                               quote, quote + 1)
        name = body
    return name or None


def format_name(name: str | None) -> str:
    """The canonical name suffix (empty when unnamed)."""
    return f'n"{name}"' if name else ""
