"""The differential sweep: random kernels checked by the interpreter and by their generated code in its
simulator (xesim for Xe-HPG/Xe-HPC, ptxsim for sm_90); both must agree (tests/differential.py says how
each kernel is drawn and what each outcome means).

    .venv/bin/python bench/differential.py --seed 7 --count 500

Prints the agreement counts (agree / disagree / not-checkable, by reason) and every disagreement, and
writes every record to JSON (bench/results/differential.json, or ``--json``; while it runs, each record
goes to ``differential.partial.jsonl`` beside it, removed at the end). No asserts.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from differential import TARGETS, counts, sweep  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--count", type=int, default=100, help="kernels to check (each built and under the size bound)")
    ap.add_argument("--targets", default=",".join(TARGETS))
    ap.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "differential.json")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    args.json.parent.mkdir(parents=True, exist_ok=True)
    partial = args.json.with_suffix(".partial.jsonl")      # every record as it comes: a cut-short run keeps them
    partial.write_text("")
    done = [0]

    def progress(r: dict) -> None:
        done[0] += 1
        with partial.open("a") as f:
            f.write(json.dumps(r, default=str) + "\n")
        if done[0] % 10 == 0:
            print(f"[{done[0]} kernels, {time.perf_counter() - start:.0f} s]", flush=True)
        if r["outcome"] != "agree":
            print(f"{r['outcome']:14} {r['reason'] or '':18} {r['target']:6} {r['problem']['shape']} "
                  f"{r['problem']['types']['canonical']} {r['problem']['post_ops']} | {r['config']} "
                  f"| {str(r.get('detail', r.get('code', '')))[:200]}", flush=True)

    records = sweep(args.seed, args.count, tuple(args.targets.split(",")), on_case=progress)
    summary = counts(records)
    seconds = time.perf_counter() - start
    by_target = {t: counts([r for r in records if r["target"] == t]) for t in args.targets.split(",")}
    print(f"\nseed {args.seed}: {summary['cases']} kernels in {seconds:.0f} s")
    print("| target | kernels | agree | disagree | not checkable | IR faults |\n|---|---|---|---|---|---|")
    for t, c in [*by_target.items(), ("all", summary)]:
        print(f"| {t} | {c['cases']} | {c['agree']} | {c['disagree']} | {c['not-checkable']} | {c['ir-fault']} |")
    for reason, n in sorted(summary["reasons"].items()):
        print(f"  {reason}: {n}")
    args.json.write_text(json.dumps({"seed": args.seed, "count": args.count, "seconds": round(seconds, 1),
                                     "machine": platform.node(), "summary": summary, "by_target": by_target,
                                     "records": records}, indent=1, default=str))
    partial.unlink()
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
