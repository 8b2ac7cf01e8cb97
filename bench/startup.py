"""Wall time of short ``kdd`` commands from the shell, start-up included: what a user waits for.

Each command runs ``--repeat`` times as a fresh process; the table shows the
median and the best, beside the targets (``kdd --version`` and ``--help``
under 150 ms, ``kdd shape`` under 300 ms, ``kdd compile FILE --emit passes``
median over the examples under 500 ms). Writes JSON (default
``bench/results/startup.json``). No asserts on time.

    .venv/bin/python bench/startup.py [--repeat 5] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KDD = str(Path(sys.executable).parent / "kdd")


def timed(argv: list[str], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([KDD, *argv], capture_output=True, check=False)
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "startup.json"))
    args = ap.parse_args()
    rows = [("kdd --version", ["--version"], 150), ("kdd --help", ["--help"], 150),
            ("kdd shape", ["shape", "mb32ic64ih56oc64oh56kh3ph1"], 300)]
    results = {name: timed(argv, args.repeat) for name, argv, _ in rows}
    examples = sorted((ROOT / "examples").glob("*.kernel.toml"))
    per_example = {p.stem: statistics.median(timed(["compile", str(p), "--emit", "passes"], max(1, args.repeat // 2)))
                   for p in examples}
    print(f"{'command':<36} {'median ms':>10} {'best ms':>9}  target")
    for name, _, target in rows:
        print(f"{name:<36} {statistics.median(results[name]):>10.0f} {min(results[name]):>9.0f}  < {target}")
    med = statistics.median(per_example.values())
    print(f"{'kdd compile --emit passes (median)':<36} {med:>10.0f} {min(per_example.values()):>9.0f}  < 500")
    for name, ms in per_example.items():
        print(f"  {name:<34} {ms:>10.0f}")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"commands": results, "compile_passes_ms": per_example}, indent=1))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
