"""Versions that every cache key includes, so a changed generator or tool never serves stale results.

The generator version is a digest of the source of ``kdd.core`` itself: any
change to the generator's code changes every key, with nothing to remember
to bump.
"""
from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=1)
def generator_version() -> str:
    """A digest of every Python source file of ``kdd.core`` (names and contents)."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]
