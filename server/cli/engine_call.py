"""How a CLI command reaches the engine: in-process, or a running daemon with ``--connect HOST:PORT``.

Both paths call the same JSON-RPC method with the same parameters and get
the same plain-data result, so the command prints the same thing.
"""
from __future__ import annotations

import os
from pathlib import Path


def add_connect_option(parser) -> None:
    parser.add_argument("--connect", metavar="HOST:PORT",
                        help="ask a running `kdd serve --tcp` daemon instead of compiling in this process "
                             "(token from $KDD_TOKEN when the daemon requires one)")


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
    from kdd.core.engine import Engine
    from kdd.server.rpc.methods import call as local_call

    return local_call(Engine(), method, params)
