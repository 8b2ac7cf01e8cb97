"""``kdd lsp``: the language server on stdin/stdout, as editors start it.

Compiles and checks run in worker processes (``--workers``), stopped after
``--time-limit`` seconds (the editor setting ``kdd.timeLimit`` overrides
it); results are cached on disk under ``--cache-dir`` (default: the user
cache directory, ``$KDD_CACHE_DIR``), ``--no-cache`` turns that off.
"""
from __future__ import annotations


def add_daemon_options(p) -> None:
    p.add_argument("--workers", type=int, default=2, help="worker processes for compiles and checks (default 2)")
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds before a compile or check is stopped")
    p.add_argument("--cache-dir", help="on-disk cache directory (default: $KDD_CACHE_DIR or ~/.cache/kdd)")
    p.add_argument("--no-cache", action="store_true", help="no on-disk cache")
    p.add_argument("--worker-memory", type=int, metavar="MIB",
                   help="heap limit of each worker process in MiB (default 4096; 0: none)")


def add_root_option(p, default: str) -> None:
    p.add_argument("--root", action="append", metavar="DIR",
                   help=f"serve files under DIR only (repeatable; default {default})")


def worker_memory(args) -> int | None:
    """The workers' heap limit in MiB (None: none)."""
    from kdd.server.rpc.workers import DEFAULT_MEMORY_MIB

    return DEFAULT_MEMORY_MIB if args.worker_memory is None else (args.worker_memory or None)


def cache_dir(args) -> str | None:
    from kdd.core.engine import default_cache_dir

    return None if args.no_cache else str(args.cache_dir or default_cache_dir())


def quiet_protocol_logs() -> None:
    """Warnings on stderr, but not pygls's traceback for every request answered with an error: the
    client gets the error itself, and a client that does not read stderr would block the server."""
    import logging

    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("pygls.protocol.json_rpc").setLevel(logging.CRITICAL)


def run(args) -> int:
    from kdd.server.lsp.server import create_server

    quiet_protocol_logs()
    server = create_server(args.workers, cache_dir(args), args.time_limit, worker_memory(args))
    try:
        server.start_io()
    finally:
        server.shutdown_pool()
    return 0


def register(sub) -> None:
    p = sub.add_parser("lsp", help="run the language server on stdio (started by the editor)",
                       description=__doc__.split("\n\n")[1])
    add_daemon_options(p)
    p.set_defaults(run=run)
