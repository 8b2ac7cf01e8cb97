"""The ``kdd`` command line.

Each subcommand lives in its own module of this package and exposes
``register(subparsers)``, which adds its parser and sets ``run`` (a function of
the parsed arguments returning the exit code). ``SUBCOMMANDS`` is the one list
of them, in the order ``kdd --help`` shows. A command line that names a
subcommand loads and registers that one alone (a module each, some of which
import more): the others serve only ``kdd --help`` and mistyped commands.
"""
from __future__ import annotations

import argparse
import atexit
import gc
import importlib
import os
import sys
import threading

from kdd.server.version import kdd_version

SUBCOMMANDS = (
    "ir_demo",
    "shape",
    "hover",
    "compile",
    "check",
    "bench",
    "sweep",
    "tune",
    "portblas",
    "lsp",
    "serve",
    "view",
)

_MODULE_OF = {name.replace("_", "-"): name for name in SUBCOMMANDS}  # command name -> its module
# The commands whose process ends without the interpreter's teardown (``_end_now``): the interactive ones,
# whose whole work is one engine call and printing; the servers, sweeps and tunes end as Python ends them.
ENDS_AT_ONCE = frozenset(("compile", "check"))


class _VersionAction(argparse.Action):
    """``--version``: prints kdd's version (looked up only when asked) and exits."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, help="show the version and exit"):
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"kdd {kdd_version()}")
        parser.exit()


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``kdd`` parser with every subcommand, or with ``only`` that one (its module's name)."""
    parser = argparse.ArgumentParser(
        prog="kdd", description="kernel development daemon: compile, inspect and check GPU kernel configs")
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS if only is None else (only,):
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    first = (sys.argv[1:] if argv is None else argv)[:1]
    if argv is None and first and first[0] in ENDS_AT_ONCE:
        # One command, then the process ends without a teardown (_end_now): the cyclic collector stays
        # off from the start. It finds nothing among the modules and acyclic IR a command makes, and,
        # switched back on after the engine call (which pauses it), its first collection walked every
        # object the compile had made since (~6 ms, 2-3% of a compile).
        gc.disable()
    parser = build_parser(_MODULE_OF.get(first[0]) if first else None)
    args, extra = parser.parse_known_args(argv)
    if not getattr(args, "run", None):
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        parser.print_help()
        return 2
    if extra:  # the subcommand's usage, not the top level's, says what it takes
        parser._subparsers._group_actions[0].choices[args.command].error(
            f"unrecognized arguments: {' '.join(extra)}")
    try:
        code = int(args.run(args) or 0)
    except BrokenPipeError:  # `kdd ... | head` must not print a traceback
        return 0
    finally:
        if argv is None:  # the program's own command line: the process ends next, and the collection
            gc.freeze()   # it ends with would walk every object the command made (~10% of a small compile)
    if argv is None and args.command in ENDS_AT_ONCE:
        _end_now(code)
    return code


def _end_now(code: int) -> None:
    """End the process with ``code`` as soon as the command's output is out: run the ``atexit`` handlers,
    flush the output, and skip the interpreter's teardown, which frees every object the command made one
    by one (10-20 ms of a compile's CPU, 40 ms of sm90_conv's) to hand the memory back to a process that
    ends. Only with no other thread running; where flushing fails (a closed pipe), the interpreter ends
    the process as it always does."""
    if threading.active_count() > 1:
        return
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
