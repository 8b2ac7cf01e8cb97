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
to ``bench/results/onednn_lines.json``. ``--rows FILE`` also appends each row to a JSON-lines file as
it is done, so a run cut off keeps what it finished; ``--summarize FILE...`` prints the tables of such
files (several runs' shares of the lines) instead of running anything. The check stage starts the lines
whose check interprets the most multiply-adds first, so that many workers finish together.

    .venv/bin/python tools/onednn_lines.py [--stage config|build|codegen|check] [--jobs N] [--only xehpg/fwd]
        [--type tf32] [--unbounded] [--rows FILE] [--shard K/N]
    .venv/bin/python tools/onednn_lines.py --summarize FILE [FILE ...]
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor, as_completed
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
    """Compile one entry variant; the outcome as a row of plain data, with the CPU seconds it took."""
    line, label, stage, unbounded = item
    start = time.process_time()
    row = _run_one(line, label, stage, unbounded)
    return row | {"run": stage, "cpu_s": round(time.process_time() - start, 2)}


def _run_one(line: str, label: str, stage: str, unbounded: bool) -> dict:
    from kdd.core.engine.engine import Source
    from kdd.core.problem.lookup_entry import LookupEntry

    entry = LookupEntry.parse(line)
    variant = next(v for v in entry.variants() if v.label == label)
    row = {"entry": line, "target": entry.target, "prop": entry.prop, "type": label}
    engine = _engine()
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
        if "first_bad" not in checked:   # not checkable (a simulator gap, over the bound) or failed
            message = checked["reason"] if checked.get("verdict") == "not-checkable" else checked["failure"]["message"]
            return row | {"outcome": "refused", "stage": "check", "message": message, "reason": reason(message)}
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


def check_cost(item: tuple[str, str, str, bool]) -> int:
    """The multiply-adds ``kdd check`` interprets for an item (0 where its config is refused)."""
    from kdd.core.engine.engine import Source
    from kdd.core.problem.lookup_entry import LookupEntry
    from kdd.core.problem.reduced import check_macs

    entry = LookupEntry.parse(item[0])
    variant = next(v for v in entry.variants() if v.label == item[1])
    spec = _engine().parse(Source(entry.document(variant))).spec
    return check_macs(spec.check) if spec is not None and spec.check is not None else 0


def _engine():
    """This process's engine (one per worker, so its caches serve every line the worker runs)."""
    from kdd.core.engine import Engine
    if "engine" not in _ENGINE:
        _ENGINE["engine"] = Engine()
    return _ENGINE["engine"]


def run(work: list, jobs: int, rows_file: Path | None) -> list[dict]:
    """Every item's row, in ``work``'s order; each also appended to ``rows_file`` as it is done."""
    stream = rows_file.open("a", encoding="utf-8") if rows_file else None
    done: dict[int, dict] = {}

    def keep(i: int, row: dict) -> None:
        done[i] = row
        if stream:
            stream.write(json.dumps(row) + "\n")
            stream.flush()
    try:
        if jobs > 1:
            with ProcessPoolExecutor(jobs) as pool:
                futures = {pool.submit(run_one, w): i for i, w in enumerate(work)}
                for f in as_completed(futures):
                    keep(futures[f], f.result())
        else:
            for i, w in enumerate(work):
                keep(i, run_one(w))
    finally:
        if stream:
            stream.close()
    return [done[i] for i in range(len(work))]


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


def report(rows: list[dict], stage: str, seconds: float | None) -> list[dict]:
    """Print the tables of ``rows`` (one run's, at ``stage``); the per-group summary."""
    summary = table(rows)
    accepted_word = {"config": "accepted", "build": "built", "codegen": "build+fit", "check": "checked"}[stage]
    print(f"{'target':7} {'prop':6} {'type':9} {'lines':>5} {accepted_word:>9}  refused (reason: count)")
    for g in summary:
        reasons = "; ".join(f"{k}: {v}" for k, v in g["refused"].items())
        print(f"{g['target']:7} {g['prop']:6} {g['type']:9} {g['lines']:5} {g['accepted']:9}  {reasons}")
    ok = sum(r["outcome"] == "accepted" for r in rows)
    took = f"{seconds:.0f} s, " if seconds is not None else ""
    cpu = sum(r.get("cpu_s", 0) for r in rows)
    print(f"all: {ok} of {len(rows)} {accepted_word} ({took}{cpu:.0f} CPU-s in the workers, stage {stage})")
    by_reason = Counter(r["reason"] for r in rows if r["outcome"] == "refused")
    alone = Counter(r["reasons"][0] for r in rows if len(r.get("reasons", ())) == 1)
    print("refusals by first diagnostic (count, lines with no other diagnostic):")
    for why, n in by_reason.most_common():
        print(f"  {n:4} {alone.get(why, 0):4}  {why}")
    return summary


def summarize(files: list[Path]) -> int:
    """The tables of JSON-lines row files; where a line and type appears more than once, its last row."""
    rows: dict[tuple[str, str], dict] = {}
    for f in files:
        for text in f.read_text(encoding="utf-8").splitlines():
            row = json.loads(text)
            rows[(row["entry"], row["type"])] = row
    stages = {r["run"] for r in rows.values()}
    if len(stages) != 1:
        print(f"the files mix stages {sorted(stages)}: summarize one stage's rows at a time", file=sys.stderr)
        return 2
    report(list(rows.values()), stages.pop(), None)
    return 0


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
    ap.add_argument("--shard", help="K/N: run the K-th (from 0) of N interleaved shares of the lines")
    ap.add_argument("--rows", type=Path, help="append each row to this JSON-lines file as it is done")
    ap.add_argument("--summarize", type=Path, nargs="+", metavar="ROWS",
                    help="print the tables of JSON-lines row files instead of running")
    ap.add_argument("--json", type=Path, default=OUT, help=f"where to write the rows (default {OUT})")
    args = ap.parse_args(argv)
    if args.summarize:
        return summarize(args.summarize)
    work = items(args.stage, args.only, args.type, args.unbounded)
    if args.stage == "check":  # the longest checks first
        work.sort(key=check_cost, reverse=True)
    if args.shard:
        k, n = (int(x) for x in args.shard.split("/"))
        work = work[k::n]
    start = time.perf_counter()
    rows = run(work, args.jobs, args.rows)
    seconds = time.perf_counter() - start
    summary = report(rows, args.stage, seconds)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"stage": args.stage, "table": str(TABLE.relative_to(ROOT)),
                                     "summary": summary, "rows": rows, "seconds": round(seconds, 1)}, indent=1))
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
