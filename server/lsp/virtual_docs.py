"""Read-only virtual documents under the ``kdd:`` URI scheme, readable by any client through ``kdd/content``.

``kdd:/ir/PASS?URI`` is the IR after PASS (``build``, a pass, ``final``) of
the config at URI, ``kdd:/diff/PASS?URI`` what PASS changed, and
``kdd:/asm?URI`` its assembly.
"""
from __future__ import annotations

from urllib.parse import quote, unquote, urlsplit

SCHEME = "kdd"


def ir_uri(doc_uri: str, pass_name: str, diff: bool = False) -> str:
    return f"{SCHEME}:/{'diff' if diff else 'ir'}/{pass_name}?{quote(doc_uri, safe='')}"


def asm_uri(doc_uri: str) -> str:
    return f"{SCHEME}:/asm?{quote(doc_uri, safe='')}"


def parse(uri: str) -> tuple[str, str | None, str]:
    """``(kind, pass or None, document uri)`` of a virtual URI; ValueError when it is not one."""
    parts = urlsplit(uri)
    if parts.scheme != SCHEME or not parts.query:
        raise ValueError(f"not a kdd: virtual document URI: {uri!r}")
    segments = [s for s in parts.path.split("/") if s]
    if segments[:1] == ["asm"] and len(segments) == 1:
        return "asm", None, unquote(parts.query)
    if segments[:1] in (["ir"], ["diff"]) and len(segments) == 2:
        return segments[0], segments[1], unquote(parts.query)
    raise ValueError(f"unknown kdd: document {parts.path!r} (kdd:/ir/PASS, kdd:/diff/PASS, kdd:/asm)")
