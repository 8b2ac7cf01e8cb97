"""The steady-state main loop per reduction iteration, in the final IR and in the assembly.

For each ``examples/*.kernel.toml`` (its real problem shape, its own config),
each 1x1 and 3x3 layer of ``../shared/data/benchdnn/conv/shapes_resnet_50``
(fwd, f16, xehpg, the default config) and, with ``--onednn``, oneDNN's shipped
conv lookup-table lines taken as written (``tests/data/onednn/conv_lookup_table.txt``,
the lines ``kdd sweep onednn:FILE`` runs, one concrete type each), the table
shows ``kdd compile FILE --emit stats --json``: its ``loop`` (source ``IR``,
the final IR) and its ``asm_loop`` (source ``assembly``, the code generator's
listing) side by side. Per reduction iteration: multiply instructions
(``dpas``, ``mma``, or ``mad``/``dp4a``), sends and the fewest sends their
bytes need at the target's largest block message (and the ratio), integer,
float and move instructions and their sum against the multiplies; and the
registers: the allocator's (or the IR register model's) figure, the floor that
can refuse a config before the build (C, A and B tiles), the budget. The
oneDNN rows end with the median and worst assembly ALU per multiply of each
target x prop.

Prints the tables and writes the rows as JSON (default
``bench/results/loop_stats.json``).

    .venv/bin/python bench/loop_stats.py [--batch PATH] [--json PATH]
        [--onednn xehpg:fwd,xehpc:bwd_d,...] [--types f16] [--every N] [--no-examples] [--no-layers]
    .venv/bin/python bench/loop_stats.py --sweep LINES.jsonl [--json PATH]

``--sweep`` summarizes instead the rows of a ``kdd sweep onednn:...`` run (every line of the table, e.g. on
a many-core host by ``tools/device_scale.sh``): per target, prop, type and multiply instruction, the
median and worst assembly ALU per multiply, how many lines are at or under 1 and 2, and the sends over
the fewest.
"""
from __future__ import annotations

import argparse
import json
import platform
from collections import Counter
from pathlib import Path
from statistics import median

from kdd.core.engine import Engine, Source
from kdd.core.problem.batch_file import read_batch_file
from kdd.core.problem.lookup_entry import read_lookup_table

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
RESNET = ROOT.parent / "shared" / "data" / "benchdnn" / "conv" / "shapes_resnet_50"
LOOKUP = ROOT / "tests" / "data" / "onednn" / "conv_lookup_table.txt"
LAYER_DOC = '[problem]\nop = "conv"\nprop = "fwd"\nshape = "{shape}"\ntypes = "f16"\n\n[target]\nhw = "xehpg"\n'


def example_sources() -> list[tuple[str, Source]]:
    return [(p.name[: -len(".kernel.toml")], Source(p.read_text(), str(p)))
            for p in sorted(EXAMPLES.glob("*.kernel.toml"))]


def layer_sources(batch: Path) -> list[tuple[str, Source]]:
    """The batch file's 1x1 and 3x3 convolutions, each as a document (fwd, f16, xehpg, default config)."""
    out = []
    for entry in read_batch_file(batch, op="conv"):
        shape = entry.problem.shape
        if (shape.kh, shape.kw) not in ((1, 1), (3, 3)):
            continue
        name = (shape.name or entry.text).split(":")[-1].split("*")[0]
        desc = shape.canonical().split('n"')[0]
        out.append((name, Source(LAYER_DOC.format(shape=desc), f"{name}.kernel.toml")))
    return out


def onednn_sources(table: Path, groups: list[tuple[str, str]], types: set[str],
                   every: int) -> dict[tuple[str, str], list[tuple[str, Source]]]:
    """oneDNN's lookup-table lines of each (target, prop) as written, one document per concrete type
    in ``types`` (all of them when empty); every ``every``-th line of a group (1: all)."""
    entries = read_lookup_table(table.read_text())
    out = {}
    for target, prop in groups:
        picked = [e for e in entries if e.target == target and e.prop == prop][::every]
        out[(target, prop)] = [(f"{e.fma} {v.label} mb{e.mb} {e.desc}", Source(e.document(v), f"{table}:{target}"))
                               for e in picked for v in e.variants() if not types or v.label in types]
    return out


