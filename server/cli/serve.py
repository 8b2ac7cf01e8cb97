"""``kdd serve``: the JSON-RPC daemon for scripts (methods and framing: ``protocol/README.md``).

``--stdio`` serves one client on stdin/stdout; ``--tcp HOST:PORT`` serves any
number of clients (port 0 picks a free one; the bound address is printed on
stderr as ``kdd serve: listening on HOST:PORT``). Over TCP every request must
carry a token: a random one, written (mode 0600) to the file printed as
``kdd serve: token in FILE``, which ``--connect`` reads; or ``--token``
/ ``$KDD_TOKEN``. ``--no-token`` only goes with ``--unsafe`` on a loopback
address. It binds loopback addresses only unless ``--allow-remote`` is given.
Configs are read from disk only under ``--root DIR`` (default: the current
directory) and only ``*.kernel.toml`` files.
"""
from __future__ import annotations

import os
import sys

from .lsp import add_daemon_options, add_root_option, cache_dir, worker_memory


def _refuse(message: str) -> int:
    print(f"kdd serve: error: {message}", file=sys.stderr)
    return 2


def run(args) -> int:
    import asyncio

    from kdd.core.spec.confined import ConfinedReader
    from kdd.server.rpc import auth
    from kdd.server.rpc.client import parse_address
    from kdd.server.rpc.daemon import Daemon, is_loopback, serve_stdio, serve_tcp

    token = args.token or os.environ.get("KDD_TOKEN")
    if args.no_token and token:
        return _refuse("--no-token and a token (--token or $KDD_TOKEN) contradict each other")
    if args.tcp:
        try:
            host, port = parse_address(args.tcp)
        except ValueError as exc:
            return _refuse(f"--tcp: {exc}")
        if not is_loopback(host) and not (args.allow_remote and token):
            return _refuse(f"{host} is not a loopback address: pass --allow-remote and a token "
                           "(--token or $KDD_TOKEN) to listen on it")
        if args.no_token and not args.unsafe:
            return _refuse("--no-token lets every local process and every web page in a browser use the daemon: "
                           "add --unsafe to mean it")
        if not args.no_token and token is None:
            token = auth.new_token()
    elif not args.stdio:
        return _refuse("choose --stdio or --tcp HOST:PORT")
    roots = args.root or [os.getcwd()]
    missing = [r for r in roots if not os.path.isdir(r)]
    if missing:
        return _refuse(f"--root {missing[0]}: not a directory")
    reader = ConfinedReader.of(roots)

    async def main() -> int:
        daemon = Daemon(args.workers, cache_dir(args), args.time_limit, token, args.max_message,
                        memory_mib=worker_memory(args), read_text=reader)
        written, failed = [], []

        def ready(bound: int) -> None:
            print(f"kdd serve: listening on {host}:{bound}", file=sys.stderr, flush=True)
            if token is not None:
                try:
                    written.append(auth.write_token(bound, token))
                except OSError as exc:  # no client could read it: stop rather than serve no one
                    failed.append(f"cannot write the token file {auth.token_path(bound)}: {exc.strerror or exc}")
                    daemon.stopped.set()
                    return
                print(f"kdd serve: token in {written[0]}", file=sys.stderr, flush=True)
            else:
                print("kdd serve: warning: no token: any local process or web page can use this daemon",
                      file=sys.stderr, flush=True)
        try:
            if not args.tcp:
                await serve_stdio(daemon)
                return 0
            import signal

            for sig in (signal.SIGTERM, signal.SIGINT):  # stop cleanly: the token file goes with the daemon
                asyncio.get_running_loop().add_signal_handler(sig, daemon.stopped.set)
            try:
                await serve_tcp(daemon, host, port, ready)
            except OSError as exc:
                if written:  # not a failure to listen
                    raise
                return _refuse(f"cannot listen on {args.tcp}: {exc.strerror or exc}")
            return _refuse(failed[0]) if failed else 0
        finally:
            daemon.close()
            for path in written:
                auth.remove_token(path, token)

    return asyncio.run(main())


def register(sub) -> None:
    p = sub.add_parser("serve", help="run the JSON-RPC daemon for scripts (stdio or TCP)",
                       description=__doc__.split("\n\n")[1])
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="serve one client on stdin/stdout")
    mode.add_argument("--tcp", metavar="HOST:PORT", help="listen on HOST:PORT (e.g. 127.0.0.1:7878)")
    p.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --tcp address (needs a token)")
    p.add_argument("--token", help="the token every request must carry (default $KDD_TOKEN, else a random one)")
    p.add_argument("--no-token", action="store_true", help="accept requests without a token (needs --unsafe)")
    p.add_argument("--unsafe", action="store_true", help="confirm --no-token")
    p.add_argument("--max-message", type=int, default=64 * 2**20, help="largest accepted message in bytes")
    add_root_option(p, "the current directory")
    add_daemon_options(p)
    p.set_defaults(run=run)
