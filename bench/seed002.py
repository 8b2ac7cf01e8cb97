"""Seed 002's B580 optimization log, step by step, as kdd compiles and checks it on xe2.

For each ``examples/seed002/*.kernel.toml`` (base, TRY1, TRY2.0-2.3, TRY3.0, TRY3.1, TRY3.2, its f16 twin and
its u4 variant) the
figures come from the generated Xe2 assembly (``kdd compile --emit stats --json``): registers the
allocator gives each buffer at the peak (C, A, B, the raw key bytes, the scale and zero-point pairs),
the instructions per thread by pipe (float = ALU0, int = ALU1, xmx = ALU2, sends; dynamic counts), the
same per reduction iteration of the thread's tile, and the check of the assembly in kdd's simulator
(``kdd check``: relative error, tolerance and the reason it is wider). Prints a table and writes JSON
(default ``bench/results/seed002.json``); ``docs/seed002.md`` reads them beside the seed's counters.

    .venv/bin/python bench/seed002.py [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from kdd.core.engine import Engine, Source

STEPS = ("base", "try1", "try2_0", "try2_1", "try2_2", "try2_3", "try3_0", "try3_1", "try3_2", "try3_2_f16",
         "try3_2_u4")
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "seed002"
K = 128  # the head dimension every step reduces over
BUFFERS = {"c": "c_acc", "a": "a", "b": "b", "raw": "b_raw", "pairs": ("b_scale_pairs", "b_zp_pairs")}


def step_figures(engine: Engine, step: str) -> dict:
    path = EXAMPLES / f"{step}.kernel.toml"
    source = Source(path.read_text(), str(path))
    out = engine.compile(source, "stats")
    codegen = out["stats"]["codegen"]
    by = codegen["by_label"]
    k_iters = K // int(re.search(r"\bi=\S*?k(\d+)", out["config"]).group(1))  # the thread's K steps
    regs = {name: sum(by.get(label, 0) for label in ((labels,) if isinstance(labels, str) else labels))
            for name, labels in BUFFERS.items()}
    check = engine.check(source)
    mix = codegen["mix"]["dynamic"]
    return {"step": step, "config": out["config"], "types": out["problem"]["types"],
            "registers": {"allocated": codegen["allocated"], **regs}, "mix_per_thread": mix,
            "k_iterations": k_iters,
            "mix_per_k_step": {pipe: round(count / k_iters, 2) for pipe, count in mix.items()},
            "check": {k: check.get(k) for k in ("verdict", "rel_err", "tol", "tol_reason", "artifact")}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default=str(Path(__file__).parent / "results" / "seed002.json"))
    args = parser.parse_args()
    engine = Engine()
    rows = [step_figures(engine, step) for step in STEPS]
    head = f"{'step':<11}{'regs':>5}{'c':>5}{'a':>4}{'b':>4}{'raw':>4}{'pair':>5}{'float':>7}{'int':>6}" \
           f"{'xmx':>5}{'send':>6}  check"
    print(head)
    for r in rows:
        g, m, c = r["registers"], r["mix_per_thread"], r["check"]
        print(f"{r['step']:<11}{g['allocated']:>5}{g['c']:>5}{g['a']:>4}{g['b']:>4}{g['raw']:>4}{g['pairs']:>5}"
              f"{m['float']:>7}{m['int']:>6}{m['xmx']:>5}{m['send']:>6}  {c['verdict']} "
              f"{c['rel_err']:.2e} <= {c['tol']:.2e}")
    Path(args.json).write_text(json.dumps({"steps": rows}, indent=1) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