def row(engine: Engine, name: str, source: Source) -> dict:
    """``kdd compile --emit stats --json``'s loop figures: the final IR's and the assembly's."""
    out = engine.compile(source, emit="stats")
    if not out["ok"] and "stats" not in out:
        return {"name": name, "ok": False, "error": out.get("error", "")}
    stats = out["stats"]
    regs = stats["registers"]
    failure = None if out["ok"] else out.get("error", "")
    return {"name": name, "ok": True, "config": out["config"], "target": out["target"], "loop": stats["loop"],
            "asm_loop": stats["asm_loop"], "codegen_error": failure,
            "registers": {"floor": sum(regs["floor"].values()), "estimate": regs["estimate"],
                          "source": regs["source"], "budget": regs["budget"]}}


def _alu_per_fma(loop: dict) -> float:
    return loop.get("alu_per_dpas", (loop["int_ops"] + loop["float_ops"] + loop["moves"]) / loop["dpas"])


def _figures(loop: dict | None) -> str:
    if loop is None:
        return f"{'-':>6}{'-':>7}{'-':>5}{'-':>6}{'-':>9}{'-':>6}{'-':>8}{'-':>8}"
    return (f"{loop['dpas']:>6g}{loop['sends']:>7g}{loop['min_sends']:>5}{loop['sends'] / loop['min_sends']:>6.1f}"
            f"{loop['int_ops']:>9g}{loop['float_ops']:>6g}{loop['moves']:>8g}{_alu_per_fma(loop):>8.2f}")


def table(rows: list[dict]) -> str:
    cols = f"{'mul':>6}{'sends':>7}{'min':>5}{'x':>6}{'int':>9}{'float':>6}{'moves':>8}{'alu/mul':>8}"
    width = max([22] + [len(r["name"]) + 2 for r in rows])
    lines = [f"{'':<{width}}{'':>6} | {'final IR':<{len(cols)}} | {'assembly':<{len(cols)}} |",
             f"{'kernel':<{width}}{'fma':>6} | {cols} | {cols} | regs/floor/budget"]
    for r in rows:
        if not r["ok"]:
            lines.append(f"{r['name']:<{width}}  failed: {r['error'][:100]}")
            continue
        loop, regs = r["loop"], r["registers"]
        reg_text = f"{regs['estimate']}/{regs['floor']}/{regs['budget']}"
        if loop is None:
            lines.append(f"{r['name']:<{width}}{'(no main loop)':>40}   {reg_text}")
            continue
        note = f"  codegen: {r['codegen_error'][:60]}" if r["codegen_error"] else ""
        lines.append(f"{r['name']:<{width}}{loop['fma']:>6} | {_figures(loop)} | {_figures(r['asm_loop'])} | "
                     f"{reg_text}{note}")
    return "\n".join(lines)


def summary(rows: list[dict]) -> dict:
    """Median and worst assembly ALU per multiply and sends per fewest sends over the dpas rows."""
    asm = [r["asm_loop"] for r in rows if r["ok"] and r["asm_loop"] and r["loop"]["fma"] == "dpas"]
    if not asm:
        return {"rows": len(rows), "dpas_rows": 0}
    alu = [a["alu_per_dpas"] for a in asm]
    sends = [a["sends"] / a["min_sends"] for a in asm if a["min_sends"]]
    return {"rows": len(rows), "dpas_rows": len(asm), "failed": sum(not r["ok"] for r in rows),
            "alu_per_dpas": {"median": round(median(alu), 2), "max": max(alu)},
            "sends_over_min": {"median": round(median(sends), 2), "max": round(max(sends), 2)}}


def sweep_groups(path: Path) -> dict[str, dict]:
    """The assembly's main-loop figures of a ``kdd sweep`` output (JSON lines of a compile, asm or check
    stage: each row's ``stats.asm_loop`` is the full problem's), summarized per target, prop, type and
    multiply instruction; how many lines are at or under 1 and 2 ALU per multiply, and those without
    an assembly figure (their verdict)."""
    groups: dict[str, dict] = {}
    for text in path.read_text().splitlines():
        r = json.loads(text)
        task, stats = r["task"], r.get("stats") or {}
        loop, fma = stats.get("asm_loop"), (stats.get("loop") or {}).get("fma", "?")
        key = f"{task['target']} {task['prop']} {task['type']} {fma}"
        g = groups.setdefault(key, {"alu": [], "sends": [], "none": []})
        if loop and loop.get("dpas"):
            g["alu"].append(loop["alu_per_dpas"])
            if loop.get("min_sends"):
                g["sends"].append(loop["sends"] / loop["min_sends"])
        else:
            verdict = r.get("verdict") or {}
            g["none"].append(f"no loop figure, {verdict.get('class') or verdict.get('outcome')}")
    out = {}
    for key, g in sorted(groups.items()):
        alu = g["alu"]
        out[key] = {"lines": len(alu) + len(g["none"]), "measured": len(alu),
                    "median": round(median(alu), 2) if alu else None, "at_most_1": sum(a <= 1 for a in alu),
                    "at_most_2": sum(a <= 2 for a in alu), "worst": max(alu, default=None),
                    "sends_over_min_median": round(median(g["sends"]), 2) if g["sends"] else None,
                    "unmeasured": dict(Counter(g["none"]))}
    return out


