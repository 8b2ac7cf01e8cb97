"""``kdd view``: a local page with the config, the IR after any pass, the assembly with its register
pressure, the instruction mix and the roofline point, updated live as the file changes on disk.

It serves on 127.0.0.1 (``--port``, default a free one), prints the page's URL and opens it in a
browser unless ``--no-browser``. Without FILE it follows the first ``*.kernel.toml`` of the current
directory. Compiles run in worker processes and share the daemons' on-disk cache. Parents named by
``extends`` are read under ``--root DIR`` only (default: the file's directory and the current one).
"""
from __future__ import annotations

import sys
from pathlib import Path

from .lsp import add_daemon_options, add_root_option, cache_dir, worker_memory


def run(args) -> int:
    import asyncio

    from kdd.core.spec.confined import ConfinedReader
    from kdd.server.view.http import ViewServer, follow
    from kdd.server.view.session import ViewSession
    from kdd.server.rpc.workers import WorkerPool

    path = args.file or next(iter(sorted(Path.cwd().glob("*.kernel.toml"))), None)
    if path is None:
        print("kdd view: error: no FILE given and no *.kernel.toml in the current directory", file=sys.stderr)
        return 2
    if not Path(path).is_file():
        print(f"kdd view: error: {path}: no such file", file=sys.stderr)
        return 2

    reader = ConfinedReader.of(args.root or [str(Path(path).resolve().parent), str(Path.cwd())])

    async def main() -> None:
        pool = WorkerPool(args.workers, cache_dir(args), args.time_limit, worker_memory(args), reader)
        session = ViewSession(str(path), pool, args.target, reader)
        server = ViewServer(session, "127.0.0.1", args.port)
        try:
            url = await server.start()
        except OSError as exc:
            pool.close()
            print(f"kdd view: error: cannot listen on 127.0.0.1:{args.port}: {exc.strerror}", file=sys.stderr)
            raise SystemExit(2) from None  # an argument that cannot be served, not a failed check
        observer = follow(session)
        session.reload()
        print(f"kdd view: {url} (following {session.path})", flush=True)
        if not args.no_browser:
            import webbrowser
            webbrowser.open(url)
        try:
            await asyncio.Event().wait()
        finally:
            observer.stop()
            server.close()
            pool.close()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    return 0


def port_number(text: str) -> int:
    """``--port``: an integer from 0 (a free port) to 65535."""
    import argparse

    if not (text.isascii() and text.isdigit()) or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)")
    return int(text)


def register(sub) -> None:
    p = sub.add_parser("view", help="serve a live page of a config: IR, assembly, register pressure",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("file", nargs="?", metavar="FILE", help="the *.kernel.toml to follow")
    p.add_argument("--port", type=port_number, default=0, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--no-browser", action="store_true", help="only print the URL")
    p.add_argument("--target", help="compile for this target instead of the config's [target] hw")
    add_root_option(p, "the file's directory and the current one")
    add_daemon_options(p)
    p.set_defaults(run=run)
