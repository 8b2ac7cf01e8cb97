"""Count how many of oneDNN's shipped conv config lines kdd builds and fits, and why the others are refused.

Reads oneDNN's conv lookup table (``tests/data/onednn/conv_lookup_table.txt``,
see its README), and for every entry and every concrete type of its type class
(:meth:`kdd.core.problem.lookup_entry.LookupEntry.variants`) writes the kernel
config a user would (the problem, ``hw``, and ``line`` = the entry's config
line with its ``fma``), then runs it through the engine as ``kdd compile
--emit stats`` does: the config's diagnostics (a refusal is its first error),
the build, the passes and the code generator's register allocation (``fits``:
the allocator placed every register within ``regs``); ``--stage check`` also
runs ``kdd check --bisect`` on the reduced shape the document gets. Prints a table per
target, prop and type and the refusals grouped by diagnostic, and writes JSON
to ``bench/results/onednn_lines.json``.

    .venv/bin/python tools/onednn_lines.py [--stage config|build|codegen|check] [--jobs N] [--only xehpg/fwd]
        [--type tf32]
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "tests/data/onednn/conv_lookup_table.txt"
OUT = ROOT / "bench/results/onednn_lines.json"
STAGES = ("config", "build", "codegen", "check")


def reason(message: str) -> str:
    """A refusal's diagnostic without its figures, so that like refusals group together."""
    message = re.sub(r"\s*\(in the \[check\] shape [^)]*\)", "", message)
    message = re.split(r" \(|; |: (?=\d)", message)[0]
    return re.sub(r"(?<![a-z0-9])\d+", "N", message)


def run_one(item: tuple[str, str, str, bool]) -> dict:
    """Compile one entry variant; the outcome as a row of plain data."""
    from kdd.core.engine import Engine
    from kdd.core.engine.engine import Source
    from kdd.core.problem.lookup_entry import LookupEntry

    line, label, stage, unbounded = item
    entry = LookupEntry.parse(line)
    variant = next(v for v in entry.variants() if v.label == label)
    row = {"entry": line, "target": entry.target, "prop": entry.prop, "type": label}
    engine = _ENGINE.setdefault("engine", Engine())
    source = Source(entry.document(variant))
    parsed = engine.parse(source)
    errors = [d for d in parsed.diagnostics if d.severity.name == "ERROR"]
    if errors:
        return row | {"outcome": "refused", "stage": "config", "message": errors[0].message,
                      "reason": reason(errors[0].message), "reasons": sorted({reason(e.message) for e in errors})}
    if stage == "config":
        return row | {"outcome": "accepted"}
    out = engine.compile(source, emit="ir" if stage == "build" else "stats")
    if not out["ok"]:
        f = out["failure"]
        return row | {"outcome": "refused", "stage": f["stage"], "message": f["message"],
                      "reason": reason(f["message"])}
    if stage == "build":
        return row | {"outcome": "accepted"}
    regs = out["stats"]["registers"]
    codegen = out["stats"]["codegen"]
    row |= {"estimate": regs["estimate"], "budget": regs["budget"]}
    if not codegen["ok"]:
        f = codegen["failure"]
        return row | {"outcome": "refused", "stage": f["stage"], "message": f["message"],
                      "reason": reason(f["message"])}
    row["allocated"] = codegen["allocated"]
    if stage == "check":  # kdd check --bisect on the reduced shape the document gets
        checked = engine.check(source, bisect_passes=True, unbounded=unbounded)
        if "first_bad" not in checked:
            f = checked["failure"]
            return row | {"outcome": "refused", "stage": "check", "message": f["message"],
                          "reason": reason(f["message"])}
        if checked["first_bad"] is not None:
            message = f"wrong result after {checked['first_bad']}"
            return row | {"outcome": "refused", "stage": "check", "message": message, "reason": message}
    return row | {"outcome": "accepted"}


_ENGINE: dict = {}


def items(stage: str, only: str | None, label: str | None = None,
          unbounded: bool = False) -> list[tuple[str, str, str, bool]]:
    """``(entry line, type label, stage, unbounded)`` for every variant of every entry (of ``only``'s
    target/prop; of type ``label`` alone when given)."""
    from kdd.core.problem.lookup_entry import LookupEntry

    out = []
    for line in TABLE.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        entry = LookupEntry.parse(line)
        if only and only not in (entry.target, f"{entry.target}/{entry.prop}"):
            continue
        out += [(line, v.label, stage, unbounded) for v in entry.variants() if label in (None, v.label)]
    return out


def table(rows: list[dict]) -> list[dict]:
    """Per target, prop and type: how many entries, how many build and fit, refusals by reason."""
    groups: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["target"], r["prop"], r["type"])].append(r)
    out = []
    for (target, prop, typ), rs in sorted(groups.items()):
        refused = Counter(r["reason"] for r in rs if r["outcome"] == "refused")
        out.append({"target": target, "prop": prop, "type": typ, "lines": len(rs),
                    "accepted": sum(r["outcome"] == "accepted" for r in rs), "refused": dict(refused.most_common())})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stage", choices=STAGES, default="codegen",
                    help="how far to take each line: its config diagnostics, the build, the register "
                         "allocation (default), or that and kdd check --bisect on its reduced shape (slow)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--only", help="one target (xehpg) or target/prop (xehpc/bwd_w)")
    ap.add_argument("--type", help="one type label of the table (tf32, u8:s8:u8, f16...)")
    ap.add_argument("--unbounded", action="store_true",
                    help="with --stage check, interpret reduced shapes over the interpreter's bound too (slower)")
    ap.add_argument("--json", type=Path, default=OUT, help=f"where to write the rows (default {OUT})")
    args = ap.parse_args(argv)
    work = items(args.stage, args.only, args.type, args.unbounded)
    start = time.perf_counter()
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            rows = list(pool.map(run_one, work, chunksize=4))
    else:
        rows = [run_one(w) for w in work]
    seconds = time.perf_counter() - start
    summary = table(rows)
    accepted_word = {"config": "accepted", "build": "built", "codegen": "build+fit", "check": "checked"}[args.stage]
    print(f"{'target':7} {'prop':6} {'type':9} {'lines':>5} {accepted_word:>9}  refused (reason: count)")
    for g in summary:
        reasons = "; ".join(f"{k}: {v}" for k, v in g["refused"].items())
        print(f"{g['target']:7} {g['prop']:6} {g['type']:9} {g['lines']:5} {g['accepted']:9}  {reasons}")
    total = len(rows)
    ok = sum(r["outcome"] == "accepted" for r in rows)
    print(f"all: {ok} of {total} {accepted_word} ({seconds:.0f} s, stage {args.stage})")
    by_reason = Counter(r["reason"] for r in rows if r["outcome"] == "refused")
    alone = Counter(r["reasons"][0] for r in rows if len(r.get("reasons", ())) == 1)
    print("refusals by first diagnostic (count, lines with no other diagnostic):")
    for why, n in by_reason.most_common():
        print(f"  {n:4} {alone.get(why, 0):4}  {why}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"stage": args.stage, "table": str(TABLE.relative_to(ROOT)),
                                     "summary": summary, "rows": rows, "seconds": round(seconds, 1)}, indent=1))
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
