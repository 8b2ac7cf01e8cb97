"""``kdd sweep INPUT...``: every descriptor or config of the inputs x types x targets through one stage, on Ray.

Inputs are benchdnn batch files (``--target`` required), ``*.kernel.toml`` files or directories of
them, and ``onednn:FILE`` (oneDNN's conv lookup-table lines, each once per type of its class). Each
task runs ``--stage`` (``compile``: build, passes, register allocation; ``asm``: and the assembler;
``check``: and the interpreter's check; ``bench``: sm_90 checked and timed on a GPU node) as a Ray
task: a local cluster by default, ``--address`` for an existing one. Rows (the CLI's ``--json``
object of each task plus ``key``, ``task``, ``verdict``, ``wall_s``, ``cpu_s``, ``worker``) are
appended to ``--out`` as they finish; a rerun skips keys already there; Ctrl-C cancels and keeps
every finished row. A summary table per target, prop and type ends the run; ``--summarize FILE...``
prints it from saved rows. Exit status 0 when every task is ok, 3 when one failed inside kdd or lost
its worker, else 1 when a check fails, else 2 when a config is refused or an argument is invalid;
130 when interrupted (docs/sweep.md).
"""
from __future__ import annotations

import sys
from pathlib import Path

INTERRUPTED = 130


def exit_status(rows: list[dict]) -> int:
    """The worst outcome of ``rows`` as an exit status (see the module docstring)."""
    outcomes = {r["verdict"]["outcome"] for r in rows}
    return 3 if outcomes & {"error", "lost"} else 1 if "wrong" in outcomes else 2 if "refused" in outcomes else 0


def _list(text: str | None) -> tuple[str, ...]:
    return tuple(x.strip() for x in (text or "").split(",") if x.strip())


def run(args) -> int:
    from kdd.server.sweep import summary
    from kdd.server.sweep.rows import latest, read_rows

    if args.summarize:
        missing = [p for p in args.summarize if not p.is_file()]
        if missing:
            print(f"kdd sweep: no such rows file: {', '.join(map(str, missing))}", file=sys.stderr)
            return 2
        rows = latest(read_rows(args.summarize))
        print(summary.render(rows), end="")
        return exit_status(rows)
    if not args.inputs or args.out is None:
        print("kdd sweep: give INPUT... and --out FILE.jsonl (or --summarize FILE...)", file=sys.stderr)
        return 2
    from kdd.server.sweep.ray_pool import ClusterError
    from kdd.server.sweep.run import sweep
    from kdd.server.sweep.tasks import InputError, Selection, StageOptions, read_tasks

    options = StageOptions(args.stage, args.bisect, args.unbounded, args.runs)
    try:
        tasks = read_tasks(args.inputs, Selection(_list(args.target), _list(args.types), _list(args.prop)),
                           options)
    except InputError as exc:
        print(f"kdd sweep: {exc}", file=sys.stderr)
        return 2
    if not tasks:
        print("kdd sweep: the inputs give no task (check --target, --types and --prop)", file=sys.stderr)
        return 2
    try:
        done = sweep(tasks, args.out, address=args.address, workers=args.workers)
    except ClusterError as exc:
        print(f"kdd sweep: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        rows = read_rows([args.out])
        print(f"\nkdd sweep: interrupted; {len(rows)} rows in {args.out}, a rerun resumes", file=sys.stderr)
        return INTERRUPTED
    print(summary.render(done.rows), end="")
    cpu = sum(r["cpu_s"] for r in done.rows)
    print(f"{len(tasks)} tasks: {done.computed} computed in {done.wall_s:.1f} s, {done.skipped} already in "
          f"{args.out}; {cpu:.1f} CPU-s in the workers in all")
    return exit_status(done.rows)


def register(sub) -> None:
    from kdd.server.sweep.tasks import STAGES

    p = sub.add_parser("sweep", help="run many descriptors or configs x types x targets through a stage on Ray",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("inputs", nargs="*", metavar="INPUT",
                   help="benchdnn batch files, *.kernel.toml files or directories, onednn:FILE")
    p.add_argument("--target", help="targets, comma-separated (xehpg, xehpc, xe2, sm_90): set for descriptors and "
                                    "configs, a filter for lookup-table lines")
    p.add_argument("--types", help="types, comma-separated (f16,bf16 or f16:f16:f32): replace a descriptor's or "
                                   "config's; for lookup-table lines, the variants kept (f16, u8:s8:u8, tf32)")
    p.add_argument("--prop", help="keep these propagation kinds (fwd, bwd_d, bwd_w), comma-separated")
    p.add_argument("--stage", choices=STAGES, default="compile", help="how far each task goes (default compile)")
    p.add_argument("--out", type=Path, metavar="FILE.jsonl", help="the rows file: appended to, and resumed from")
    p.add_argument("--address", help="an existing Ray cluster: auto, or ray://HOST:10001 (default: start a "
                                     "local one)")
    p.add_argument("--workers", type=int, help="tasks in flight at most (and the local cluster's CPUs)")
    p.add_argument("--bisect", action="store_true", help="check stage: check after every pass (kdd check --bisect)")
    p.add_argument("--unbounded", action="store_true",
                   help="check stage: interpret check shapes over the interpreter's bound too (slow)")
    p.add_argument("--runs", type=int, default=50, help="bench stage: timed launches per task (default 50)")
    p.add_argument("--summarize", type=Path, nargs="+", metavar="FILE",
                   help="print the summary table of rows files instead of running anything")
    p.set_defaults(run=run)
