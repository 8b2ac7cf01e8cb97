"""Wall time of short ``kdd`` commands from the shell, start-up included: what a user waits for.

Each command runs ``--repeat`` times as a fresh process; the table shows the
median and the best wall time and the median CPU time of the process (user +
system: what other processes on a shared machine disturb least), beside the
targets (``kdd --version`` and ``--help`` under 150 ms, ``kdd shape`` under
300 ms, ``kdd compile FILE --emit passes`` median over the examples under
500 ms; with ``--no-cache``: the compile itself, not an answer from the
on-disk cache).

Python caches the compiled bytecode of every module it imports (as an
installed package has it); an environment with ``PYTHONDONTWRITEBYTECODE`` set
recompiles every module on every start instead, which costs more than the
compile itself. Every command is therefore timed twice: *cached*, with
bytecode caching on (in a cache folder of this run, written by a first,
untimed run), and *as is*, in the environment the script runs in. Writes JSON
(default ``bench/results/startup.json``). No asserts on time.

    .venv/bin/python bench/startup.py [--repeat 5] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KDD = str(Path(sys.executable).parent / "kdd")


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(argv: list[str], repeat: int, env: dict) -> dict:
    """Wall and CPU ms of ``repeat`` runs of ``kdd argv``."""
    wall, cpu = [], []
    for _ in range(repeat):
        c0, t0 = _children_cpu(), time.perf_counter()
        subprocess.run([KDD, *argv], capture_output=True, check=False, env=env)
        wall.append((time.perf_counter() - t0) * 1e3)
        cpu.append((_children_cpu() - c0) * 1e3)
    return {"wall": wall, "cpu": cpu}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "startup.json"))
    args = ap.parse_args()
    rows = [("kdd --version", ["--version"], 150), ("kdd --help", ["--help"], 150),
            ("kdd shape", ["shape", "mb32ic64ih56oc64oh56kh3ph1"], 300)]
    examples = sorted((ROOT / "examples").glob("*.kernel.toml"))
    out: dict = {}
    with tempfile.TemporaryDirectory() as cache:
        cached = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        cached["PYTHONPYCACHEPREFIX"] = cache
        subprocess.run([KDD, "compile", str(examples[0]), "--emit", "passes", "--no-cache"], capture_output=True,
                       env=cached)
        for mode, env in (("cached", cached), ("as_is", dict(os.environ))):
            commands = {name: timed(argv, args.repeat, env) for name, argv, _ in rows}
            per_example = {p.name[: -len(".kernel.toml")]:
                           timed(["compile", str(p), "--emit", "passes", "--no-cache"], max(1, args.repeat // 2), env)
                           for p in examples}
            out[mode] = {"commands": commands, "compile_passes": per_example}
    as_is = "PYTHONDONTWRITEBYTECODE set" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "bytecode cached"
    print(f"ms, {args.repeat} runs (compile: {max(1, args.repeat // 2)} per example); cached: bytecode "
          f"cached; as is: this environment ({as_is})")
    print(f"{'command':<36} {'cached: median':>14} {'best':>6} {'cpu':>6}   {'as is: median':>13} {'best':>6} "
          f"{'cpu':>6}  target")

    def cells(m: dict) -> str:
        return f"{statistics.median(m['wall']):>6.0f} {min(m['wall']):>6.0f} {statistics.median(m['cpu']):>6.0f}"

    for name, _, target in rows:
        print(f"{name:<36} {'':>8}{cells(out['cached']['commands'][name])}   {'':>7}"
              f"{cells(out['as_is']['commands'][name])}  < {target}")
    summary = {}
    for mode in out:
        medians = {k: {c: statistics.median(v[c]) for c in ("wall", "cpu")}
                   for k, v in out[mode]["compile_passes"].items()}
        out[mode]["compile_passes_median_ms"] = medians
        summary[mode] = {c: statistics.median(m[c] for m in medians.values()) for c in ("wall", "cpu")}
        summary[mode]["wall_max"] = max(m["wall"] for m in medians.values())
    out["summary"] = summary
    s = summary
    print(f"{'kdd compile --emit passes (median)':<36} {'':>8}{s['cached']['wall']:>6.0f} {'':>6} "
          f"{s['cached']['cpu']:>6.0f}   {'':>7}{s['as_is']['wall']:>6.0f} {'':>6} {s['as_is']['cpu']:>6.0f}  < 500")
    for name in out["cached"]["compile_passes_median_ms"]:
        a, b = out["cached"]["compile_passes_median_ms"][name], out["as_is"]["compile_passes_median_ms"][name]
        print(f"  {name:<34} {'':>8}{a['wall']:>6.0f} {'':>6} {a['cpu']:>6.0f}   {'':>7}{b['wall']:>6.0f} {'':>6} "
              f"{b['cpu']:>6.0f}")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=1))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
