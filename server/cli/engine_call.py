"""How a CLI command reaches the engine: in-process, or a running daemon with ``--connect HOST:PORT``.

Both paths call the same JSON-RPC method with the same parameters and get
the same plain-data result, so the command prints the same thing. A daemon
that cannot be reached, or refuses the token, is exit status 2; one that
answers with something other than a result (or not within
``--connect-timeout``) is exit status 3; either is one line on stderr.

In-process, the engine reads and writes the on-disk cache the daemons use
(``$KDD_CACHE_DIR``, else the user cache directory; ``--no-cache`` skips
it), and a reply already computed for the same config, parameters, tools and
generator is answered from that cache before the compiler is even loaded
(:mod:`kdd.server.rpc.disk_replies`): a repeated ``kdd compile`` costs the
interpreter's start-up and one read.
"""
from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

UNREACHABLE, PROTOCOL = 2, 3


def add_engine_options(parser) -> None:
    parser.add_argument("--connect", metavar="HOST:PORT",
                        help="ask a running `kdd serve --tcp` daemon instead of compiling in this process "
                             "(its token from $KDD_TOKEN, else the file the daemon wrote)")
    parser.add_argument("--connect-timeout", type=float, default=300.0, metavar="SECONDS",
                        help="how long to wait for the daemon's answer (default 300)")
    parser.add_argument("--no-cache", action="store_true",
                        help="compile from scratch, without reading or writing the on-disk cache the daemons "
                             "share ($KDD_CACHE_DIR, else ~/.cache/kdd), which otherwise answers an unchanged "
                             "config at once")


def call(args, method: str, params: dict):
    """The result of ``method``; the file's text is sent along so a daemon sees what this process sees."""
    if getattr(args, "connect", None):
        params = dict(params)
        try:
            params["text"] = Path(params["path"]).read_text(encoding="utf-8")
            params["path"] = os.path.abspath(params["path"])
        except (OSError, UnicodeDecodeError):
            pass  # the daemon reads it and reports why it cannot
        return _remote(args, method, params)
    # One command in this process: the cyclic collector, which finds nothing among the modules, classes and
    # acyclic IR that loading the compiler and compiling make (the engine pauses it per stage already),
    # stays off throughout, loading included; whatever cycles the command left are collected after it.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _in_process(method, params, getattr(args, "no_cache", False))
    finally:
        if collecting:
            gc.enable()


def _in_process(method: str, params: dict, no_cache: bool):
    """The result of ``method`` from an engine in this process, over the on-disk cache unless ``no_cache``."""
    disk = request = None
    if not no_cache:
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


def _remote(args, method: str, params: dict):
    """``method`` answered by the daemon at ``args.connect``; exits 2 or 3 with one line when it is not."""
    from kdd.server.rpc import auth
    from kdd.server.rpc.client import Client, ProtocolError, parse_address
    from kdd.server.rpc.daemon import UNAUTHORIZED
    from kdd.server.rpc.methods import RpcError

    where = args.connect

    def fail(status: int, message: str):
        print(f"kdd {args.command}: error: {message}", file=sys.stderr)
        raise SystemExit(status)
    try:
        port = parse_address(where)[1]
    except ValueError as exc:
        fail(UNREACHABLE, f"--connect: {exc}")
    try:
        client = Client(where, token=os.environ.get("KDD_TOKEN"), timeout=min(10.0, args.connect_timeout))
    except OSError as exc:
        fail(UNREACHABLE, f"cannot reach the daemon at {where}: {exc.strerror or str(exc) or type(exc).__name__}")
    with client:
        client.sock.settimeout(args.connect_timeout)
        try:
            return client.call(method, params)
        except TimeoutError:
            fail(PROTOCOL, f"the daemon at {where} did not answer within {args.connect_timeout:g} s")
        except RpcError as exc:
            if exc.code == UNAUTHORIZED:
                fail(UNREACHABLE, f"the daemon at {where} refused the token (set $KDD_TOKEN, or run where the "
                                  f"daemon's token file {auth.token_path(port)} is readable)")
            fail(PROTOCOL, f"the daemon at {where} answered error {exc.code}: {exc.message.splitlines()[0]}")
        except (OSError, ProtocolError) as exc:
            fail(PROTOCOL, f"the daemon at {where} broke the exchange: {exc}")
