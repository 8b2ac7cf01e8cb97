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
every module it imports again. The table shows each example's median wall
ratio over ``--rounds`` (the issue's figure) and, in parentheses, its median
ratio of CPU time (user + system), which a loaded machine disturbs less; the
summary the median and the worst over the examples beside the issue's bounds
(cold: median <= 1.25, worst <= 2.5; repeat: <= 0.5). Writes JSON (default
``bench/results/interactive.json``). No asserts on time.

    .venv/bin/python bench/interactive.py [--rounds 3] [--json PATH] [EXAMPLE ...]
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

from fresh_process import timed, write_json

ROOT = Path(__file__).resolve().parents[1]
KDD = str(Path(sys.executable).parent / "kdd")
LOOP = "s = 0\nfor i in range(2_000_000): s += i*i % 7\n"
BOUNDS = {"cold_median": 1.25, "cold_worst": 2.5, "repeat_median": 0.5}


def ratios(example: Path, rounds: int, env: dict) -> dict:
    """The example's cold and repeat ratios to the loop, one of each per round."""
    loop = [sys.executable, "-c", LOOP]
    cold = [KDD, "compile", str(example), "--emit", "passes", "--no-cache"]
    repeat = [KDD, "compile", str(example), "--emit", "asm"]
    def run(argv: list[str]) -> tuple[float, float]:
        wall, cpu, _ = timed(argv, env, ok=(0, 1))
        return wall, cpu

    run(repeat)  # fills the cache directory: the timed runs are the repeats
    out: dict = {k: [] for k in ("loop_s", "cold_s", "repeat_s", "cold", "repeat", "cold_cpu", "repeat_cpu")}
    for i in range(rounds):
        if i % 2:
            c, r, lp = run(cold), run(repeat), run(loop)
        else:
            lp, c, r = run(loop), run(cold), run(repeat)
        out["loop_s"].append(lp[0])
        out["cold_s"].append(c[0])
        out["repeat_s"].append(r[0])
        out["cold"].append(c[0] / lp[0])
        out["repeat"].append(r[0] / lp[0])
        out["cold_cpu"].append(c[1] / lp[1])
        out["repeat_cpu"].append(r[1] / lp[1])
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
    print(f"time / the loop's time in the same round, wall (and CPU); median of {args.rounds} rounds")
    print(f"{'example':<22} {'loop s':>7} {'cold':>13} {'repeat':>13}")
    for name, r in rows.items():
        print(f"{name:<22} {statistics.median(r['loop_s']):7.3f} "
              + " ".join(f"{statistics.median(r[k]):6.2f} ({statistics.median(r[k + '_cpu']):4.2f})"
                         for k in ("cold", "repeat")))
    summary = {}
    for k in ("cold", "repeat", "cold_cpu", "repeat_cpu"):
        per_example = [statistics.median(r[k]) for r in rows.values()]
        summary[f"{k}_median"] = round(statistics.median(per_example), 3)
        summary[f"{k}_worst"] = round(max(per_example), 3)
    for key, value in summary.items():
        bound = BOUNDS.get(key)
        print(f"{key:<14} {value:6.2f}" + (f"   (issue: <= {bound})" if bound is not None else ""))
    out = {"python": platform.python_version(), "machine": platform.machine(), "loop": LOOP,
           "rounds": args.rounds, "bounds": BOUNDS, "summary": summary, "examples": rows}
    write_json(args.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
