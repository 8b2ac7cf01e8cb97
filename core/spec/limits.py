"""Bounds on what the document reader accepts, so no text can make it slow or deep.

A kernel config is a few hundred bytes; an editor re-reads it on every
keystroke. Text over :data:`MAX_DOCUMENT_CHARS` is refused whole with one
diagnostic (reading stays linear and bounded), and arrays or inline tables
nested deeper than :data:`MAX_NESTING` are refused at the bracket that goes too
deep, so every later stage (schema, hover, merging) walks a shallow tree.
Parents named by ``extends`` are held to the same size and must be regular
files.
"""
from __future__ import annotations

MAX_DOCUMENT_CHARS = 1 << 15  # 32 Ki characters: over a hundred times the largest shipped example
MAX_NESTING = 32


def too_large_message(size: int) -> str:
    """The diagnostic for a document of ``size`` characters over the cap."""
    return (f"the document has {size} characters; kernel configs are limited to {MAX_DOCUMENT_CHARS} "
            "(nothing was read)")


NESTING_MESSAGE = f"arrays and inline tables nest at most {MAX_NESTING} deep"
