"""Depthwise convolutions under the defaults (``mad`` with the channels in lanes) and under the defaults of
c0f6f57 (``dpas``, before the defaults measured lanes; their config lines are kept here), figures from the
assembly.

For each line (a MobileNet-sized layer, oneDNN's depthwise lookup-table problems, a benchdnn ``g17`` tail),
f16, ``kdd compile --emit stats --json`` of the config with no knob and of c0f6f57's line: the config line, registers by the allocator, per reduction iteration of the
assembly's main loop its multiply instructions, sends and ALU instructions (int + float + moves) per multiply,
the useful share of the issued multiply lanes (counted on the IR) and the multiply-adds issued in all; then
``kdd check`` (the assembly in kdd's simulator, at the check's reduced shape): its verdict and the thread
instructions it simulated.

Prints the table and writes the rows as JSON (default ``bench/results/depthwise.json``).

    .venv/bin/python bench/depthwise.py [--json PATH] [--no-check]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from kdd.core.engine import Engine, Source

ROOT = Path(__file__).resolve().parents[1]
# (shape, target, c0f6f57's default config line)
LINES = [("mb32g32ic32oc32ih112oh112kh3ph1", "xehpg", "fma=dpas simd=8 regs=256 l=kh3 T=ow4 i=mb32ow2oc8kw16 s=x3.b"),
         ("mb1g64ic64ih16oc64oh16kh3ph1", "xehpc", "fma=dpas simd=16 regs=256 l=kh3 T=oh2 i=oh8ow16oc16kw16 s=x3.b"),
         ("mb128g144ic144ih151oc144oh75kh3sh2ph0", "xehpg",
          "fma=dpas simd=8 regs=256 l=kh3 T=mb2ow2 i=mb64oc8kw16 s=x3.b"),
         ("mb128g40ic40ih150oc40oh150kh3ph1", "xehpg", "fma=dpas simd=8 regs=256 l=kh3 T=oh2ow2 i=mb64oc8kw16 s=x3.b"),
         ("g17ic17oc17_ih8oh4kh3ph1sh2", "xehpc", "fma=dpas simd=16 regs=256 l=kh3 T=x i=oh2ow4oc16kw16 s=x0")]
SHOWN = ("fma", "simd", "regs", "l", "T", "i", "s")  # the knobs the defaults choose for these problems


def document(shape: str, hw: str, line: str | None) -> str:
    config = f'[config]\nline = "{line}"\n' if line else ""
    return (f'[problem]\nop = "conv"\nprop = "fwd"\nshape = "{shape}"\ntypes = "f16:f16:f16"\n'
            f'[target]\nhw = "{hw}"\n{config}')


def row(engine: Engine, shape: str, hw: str, line: str | None, check: bool) -> dict:
    source = Source(document(shape, hw, line))
    out = engine.compile(source, "stats")
    stats, asm, lanes = out["stats"], out["stats"]["asm_loop"] or {}, out["stats"]["lanes"] or {}
    shown = " ".join(w for w in out["config"].split() if w.split("=")[0] in SHOWN)
    result = engine.check(source) if check else {}
    return {"shape": shape, "hw": hw, "config": "c0f6f57" if line else "defaults", "line": shown,
            "grfs": stats["registers"]["estimate"], "multiplies": asm.get("dpas"), "sends": asm.get("sends"),
            "alu_per_multiply": asm.get("alu_per_dpas"), "useful_lanes": lanes.get("fraction"),
            "issued": lanes.get("issued"), "verdict": result.get("verdict"),
            "simulated": (result.get("asm") or {}).get("thread_instructions")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "depthwise.json"))
    ap.add_argument("--no-check", action="store_true", help="skip kdd check")
    args = ap.parse_args()
    engine = Engine()
    rows = [row(engine, shape, hw, line, not args.no_check) for shape, hw, before in LINES for line in (before, None)]
    head = ("shape", "hw", "config", "grfs", "multiplies", "sends", "alu_per_multiply", "useful_lanes", "verdict",
            "simulated")
    print(" | ".join(head))
    for r in rows:
        print(" | ".join("" if r[k] is None else f"{r[k]:.1%}" if k == "useful_lanes" else str(r[k]) for k in head))
        print(f"    {r['line']}")
    Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
