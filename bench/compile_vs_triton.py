"""kdd's cold sm_90 compile against Triton's, paired on the same machine: the ratio of their wall times.

Each round runs, as fresh processes back to back (order alternating by
round, so a change of the shared machine's load falls on both):

- kdd: ``kdd compile examples/sm90_gemm.kernel.toml --emit sass --no-cache``
  (the config's text to PTX, ptxas's cubin and the SASS with live registers);
- Triton: ``bench/triton_matmul.py`` (its tutorial f16 matmul through
  ``triton.compile(..., target=GPUTarget("cuda", 90, 32))`` to a cubin) with
  an empty ``TRITON_CACHE_DIR``, run by the Python of a throwaway virtual
  environment holding the newest ``triton`` from PyPI, outside the repository
  (``--triton-python``; make it with ``python3 -m venv /tmp/triton-venv &&
  /tmp/triton-venv/bin/pip install triton``). No GPU is needed.

Both run with their bytecode cached (as installed packages have it), in a
folder of this run written by a first, untimed run of each. Prints each pair
and the median ratio kdd / Triton of wall time (the issue's bound: <= 1.0)
and of CPU time (user + system with the children: what a loaded machine
disturbs less) and writes JSON (default ``bench/results/compile_vs_triton.json``). No
asserts on time.

    .venv/bin/python bench/compile_vs_triton.py [--rounds 5] [--triton-python PATH] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

from fresh_process import timed, write_json

ROOT = Path(__file__).resolve().parents[1]
KDD = str(Path(sys.executable).parent / "kdd")
CONFIG = ROOT / "examples" / "sm90_gemm.kernel.toml"


def triton_run(python: str, env: dict) -> tuple[float, float, dict]:
    with tempfile.TemporaryDirectory(prefix="triton-cache-") as cache:
        wall, cpu, out = timed([python, str(ROOT / "bench" / "triton_matmul.py")],
                               dict(env, TRITON_CACHE_DIR=cache, TRITON_DEFAULT_FP_FUSION="1"))
    return wall, cpu, json.loads(out.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--triton-python", default="/tmp/triton-venv/bin/python")
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "compile_vs_triton.json"))
    args = ap.parse_args()
    if not Path(args.triton_python).exists():
        print(f"no {args.triton_python}: python3 -m venv /tmp/triton-venv && /tmp/triton-venv/bin/pip install triton",
              file=sys.stderr)
        return 2
    kdd = [KDD, "compile", str(CONFIG), "--emit", "sass", "--no-cache"]
    pairs = []
    with tempfile.TemporaryDirectory(prefix="pyc-") as pyc:
        # Both with their bytecode cached, as installed packages have it (a first, untimed run writes it).
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = pyc
        timed(kdd, env)
        *_, report = triton_run(args.triton_python, env)
        print(f"{'round':>5} {'kdd s':>7} {'triton s':>9} {'ratio':>6}   {'kdd cpu':>8} {'triton cpu':>10} {'ratio':>6}")
        for i in range(args.rounds):
            if i % 2:
                (t, tc, report), (k, kc, _) = triton_run(args.triton_python, env), timed(kdd, env)
            else:
                (k, kc, _), (t, tc, report) = timed(kdd, env), triton_run(args.triton_python, env)
            pairs.append({"kdd_s": k, "triton_s": t, "ratio": k / t, "kdd_cpu_s": kc, "triton_cpu_s": tc,
                          "cpu_ratio": kc / tc})
            print(f"{i:>5} {k:7.2f} {t:9.2f} {k / t:6.2f}   {kc:8.2f} {tc:10.2f} {kc / tc:6.2f}")
    ratio = statistics.median(p["ratio"] for p in pairs)
    cpu_ratio = statistics.median(p["cpu_ratio"] for p in pairs)
    print(f"kdd / Triton {report.get('triton')}: median wall ratio {ratio:.2f} over {args.rounds} pairs (issue: "
          f"<= 1.0), CPU ratio {cpu_ratio:.2f}; Triton's PTX {report.get('ptx_lines')} lines, cubin "
          f"{report.get('cubin_bytes')} B")
    out = {"python": platform.python_version(), "machine": platform.machine(), "kdd": kdd[1:],
           "triton": report, "pairs": pairs, "median_ratio": round(ratio, 3), "median_cpu_ratio": round(cpu_ratio, 3)}
    write_json(args.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
