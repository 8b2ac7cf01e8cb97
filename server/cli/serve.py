"""``kdd serve``: the JSON-RPC daemon for scripts (methods and framing: ``protocol/README.md``).

``--stdio`` serves one client on stdin/stdout; ``--tcp HOST:PORT`` serves any
number of clients (port 0 picks a free one; the bound address is printed on
stderr as ``kdd serve: listening on HOST:PORT``). It binds loopback
addresses only unless ``--allow-remote`` is given, and then every request
must carry the token from ``--token`` or ``$KDD_TOKEN``.
"""
from __future__ import annotations

import os
import sys

from .lsp import add_daemon_options, cache_dir


def run(args) -> int:
    import asyncio

    from kdd.server.rpc.client import parse_address
    from kdd.server.rpc.daemon import Daemon, is_loopback, serve_stdio, serve_tcp

    token = args.token or os.environ.get("KDD_TOKEN")
    if args.tcp:
        try:
            host, port = parse_address(args.tcp)
        except ValueError as exc:
            print(f"kdd serve: error: --tcp: {exc}", file=sys.stderr)
            return 2
        if not is_loopback(host) and not (args.allow_remote and token):
            print(f"kdd serve: error: {host} is not a loopback address: pass --allow-remote and a token "
                  "(--token or $KDD_TOKEN) to listen on it", file=sys.stderr)
            return 2
    elif not args.stdio:
        print("kdd serve: error: choose --stdio or --tcp HOST:PORT", file=sys.stderr)
        return 2

    async def main() -> None:
        daemon = Daemon(args.workers, cache_dir(args), args.time_limit, token, args.max_message)
        try:
            if args.tcp:
                await serve_tcp(daemon, host, port, lambda bound: print(
                    f"kdd serve: listening on {host}:{bound}", file=sys.stderr, flush=True))
            else:
                await serve_stdio(daemon)
        finally:
            daemon.close()

    asyncio.run(main())
    return 0


def register(sub) -> None:
    p = sub.add_parser("serve", help="run the JSON-RPC daemon for scripts (stdio or TCP)",
                       description=__doc__.split("\n\n")[1])
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="serve one client on stdin/stdout")
    mode.add_argument("--tcp", metavar="HOST:PORT", help="listen on HOST:PORT (e.g. 127.0.0.1:7878)")
    p.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --tcp address (needs a token)")
    p.add_argument("--token", help="the token every request must carry (default $KDD_TOKEN)")
    p.add_argument("--max-message", type=int, default=64 * 2**20, help="largest accepted message in bytes")
    add_daemon_options(p)
    p.set_defaults(run=run)
