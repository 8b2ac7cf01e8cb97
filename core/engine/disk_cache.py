"""The on-disk cache: content-addressed msgpack files under the user cache directory.

An entry is written to a temporary file and renamed into place, so readers
never see half an entry. An entry that cannot be decoded, or that names
another key, is treated as missing (and rewritten by the next ``put``):
a damaged cache costs a recompile, never a failure. The cache is bounded
by total size; ``put`` evicts the least recently used entries (reads touch
an entry's modification time) when the bound is passed.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import msgpack

FORMAT = 1
DEFAULT_MAX_BYTES = 512 * 2**20


def default_cache_dir() -> Path:
    """``$KDD_CACHE_DIR``, else ``$XDG_CACHE_HOME/kdd``, else ``~/.cache/kdd``."""
    if os.environ.get("KDD_CACHE_DIR"):
        return Path(os.environ["KDD_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "kdd"


class DiskCache:
    """Plain data (what msgpack can hold) stored by content key."""

    def __init__(self, root: Path | str | None = None, max_bytes: int = DEFAULT_MAX_BYTES):
        self.root = Path(root) if root is not None else default_cache_dir()
        self.max_bytes = max_bytes
        self.hits = self.misses = self.writes = self.evictions = 0

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.msgpack"

    def get(self, key: str) -> Any | None:
        """The value stored under ``key``, or None (absent, truncated, corrupted or unreadable)."""
        path = self._path(key)
        try:
            entry = msgpack.unpackb(path.read_bytes(), raw=False, strict_map_key=False)
            if not (isinstance(entry, dict) and entry.get("format") == FORMAT and entry.get("key") == key):
                raise ValueError("not an entry of this cache")
            os.utime(path)
        except Exception:  # noqa: BLE001 - any damage to an entry means "not cached"
            self.misses += 1
            return None
        self.hits += 1
        return entry["value"]

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` atomically; a cache that cannot be written is silently skipped."""
        path = self._path(key)
        try:
            data = msgpack.packb({"format": FORMAT, "key": key, "value": value}, use_bin_type=True)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except (OSError, TypeError, ValueError):
            return
        self.writes += 1
        self._evict()

    def _evict(self) -> None:
        entries = []
        for path in self.root.glob("*/*.msgpack"):
            try:
                st = path.stat()
            except OSError:
                continue
            entries.append((st.st_mtime, st.st_size, path))
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries, key=lambda e: e[0]):
            if total <= self.max_bytes:
                break
            path.unlink(missing_ok=True)
            total -= size
            self.evictions += 1

    def stats(self) -> dict:
        return {"hits": self.hits, "misses": self.misses, "writes": self.writes, "evictions": self.evictions}
