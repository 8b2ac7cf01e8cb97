"""The on-save check of every shipped example, timed: what ``kdd check FILE`` runs by default.

For each ``examples/*.kernel.toml`` a fresh engine (cold: nothing memoized,
no disk cache) checks the example as the language server does on save: the
deepest artifact this machine runs (Xe: the assembled kernel in kdd's
simulator; sm_90: the PTX in the PTX simulator). The table gives the wall
time of the whole check and of its stages as the engine measured them
(parse, build, passes, codegen: generation and assembly, check: the
simulation against the reference), the artifact, the verdict and the
simulator's instruction count; ``cpu`` is this process's CPU time (the
wall time on a shared machine also counts waiting for a core; ptxas and
iga64 run in child processes and count only in the wall time). ``--random N`` also times the code check of
N random small kernels (the differential sweep's draws,
tests/differential.py: build, passes, code generation and simulation, without
the interpreter's run) and prints their median. Writes JSON to
bench/results/check_examples.json. No asserts on time.

    .venv/bin/python bench/check_examples.py [--random 20 --seed 1] [examples/foo.kernel.toml ...]
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(path: Path) -> dict:
    from kdd.core.engine import Engine

    engine = Engine()
    start, cpu = time.perf_counter(), time.process_time()
    result = engine.check(engine.read(str(path)))
    row = {"file": str(path), "total_ms": round((time.perf_counter() - start) * 1e3, 1),
           "cpu_ms": round((time.process_time() - cpu) * 1e3, 1),
           "stages_ms": {k: round(v, 1) for k, v in engine.last_ms.items()},
           "artifact": result.get("artifact"), "verdict": result.get("verdict"), "shape": result.get("shape")}
    if "failure" in result:
        row["error"] = result["error"]
    sim = result.get("asm") or result.get("ptx") or {}
    row["instructions"] = sim.get("thread_instructions", sim.get("instructions"))
    return row


def random_kernels(count: int, seed: int) -> list[dict]:
    """The code check's time of ``count`` random small kernels (the differential sweep's records)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from differential import sweep

    return [{"target": r["target"], "shape": r["problem"]["shape"], "types": r["problem"]["types"]["canonical"],
             "config": r["config"], "outcome": r["outcome"], "code_s": r["code_s"]}
            for r in sweep(seed, count)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--random", type=int, default=0, help="also time the code check of N random small kernels")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default=str(ROOT / "bench/results/check_examples.json"))
    args = ap.parse_args()
    files = args.files or sorted((ROOT / "examples").glob("*.kernel.toml"))
    rows = [measure(p) for p in files]
    stages = ("parse", "build", "passes", "codegen", "check")
    print(f"{'example':28} {'check shape':28} {'artifact':8} " + " ".join(f"{s:>8}" for s in stages) +
          f" {'total':>8} {'cpu':>8} {'instr':>9}  verdict")
    for r in rows:
        ms = " ".join(f"{r['stages_ms'].get(s, 0.0):8.1f}" for s in stages)
        print(f"{Path(r['file']).name:28} {str(r['shape']):28} {str(r['artifact']):8} {ms} {r['total_ms']:8.1f} {r['cpu_ms']:8.1f} "
              f"{str(r['instructions']):>9}  {r['verdict'] or 'error: ' + r.get('error', '')}")
    out = {"machine": platform.platform(), "python": platform.python_version(),
           "unit": "ms, wall clock (cpu_ms: this process's CPU time), one cold run per example (fresh engine, no disk cache)", "examples": rows}
    if args.random:
        kernels = random_kernels(args.random, args.seed)
        times = [k["code_s"] for k in kernels]
        out["random"] = {"seed": args.seed, "count": len(kernels), "median_code_s": statistics.median(times),
                         "max_code_s": max(times), "kernels": kernels}
        print(f"random small kernels (seed {args.seed}): {len(kernels)} code checks, median "
              f"{statistics.median(times):.2f} s, max {max(times):.2f} s")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
