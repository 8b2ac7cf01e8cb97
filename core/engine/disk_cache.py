"""The on-disk cache: content-addressed msgpack files under the user cache directory, that cannot lie.

An entry is written to a temporary file and renamed into place, so readers
never see half an entry. Every entry carries its key and a SHA-256 digest of
its key and value; a read opens regular files only (never following a link,
never waiting on a pipe), of bounded size, and returns the value only when
key and digest match. Anything else is discarded (deleted) and reported as
missing, so the caller recomputes it and the next ``put`` rewrites it: a
damaged or planted entry costs a recompile, never a failure or a wrong
answer. The directory is created with mode 0700 and used only when it
belongs to this user and no one else can write to it, since whoever can
write entries could otherwise write a digest too.

Entries are sharded by a hash of their key (256 directories). ``put`` costs
O(1): the cache keeps a running estimate of its size and scans the
directories only when the estimate passes the bound, then evicts the least
recently used entries (reads touch an entry's modification time) down to
:data:`LOW_WATER` of the bound, so each scan is paid for by that many bytes
of writes.
"""
from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Any


FORMAT = 2
DEFAULT_MAX_BYTES = 512 * 2**20
LOW_WATER = 0.8
SUFFIX = ".msgpack"


def default_cache_dir() -> Path:
    """``$KDD_CACHE_DIR``, else ``$XDG_CACHE_HOME/kdd``, else ``~/.cache/kdd``."""
    if os.environ.get("KDD_CACHE_DIR"):
        return Path(os.environ["KDD_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "kdd"


def value_digest(key: str, packed_value: bytes) -> str:
    """The digest an entry carries: of its key and its msgpack-encoded value."""
    return hashlib.sha256(key.encode() + b"\0" + packed_value).hexdigest()


def _untrusted(root: Path) -> str | None:
    """Why the cache directory ``root`` cannot be trusted (None: it can): it must be a real directory of
    this user that no one else can write to."""
    try:
        st = os.lstat(root)
    except OSError as exc:
        return f"cannot use {root}: {exc.strerror}"
    if not stat.S_ISDIR(st.st_mode):
        return f"{root} is not a directory"
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return f"{root} belongs to another user"
    if st.st_mode & 0o022:
        return f"others can write to {root}"
    return None


class DiskCache:
    """Plain data (what msgpack can hold) stored by content key."""

    def __init__(self, root: Path | str | None = None, max_bytes: int = DEFAULT_MAX_BYTES):
        self.root = Path(root) if root is not None else default_cache_dir()
        self.max_bytes = max_bytes
        self.hits = self.misses = self.writes = self.evictions = self.discarded = self.scans = 0
        self._estimate: int | None = None  # bytes in the cache, as far as this process knows
        try:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError:
            pass
        self.unusable = _untrusted(self.root)

    def _path(self, key: str) -> Path:
        name = hashlib.sha256(key.encode()).hexdigest()
        return self.root / name[:2] / f"{name}{SUFFIX}"

    def get(self, key: str) -> Any | None:
        """The value stored under ``key``, or None (absent, damaged, planted, or not a regular file)."""
        if self.unusable:
            return None
        path = self._path(key)
        try:
            data = self._read(path)
        except FileNotFoundError:
            self.misses += 1
            return None
        except OSError:
            data = None
        value = self._verified(key, data) if data is not None else None
        if value is None:
            self.misses += 1
            self.discarded += 1
            _remove(path)
            return None
        try:
            os.utime(path)
        except OSError:
            pass
        self.hits += 1
        return value[0]

    def _read(self, path: Path) -> bytes | None:
        """The bytes of a regular file of at most ``max_bytes``; None for anything else."""
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_size > self.max_bytes:
                return None
            return f.read(self.max_bytes + 1)

    @staticmethod
    def _verified(key: str, data: bytes) -> tuple[Any] | None:
        """``(value,)`` when ``data`` is an entry of this format for ``key`` whose digest matches."""
        import msgpack  # here, not at start-up: a compile without the cache never reads an entry

        try:
            entry = msgpack.unpackb(data, raw=False, strict_map_key=False)
        except Exception:  # noqa: BLE001 - any undecodable entry is simply not an entry
            return None
        if not (isinstance(entry, dict) and entry.get("format") == FORMAT and entry.get("key") == key
                and isinstance(entry.get("value"), bytes) and isinstance(entry.get("digest"), str)):
            return None
        if entry["digest"] != value_digest(key, entry["value"]):
            return None
        try:
            return (msgpack.unpackb(entry["value"], raw=False, strict_map_key=False),)
        except Exception:  # noqa: BLE001
            return None

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` atomically; a cache that cannot be written is silently skipped."""
        if self.unusable:
            return
        import msgpack

        path = self._path(key)
        try:
            packed = msgpack.packb(value, use_bin_type=True)
            data = msgpack.packb({"format": FORMAT, "key": key, "digest": value_digest(key, packed),
                                  "value": packed}, use_bin_type=True)
            path.parent.mkdir(mode=0o700, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except (OSError, TypeError, ValueError, OverflowError):
            return
        self.writes += 1
        if self._estimate is not None:
            self._estimate += len(data)
        if self._estimate is None or self._estimate > self.max_bytes:
            self._evict()

    def _evict(self) -> None:
        """Scan the cache; past the bound, remove the least recently used entries down to the low water."""
        self.scans += 1
        entries = []
        for path in self.root.glob(f"*/*{SUFFIX}"):
            try:
                st = path.lstat()
            except OSError:
                continue
            entries.append((st.st_mtime, st.st_size, path))
        total = sum(size for _, size, _ in entries)
        if total > self.max_bytes:
            for _, size, path in sorted(entries, key=lambda e: e[0]):
                if total <= LOW_WATER * self.max_bytes:
                    break
                _remove(path)
                total -= size
                self.evictions += 1
        self._estimate = total

    def stats(self) -> dict:
        out = {"hits": self.hits, "misses": self.misses, "writes": self.writes, "evictions": self.evictions,
               "discarded": self.discarded}
        if self.unusable:
            out["unusable"] = self.unusable
        return out


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
