"""Replies of the engine's methods kept in the on-disk cache, so a repeated command answers without the compiler.

``kdd compile`` and ``kdd check`` run in a fresh process each time; loading
the compiler alone costs more than answering from disk. So the command line
looks a reply up by a key known before anything is parsed, and stores the
reply it computed under that key (:mod:`kdd.server.cli.engine_call`).

The key names what the reply depends on: the method and its parameters, the
config's text and path, the generator version (``kdd.core``'s source), this
module's and the methods' source, and the stamps of the tools that make
listings (:mod:`kdd.core.toolchain`, with ``PATH`` and the interpreter that
find them). What only the parse knows, the files ``extends`` read, is stored
with the reply as (path, digest of the text) pairs and read again on every
lookup: a changed or unreadable parent is a miss. Only answers are stored,
not failures, and only of methods that may be served again
(:func:`~kdd.server.rpc.methods.cacheable`: never a device run or a
measurement), and never a check's verdict (:data:`VERIFIED_BY_THE_ENGINE`).
"""
from __future__ import annotations

import hashlib
import os
import sys
from functools import lru_cache
from pathlib import Path

from kdd.core.engine.keys import content_key
from kdd.core.spec.files import read_file
from kdd.core.toolchain import stamps

from .methods import RpcError, cacheable, validate


@lru_cache(maxsize=1)
def _server_version() -> str:
    """A digest of the code between the engine and a reply: the methods and this module."""
    digest = hashlib.sha256()
    for name in ("methods.py", "disk_replies.py"):
        digest.update((Path(__file__).parent / name).read_bytes())
    return digest.hexdigest()[:16]


def text_digest(text: str) -> str:
    """What a dependency's text is compared by (the engine's parse records the same digest)."""
    return hashlib.sha256(text.encode()).hexdigest()


# A check's verdict is served from disk only by the engine, which rebuilds the kernel and serves it only for
# the very code or IR it judged: a reply stored here under a computable key could be planted, and a planted
# "ok" would pass a wrong kernel (docs/daemon.md). A repeated check still skips the simulation.
VERIFIED_BY_THE_ENGINE = frozenset({"kdd/check"})


class Request:
    """A request that may be answered from disk: its key, and the config's text and path. (A plain class:
    this module is on the path of every repeated command, and ``dataclasses`` costs more to import.)"""

    __slots__ = ("key", "text", "path")

    def __init__(self, key: str, text: str, path: str | None):
        self.key, self.text, self.path = key, text, path


def request(method: str, params: dict) -> Request | None:
    """The cache request for ``method(params)``, or None when its reply may not be served again or the
    config cannot be read here (the engine then says why)."""
    try:
        p = validate(method, params)
    except RpcError:
        return None
    if not cacheable(method, p) or method in VERIFIED_BY_THE_ENGINE:
        return None
    text = p.get("text")
    if text is None:
        try:
            text = read_file(p["path"])
        except (OSError, UnicodeDecodeError, ValueError):
            return None
    rest = sorted((k, v if not isinstance(v, list) else tuple(v)) for k, v in p.items() if k != "text")
    key = content_key("reply", method, rest, text, _server_version(), stamps(), os.environ.get("PATH", ""),
                      sys.executable)
    return Request(key, text, p.get("path"))


def get(disk, req: Request):
    """The stored reply of ``req``, or None (absent, damaged, or a file ``extends`` read has changed)."""
    entry = disk.get(f"reply-{req.key}")
    if not (isinstance(entry, dict) and isinstance(entry.get("depends_on"), list) and "result" in entry):
        return None
    for dep in entry["depends_on"]:
        if not (isinstance(dep, list) and len(dep) == 2 and isinstance(dep[0], str)):
            return None
        try:
            if text_digest(read_file(dep[0])) != dep[1]:
                return None
        except (OSError, UnicodeDecodeError, ValueError):
            return None
    return entry["result"]


def put(disk, req: Request, result, depends_on: tuple[tuple[str, str], ...]) -> None:
    """Store ``result`` under ``req`` with the files the parse read (``Parsed.depends_on``). A failure is
    not stored: it may come from a file that could not be read (a missing parent), which the digests of
    the files that were read cannot tell."""
    if isinstance(result, dict) and "failure" in result:
        return
    disk.put(f"reply-{req.key}", {"depends_on": [list(d) for d in depends_on], "result": result})
