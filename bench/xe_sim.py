"""The Xe simulator, timed: ``kdd check --asm`` per example, and the simulator's instructions per second.

For each Xe example (both Xe targets where the config builds for them) a fresh
engine runs the whole on-save ``--asm`` check (build, passes, code generation,
iga64, simulation, reference): the time is what a user waits. With ``--batch
FILE --types T --prop P,... --hw H,...`` it checks the first ``--limit``
problems of a benchdnn batch file instead, each reduced as ``[check]``
reduces a shape, with default configs. Prints a table and writes JSON to ``bench/results/xe_sim.json`` (or
``--json``). No asserts on time.

    .venv/bin/python bench/xe_sim.py
    .venv/bin/python bench/xe_sim.py --batch ../shared/data/benchdnn/conv/shapes_resnet_50 --types bf16 \
        --prop fwd,bwd_d,bwd_w --json bench/results/xe_sim_resnet50_bf16.json
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from kdd.core.engine import Engine
from kdd.core.engine.engine import Source

ROOT = Path(__file__).resolve().parents[1]


def _check(text: str, path: str, hw: str, shape: str | None = None) -> dict:
    start = time.perf_counter()
    out = Engine().check(Source(text, path), shape=shape, target=hw, asm=True)
    return {"seconds": time.perf_counter() - start, **out}


def _row(name: str, hw: str, out: dict) -> dict:
    sim = out.get("asm", {})
    return {"name": name, "hw": hw, "ok": out.get("ok", False), "check_s": round(out["seconds"], 3),
            "sim_ms": sim.get("sim_ms"), "instructions": sim.get("instructions"),
            "thread_instructions": sim.get("thread_instructions"), "instructions_per_s": sim.get("instructions_per_s"),
            "why": out.get("error") or (out.get("failure") or {}).get("message")}


def examples() -> list[dict]:
    rows = []
    for path in sorted((ROOT / "examples").glob("*.kernel.toml")):
        text = path.read_text()
        for hw in ("xehpg", "xehpc"):
            out = _check(text, str(path), hw)
            if (out.get("failure") or {}).get("stage") in ("build", "input"):
                continue          # an sm_90 config, or one that does not build for this target
            rows.append(_row(path.name.split(".")[0], hw, out))
    return rows


def batch(file: str, types: str, props: list[str], hws: list[str], limit: int) -> list[dict]:
    """The first ``limit`` problems of a batch file for each prop and target, each checked at the size
    ``[check]`` reduces it to, with default configs."""
    from dataclasses import replace

    from kdd.core.problem.batch_file import read_batch_file

    rows = []
    for entry in read_batch_file(file)[:limit]:
        p = entry.problem
        shape = replace(p.shape, name=None).canonical()
        for prop in props:
            for hw in hws:      # no [check]: the spec reduces the problem as it does for any large shape
                text = (f'[problem]\nop = "{p.op}"\nprop = "{prop}"\nshape = "{shape}"\ntypes = "{types}"\n'
                        f'[target]\nhw = "{hw}"\n')
                out = _check(text, "batch.kernel.toml", hw)
                rows.append(_row(f"{prop} {types} {out.get('shape', shape)}", hw, out))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch")
    ap.add_argument("--types", default="f16")
    ap.add_argument("--prop", default="fwd", help="comma-separated: fwd,bwd_d,bwd_w")
    ap.add_argument("--hw", default="xehpg,xehpc", help="comma-separated targets")
    ap.add_argument("--limit", type=int, default=6, help="problems taken from the batch file")
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "xe_sim.json"))
    args = ap.parse_args()
    rows = batch(args.batch, args.types, args.prop.split(","), args.hw.split(","), args.limit) if args.batch \
        else examples()
    print(f"{'kernel':<34} {'hw':<6} {'ok':<5} {'check s':>8} {'sim ms':>8} {'instr':>7} {'thread-instr':>12} "
          f"{'instr/s':>9}")
    for r in rows:
        print(f"{r['name']:<34} {r['hw']:<6} {str(r['ok']):<5} {r['check_s']:>8.2f} {r['sim_ms'] or 0:>8.0f} "
              f"{r['instructions'] or 0:>7} {r['thread_instructions'] or 0:>12} {r['instructions_per_s'] or 0:>9}"
              + (f"  {r['why'][:90]}" if r["why"] else ""))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"machine": platform.node(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
