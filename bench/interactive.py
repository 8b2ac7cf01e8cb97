"""``kdd compile`` from the shell against a fixed pure-Python loop timed in the same run: ratios, not seconds.

The machine this runs on is shared and its load changes by the second, so
every figure is the wall time of a fresh ``kdd`` process divided by the wall
time of a fresh process of the same interpreter running a fixed loop
(``LOOP``), the two timed back to back (order alternating by round) so a
change of load falls on both. Per example and round:

- *cold*: ``kdd compile FILE --emit passes --no-cache`` (parse, build, every
  pass; nothing from disk);
- *repeat*: ``kdd compile FILE --emit asm`` of the unchanged config over a
  cache directory (``KDD_CACHE_DIR``) an untimed first run filled: what a
  user waits for the second time.

Bytecode is cached (in a folder of this run, as an installed package has it)
for both: with ``PYTHONDONTWRITEBYTECODE`` set every process would compile
every module it imports again. The table shows each example's median ratio over ``--rounds``; the summary
the median and the worst over the examples beside the issue's bounds (cold:
median <= 1.25, worst <= 2.5; repeat: <= 0.5). Writes JSON (default
``bench/results/interactive.json``). No asserts on time.

    .venv/bin/python bench/interactive.py [--rounds 3] [--json PATH] [EXAMPLE ...]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KDD = str(Path(sys.executable).parent / "kdd")
LOOP = "s = 0\nfor i in range(2_000_000): s += i*i % 7\n"
BOUNDS = {"cold_median": 1.25, "cold_worst": 2.5, "repeat_median": 0.5}


def wall_s(argv: list[str], env: dict) -> float:
    """Seconds a fresh process of ``argv`` takes; a failing command stops the run (its time is no figure)."""
    t0 = time.perf_counter()
    run = subprocess.run(argv, capture_output=True, env=env, check=False)
    seconds = time.perf_counter() - t0
    if run.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} exited {run.returncode}: {run.stderr.decode()[-500:]}")
    return seconds


def ratios(example: Path, rounds: int, env: dict) -> dict:
    """The example's cold and repeat ratios to the loop, one of each per round."""
    loop = [sys.executable, "-c", LOOP]
    cold = [KDD, "compile", str(example), "--emit", "passes", "--no-cache"]
    repeat = [KDD, "compile", str(example), "--emit", "asm"]
    wall_s(repeat, env)  # fills the cache directory: the timed runs are the repeats
    out: dict = {"loop_s": [], "cold_s": [], "repeat_s": [], "cold": [], "repeat": []}
    for i in range(rounds):
        if i % 2:
            c, r, lp = wall_s(cold, env), wall_s(repeat, env), wall_s(loop, env)
        else:
            lp, c, r = wall_s(loop, env), wall_s(cold, env), wall_s(repeat, env)
        out["loop_s"].append(lp)
        out["cold_s"].append(c)
        out["repeat_s"].append(r)
        out["cold"].append(c / lp)
        out["repeat"].append(r / lp)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("examples", nargs="*", help="kernel configs (default: examples/*.kernel.toml)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "interactive.json"))
    args = ap.parse_args()
    examples = [Path(p) for p in args.examples] or sorted((ROOT / "examples").glob("*.kernel.toml"))
    rows = {}
    with tempfile.TemporaryDirectory(prefix="kdd-bench-cache-") as cache, \
            tempfile.TemporaryDirectory(prefix="kdd-bench-pyc-") as pyc:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(KDD_CACHE_DIR=cache, PYTHONPYCACHEPREFIX=pyc)
        for path in examples:
            rows[path.name[: -len(".kernel.toml")]] = ratios(path, args.rounds, env)
    print(f"wall time / the loop's wall time in the same round; median of {args.rounds} rounds")
    print(f"{'example':<22} {'loop s':>7} {'cold':>6} {'repeat':>7}")
    for name, r in rows.items():
        print(f"{name:<22} {statistics.median(r['loop_s']):7.3f} {statistics.median(r['cold']):6.2f} "
              f"{statistics.median(r['repeat']):7.2f}")
    cold = [statistics.median(r["cold"]) for r in rows.values()]
    repeat = [statistics.median(r["repeat"]) for r in rows.values()]
    summary = {"cold_median": round(statistics.median(cold), 3), "cold_worst": round(max(cold), 3),
               "repeat_median": round(statistics.median(repeat), 3), "repeat_worst": round(max(repeat), 3)}
    for key, value in summary.items():
        bound = BOUNDS.get(key)
        print(f"{key:<14} {value:6.2f}" + (f"   (issue: <= {bound})" if bound is not None else ""))
    out = {"python": platform.python_version(), "machine": platform.machine(), "loop": LOOP,
           "rounds": args.rounds, "bounds": BOUNDS, "summary": summary, "examples": rows}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
