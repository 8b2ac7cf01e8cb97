"""Xe code generation, timed: lowering + register allocation, assembly with iga64, verification.

For each Xe example (``examples/*.kernel.toml`` with an Xe target), or for
every problem of a benchdnn batch file (``--batch FILE --types f16 --hw
xehpg``, default configs): build the kernel, run the pass pipeline once
(untimed), then time ``lower_kernel`` (lowering, allocation and the listing
with its IR line map: median of ``--repeat`` runs), ``iga64`` (assemble,
disassemble, reassemble: one run) and the register verifier (one run). Prints
a table and writes JSON to ``bench/results/codegen_xe.json`` (or ``--json``).
No asserts on time.

    .venv/bin/python bench/codegen_xe.py [--repeat 5] [examples/foo.kernel.toml ...]
    .venv/bin/python bench/codegen_xe.py --batch ../shared/data/benchdnn/conv/shapes_resnet_50 --types f16 --hw xehpg
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from dataclasses import replace
from pathlib import Path

from kdd.core.builder import build_kernel
from kdd.core.codegen import CodegenUnsupported, OutOfRegisters, assemble
from kdd.core.codegen.xe import lower_kernel
from kdd.core.codegen.xe.verify import verify
from kdd.core.config.defaults import resolve_config
from kdd.core.passes.kernel_pipeline import run_pipeline
from kdd.core.problem.batch_file import read_batch_file
from kdd.core.problem.data_types import parse_data_types
from kdd.core.spec import load_spec
from kdd.core.targets import get_target


def _ms(fn):
    start = time.perf_counter()
    out = fn()
    return out, (time.perf_counter() - start) * 1e3


def measure(name: str, kernel, target, repeat: int) -> dict:
    row: dict = {"name": name, "target": target.name}
    body = run_pipeline(kernel).final
    times = []
    try:
        for _ in range(repeat):
            listing, ms = _ms(lambda: lower_kernel(kernel, body, target))
            times.append(ms)
    except OutOfRegisters as exc:
        row.update(result="out of registers", detail=str(exc), knobs=exc.knobs)
        return row
    except CodegenUnsupported as exc:
        row.update(result="unsupported", detail=str(exc))
        return row
    report, asm_ms = _ms(lambda: assemble(listing.asm, target.assembler, f"-p={target.xe.iga_platform}"))
    problems, verify_ms = _ms(lambda: verify(listing.to_dict()))
    a = report.to_dict()
    row.update(result="ok" if a["ok"] and not problems else "assembler" if not a["ok"] else "verifier",
               lower_ms=round(statistics.median(times), 1), asm_ms=round(asm_ms, 1),
               verify_ms=round(verify_ms, 1), lines=len(listing.lines), peak=listing.peak,
               budget=listing.budget, ir_model=listing.ir, binary_bytes=a["binary_bytes"],
               round_trip=a["round_trip"], messages=a["messages"][:3], problems=problems[:3])
    return row


def example_kernels(files):
    for path in files:
        spec, _ = load_spec(path.read_text(encoding="utf-8"), str(path))
        if spec is None or spec.target.xe is None:
            continue
        yield path.name, build_kernel(spec.problem, spec.config, spec.target), spec.target


def batch_kernels(path: str, types: str, hw: str, prop: str | None = None):
    target = get_target(hw)
    op = "gemm" if "matmul" in path else "conv"
    for e in read_batch_file(path, op=op):
        problem = replace(e.problem, types=parse_data_types(types))
        if prop is not None:
            problem = replace(problem, prop=prop)
        yield e.text, build_kernel(problem, resolve_config(problem, target, None), target), target


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--batch")
    ap.add_argument("--types", default="f16")
    ap.add_argument("--hw", default="xehpg")
    ap.add_argument("--prop", choices=("fwd", "bwd_d", "bwd_w"), help="with --batch: this propagation kind")
    ap.add_argument("--json", default="bench/results/codegen_xe.json")
    args = ap.parse_args()
    if args.batch:
        kernels = batch_kernels(args.batch, args.types, args.hw, args.prop)
    else:
        kernels = example_kernels(args.files or sorted(Path("examples").glob("*.kernel.toml")))
    rows = []
    print(f"{'kernel':44} {'hw':6} {'lower+alloc':>11} {'iga64':>7} {'verify':>7} {'lines':>6} "
          f"{'peak/budget':>11} {'ir':>4}  result")
    for name, kernel, target in kernels:
        r = measure(name, kernel, target, args.repeat)
        rows.append(r)
        if "lower_ms" not in r:
            print(f"{name[:44]:44} {r['target']:6} {'':>11} {'':>7} {'':>7} {'':>6} {'':>11} {'':>4}  "
                  f"{r['result']}: {r['detail'][:100]}")
            continue
        print(f"{name[:44]:44} {r['target']:6} {r['lower_ms']:9.1f}ms {r['asm_ms']:5.0f}ms {r['verify_ms']:5.0f}ms "
              f"{r['lines']:6} {r['peak']:5}/{r['budget']:<5} {r['ir_model']:>4}  {r['result']}")
    timed = [r["lower_ms"] for r in rows if "lower_ms" in r]
    summary = {"kernels": len(rows), "ok": sum(r["result"] == "ok" for r in rows),
               "out_of_registers": sum(r["result"] == "out of registers" for r in rows),
               "unsupported": sum(r["result"] == "unsupported" for r in rows),
               "lower_ms_median": round(statistics.median(timed), 1) if timed else None}
    print(f"median lower+alloc {summary['lower_ms_median']} ms over {len(timed)} kernels; "
          f"{summary['ok']} ok, {summary['out_of_registers']} out of registers, "
          f"{summary['unsupported']} unsupported")
    out = {"machine": platform.platform(), "python": platform.python_version(),
           "unit": "ms, wall clock; lower+alloc: median of repeats, iga64 and verify: one run",
           "source": args.batch or "examples", "summary": summary, "kernels": rows}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
