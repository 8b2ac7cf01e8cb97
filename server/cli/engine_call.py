"""How a CLI command reaches the engine: in-process, or a running daemon with ``--connect HOST:PORT``.

Both paths call the same JSON-RPC method with the same parameters and get
the same plain-data result, so the command prints the same thing.

In-process, the engine reads and writes the on-disk cache the daemons use
(``$KDD_CACHE_DIR``, else the user cache directory; ``--no-cache`` skips
it), and a reply already computed for the same config, parameters, tools and
generator is answered from that cache before the compiler is even loaded
(:mod:`kdd.server.rpc.disk_replies`): a repeated ``kdd compile`` costs the
interpreter's start-up and one read.
"""
from __future__ import annotations

import os
from pathlib import Path


def add_engine_options(parser) -> None:
    parser.add_argument("--connect", metavar="HOST:PORT",
                        help="ask a running `kdd serve --tcp` daemon instead of compiling in this process "
                             "(token from $KDD_TOKEN when the daemon requires one)")
    parser.add_argument("--no-cache", action="store_true",
                        help="compile from scratch, without reading or writing the on-disk cache the daemons "
                             "share ($KDD_CACHE_DIR, else ~/.cache/kdd), which otherwise answers an unchanged "
                             "config at once")


def call(args, method: str, params: dict):
    """The result of ``method``; the file's text is sent along so a daemon sees what this process sees."""
    if getattr(args, "connect", None):
        from kdd.server.rpc.client import Client

        params = dict(params)
        try:
            params["text"] = Path(params["path"]).read_text(encoding="utf-8")
            params["path"] = os.path.abspath(params["path"])
        except (OSError, UnicodeDecodeError):
            pass  # the daemon reads it and reports why it cannot
        with Client(args.connect, token=os.environ.get("KDD_TOKEN")) as client:
            return client.call(method, params)
    disk = request = None
    if not getattr(args, "no_cache", False):
        from kdd.core.engine.disk_cache import DiskCache
        from kdd.server.rpc import disk_replies

        disk = DiskCache()
        request = disk_replies.request(method, params)
        if request is not None:
            hit = disk_replies.get(disk, request)
            if hit is not None:
                return hit
            params = dict(params, text=request.text)  # compile exactly the text the key names
    from kdd.core.engine import Engine, Source
    from kdd.server.rpc.methods import call as local_call

    engine = Engine(disk=disk)
    result = local_call(engine, method, params)
    if request is not None:
        disk_replies.put(disk, request, result, engine.parse(Source(request.text, request.path)).depends_on)
    return result
