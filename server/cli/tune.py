"""``kdd tune FILE --space SPACE``: search knob values of a config, trials as Ray tasks, the best kept.

SPACE is ``"iter=mb32oc32ic16|mb16oc32ic16; tg=oc4ow4|oc2ow4; slm.bufs=2|3"``: knobs (``[config]``
keys or oneDNN line keys, or a field of one such as ``slm.bufs``) and their values, or ``auto``: the
defaults heuristic's tuning space for the problem (best tiles, group shapes, SLM stages, split K). Each trial is the
config with those knobs over its own; ``--objective model`` compiles it, checks it in the
interpreter and scores the roofline time of its listing (Xe targets); ``--objective bench`` checks
it on a GPU and times it there (sm_90, on GPU nodes of the cluster). Only trials whose check is
right count. ``--sampler`` is Optuna's TPE (default), random, or the grid of the space;
``--budget`` trials (besides the config as written). The history (every trial's row) goes to
``--history`` (default ``NAME.tune.jsonl`` beside FILE, reused by a rerun); the best config to
``NAME.tuned.kernel.toml`` beside FILE with its figures in a comment. Exit status 0 when a best was
written, 1 when a trial computed a wrong result, 2 for an invalid file or space or when no trial
counted, 3 for a failure inside kdd (docs/sweep.md).
"""
from __future__ import annotations

import sys
from pathlib import Path


def run(args) -> int:
    from kdd.server.sweep.ray_pool import ClusterError
    from kdd.server.sweep.tune import SAMPLERS, TuneError, write_best

    assert args.sampler in SAMPLERS
    try:
        tunable, space, history, trials = _search(args)
    except (TuneError, ClusterError) as exc:
        print(f"kdd tune: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nkdd tune: interrupted; the finished trials are in the history, a rerun reuses them", file=sys.stderr)
        return 130
    _print_trials(trials, args.objective)
    written = write_best(tunable, space, args.objective, trials)
    print(f"history: {history}")
    _print_best(written, args.objective)
    outcomes = {t.row["verdict"]["outcome"] for t in trials}
    if outcomes & {"error", "lost"}:
        return 3
    return 1 if "wrong" in outcomes else 2 if written is None else 0


def _search(args):
    """The config, its knob space, the history file and the trials the search ran."""
    from kdd.server.sweep.tune import AUTO, Space, Tunable, TuneError, history_file, tune

    tunable = Tunable.read(args.file)
    space = Space.auto(tunable.spec) if args.space == AUTO else Space.parse(args.space)
    if args.objective == "model" and tunable.spec.target.isa == "ptx":
        raise TuneError("--objective model scores the roofline of an Xe listing; for sm_90 use "
                        "--objective bench (a GPU node)")
    history = args.history or history_file(args.file)
    trials = tune(tunable, space, objective=args.objective, budget=args.budget, sampler=args.sampler,
                  seed=args.seed, history=history, address=args.address, workers=args.workers, runs=args.runs)
    return tunable, space, history, trials


def _print_trials(trials, objective: str) -> None:
    """The table of trials: the config as written first, then the numbered ones best first."""
    from kdd.server.sweep.tune import figure

    ranked = sorted((t for t in trials if t.number is not None), key=lambda t: (t.value is None, t.value or 0))
    print(f"{'trial':>5}  {'outcome':8} figure")
    for t in [t for t in trials if t.number is None] + ranked:
        params = ", ".join(f"{k}={v}" for k, v in t.params.items()) or "(the config as written)"
        print(f"{'-' if t.number is None else t.number:>5}  {t.row['verdict']['outcome']:8} "
              f"{figure(t, objective)}  {params}{' (from the history)' if t.reused else ''}")


def _print_best(written, objective: str) -> None:
    """What ``write_best`` did: nothing (no trial right), kept the config as written, or wrote a trial."""
    from kdd.server.sweep.tune import figure

    if written is None:
        print("kdd tune: no trial checked right; nothing written", file=sys.stderr)
    elif written[0] is None:
        print(f"best: the config as written ({figure(written[1], objective)}); no trial beat it, nothing written")
    else:
        print(f"best: trial {written[1].number}, written to {written[0]}")


def register(sub) -> None:
    from kdd.server.sweep.tune import OBJECTIVES, SAMPLERS

    p = sub.add_parser("tune", help="search knob values of a config on Ray; the best checked one kept",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("file", type=Path, help="a *.kernel.toml file")
    p.add_argument("--space", required=True, help='knobs and values: "iter=A|B; tg=C|D; slm.bufs=2|3", or auto '
                                                  "(the heuristic's tuning space)")
    p.add_argument("--objective", choices=tuple(OBJECTIVES), default="model",
                   help="model: roofline of the listing, checked in the interpreter (default); bench: timed "
                        "on a GPU after a device check")
    p.add_argument("--budget", type=int, default=20, help="trials (default 20; a grid stops at its size)")
    p.add_argument("--sampler", choices=SAMPLERS, default="tpe", help="Optuna's sampler (default tpe)")
    p.add_argument("--seed", type=int, default=0, help="the sampler's seed (default 0)")
    p.add_argument("--history", type=Path, help="the trials' rows (default NAME.tune.jsonl beside FILE)")
    p.add_argument("--address", help="an existing Ray cluster: auto, or ray://HOST:10001 (default: a local one)")
    p.add_argument("--workers", type=int, help="trials in flight at most (and the local cluster's CPUs)")
    p.add_argument("--runs", type=int, default=50, help="bench: timed launches per trial (default 50)")
    p.set_defaults(run=run)