def sweep_table(groups: dict[str, dict]) -> str:
    lines = [f"{'target prop type fma':<32}{'lines':>6}{'median':>8}{'<=1':>6}{'<=2':>6}{'worst':>9}{'sends x':>9}"
             "  without a figure"]
    for key, g in groups.items():
        num = lambda v, width: f"{v:>{width}.2f}" if v is not None else f"{'-':>{width}}"
        lines.append(f"{key:<32}{g['lines']:>6}{num(g['median'], 8)}{g['at_most_1']:>6}{g['at_most_2']:>6}"
                     f"{num(g['worst'], 9)}{num(g['sends_over_min_median'], 9)}  "
                     f"{', '.join(f'{k}: {v}' for k, v in g['unmeasured'].items())}")
    return "\n".join(lines)


def _groups(text: str) -> list[tuple[str, str]]:
    out = []
    for item in text.split(","):
        target, _, prop = item.strip().partition(":")
        out.append((target, prop or "fwd"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=Path, default=RESNET, help="benchdnn conv batch file (its 1x1 and 3x3 layers)")
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "loop_stats.json")
    parser.add_argument("--onednn", default="", help="target:prop groups of oneDNN's lookup-table lines "
                                                     "(xehpg:fwd,xehpc:bwd_w)")
    parser.add_argument("--table", type=Path, default=LOOKUP, help="oneDNN's conv lookup table")
    parser.add_argument("--types", default="", help="concrete type labels of the lines (f16,bf16); all if empty")
    parser.add_argument("--every", type=int, default=1, help="every N-th line of each group")
    parser.add_argument("--no-examples", action="store_true")
    parser.add_argument("--no-layers", action="store_true")
    parser.add_argument("--sweep", type=Path, help="summarize a kdd sweep's JSON lines (every oneDNN line, e.g. "
                                                  "from tools/device_scale.sh) instead of compiling")
    args = parser.parse_args()
    if args.sweep:
        groups = sweep_groups(args.sweep)
        print(f"oneDNN lines of {args.sweep.name}: assembly ALU per multiply in the main loop, per group")
        print(sweep_table(groups))
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"sweep": str(args.sweep), "groups": groups}, indent=1) + "\n")
        print(f"\nwrote {args.json}")
        return
    engine = Engine()
    result: dict = {"machine": platform.node()}
    print("Main loop per reduction iteration (per SIMD thread), final IR and assembly; x = sends / min; "
          "alu/mul = (int + float + moves) / multiplies")
    if not args.no_examples:
        result["examples"] = [row(engine, name, src) for name, src in example_sources()]
        print("\nexamples (their real shapes and configs)")
        print(table(result["examples"]))
    if not args.no_layers:
        result["layers"] = [row(engine, name, src) for name, src in layer_sources(args.batch)]
        print(f"\n{args.batch.name}: 1x1 and 3x3 layers, fwd f16 xehpg, default config")
        print(table(result["layers"]))
    if args.onednn:
        types = {t for t in args.types.split(",") if t}
        result["onednn"] = {}
        for (target, prop), sources in onednn_sources(args.table, _groups(args.onednn), types, args.every).items():
            rows = [row(engine, name, src) for name, src in sources]
            summ = summary(rows)
            result["onednn"][f"{target}:{prop}"] = {"every": args.every, "rows": rows, "summary": summ}
            print(f"\noneDNN {args.table.name}: {target} {prop}, lines as written (every {args.every}), "
                  f"types {','.join(sorted(types)) or 'all'}")
            print(table(rows))
            print(f"summary: {json.dumps(summ)}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
