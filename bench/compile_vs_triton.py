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

Prints each pair and the median ratio kdd / Triton (the issue's bound: <=
1.0) and writes JSON (default ``bench/results/compile_vs_triton.json``). No
asserts on time.

    .venv/bin/python bench/compile_vs_triton.py [--rounds 5] [--triton-python PATH] [--json PATH]
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
CONFIG = ROOT / "examples" / "sm90_gemm.kernel.toml"


def timed(argv: list[str], env: dict) -> tuple[float, str]:
    """Wall seconds and stdout of a fresh process; a failure stops the run (its time is no figure)."""
    t0 = time.perf_counter()
    run = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - t0
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {run.returncode}: {run.stderr[-800:]}")
    return seconds, run.stdout


def triton_run(python: str) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory(prefix="triton-cache-") as cache:
        env = dict(os.environ, TRITON_CACHE_DIR=cache, TRITON_DEFAULT_FP_FUSION="1")
        seconds, out = timed([python, str(ROOT / "bench" / "triton_matmul.py")], env)
    return seconds, json.loads(out.strip().splitlines()[-1])


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
    pairs, report = [], {}
    print(f"{'round':>5} {'kdd s':>7} {'triton s':>9} {'ratio':>6}")
    for i in range(args.rounds):
        if i % 2:
            (t, report), (k, _) = triton_run(args.triton_python), timed(kdd, dict(os.environ))
        else:
            (k, _), (t, report) = timed(kdd, dict(os.environ)), triton_run(args.triton_python)
        pairs.append({"kdd_s": k, "triton_s": t, "ratio": k / t})
        print(f"{i:>5} {k:7.2f} {t:9.2f} {k / t:6.2f}")
    ratio = statistics.median(p["ratio"] for p in pairs)
    print(f"kdd / Triton {report.get('triton')}: median ratio {ratio:.2f} over {args.rounds} pairs (issue: <= 1.0); "
          f"Triton's PTX {report.get('ptx_lines')} lines, cubin {report.get('cubin_bytes')} B")
    out = {"python": platform.python_version(), "machine": platform.machine(), "kdd": kdd[1:],
           "triton": report, "pairs": pairs, "median_ratio": round(ratio, 3)}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
