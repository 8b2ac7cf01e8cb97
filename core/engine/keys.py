"""Content keys: a stable digest of exactly what a stage reads.

Stage inputs are frozen dataclasses whose ``repr`` is deterministic (no
addresses, ordered fields), so the digest of their ``repr`` names their
content across processes, which is what the on-disk cache needs.
"""
from __future__ import annotations

import hashlib

from .versions import generator_version


def content_key(stage: str, *parts: object) -> str:
    """The key of ``stage`` run on ``parts``, including the generator version."""
    digest = hashlib.sha256(f"{stage}\0{generator_version()}".encode())
    for part in parts:
        digest.update(b"\0")
        digest.update(part.encode() if isinstance(part, str) else repr(part).encode())
    return digest.hexdigest()
