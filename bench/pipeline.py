"""The optimization pipeline on every shipped example: its effect and its cost.

For each ``examples/*.kernel.toml`` (at its real problem shape, or its
``[check]`` shape with ``--check-shapes``) the kernel is built and the whole
pass pipeline (``kdd.core.passes.kernel_pipeline``) runs:

- figures before (the builder's IR) and after (the final IR): statements,
  address operations per reduction iteration, address operations in loops,
  barriers executed, estimated registers (``kdd.core.passes.metrics``);
- pipeline time *cold* (an empty pass cache: every pass runs) and *warm* (the
  same kernel built again, so equal but not identical IR, against the filled
  cache: memoization makes every pass free and only the cache's equality
  checks remain), best of ``--repeat`` runs;
- *text -> IR*: the whole in-process path from the config's text to the
  final IR (parse, resolve the config, build, every pass; no memo, no disk
  cache), and *text -> asm*: the same path on through the code generator and
  the target's assembler check (a fresh ``Engine``, nothing memoized), each
  best of ``--repeat`` runs in CPU time (this process's, plus the
  assembler's for text -> asm: the machine is shared, and CPU time is what
  other processes disturb least) and in wall time, with their medians and
  maxima over the examples (text -> asm also over the Xe examples alone);
- the process's memory once every example is compiled, with every example's
  trace (the IR after each pass) and filled pass cache still held, as a
  daemon that compiled each of them would hold them: resident now and at its
  peak.

``--profile N`` also runs cProfile over every example's cold text ->
assembly path (the engine with nothing memoized) and prints the ``N``
functions with the most time of their own, with the total call count.

Prints two tables and writes everything as JSON (default
``bench/results/pipeline.json``). No asserts on time.

    .venv/bin/python bench/pipeline.py [--repeat 3] [--check-shapes] [--profile N] [--json PATH]
"""
from __future__ import annotations

import argparse
import cProfile
import json
import platform
import pstats
import resource
import statistics
import time
from pathlib import Path

from kdd.core.builder import build_kernel
from kdd.core.engine import Engine, Source
from kdd.core.config.defaults import resolve_config
from kdd.core.ir import count_nodes
from kdd.core.passes import PassCache
from kdd.core.passes.kernel_pipeline import run_pipeline
from kdd.core.passes.metrics import kernel_metrics, reduction_iterations
from kdd.core.passes.registers import RegisterModel
from kdd.core.spec import load_spec
from kdd.core.targets import get_target

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
FIGURES = ("stmts", "inner_ops", "loop_ops", "barriers", "regs")


def build(path: Path, check_shape: bool, text: str | None = None):
    spec, _ = load_spec(path.read_text() if text is None else text, str(path))
    problem = spec.check if check_shape else spec.problem
    return build_kernel(problem, resolve_config(problem, spec.target, spec.user_config), spec.target)


def _num(x) -> str:
    return f"{x:.1f}" if isinstance(x, float) else str(x)


def _cpu_s() -> float:
    """CPU seconds of this process and of its finished children (the assembler runs as one)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def best_ms(fn, repeat: int) -> tuple[float, float]:
    """The best CPU time and the best wall time of ``repeat`` runs of ``fn``, in ms."""
    cpu, wall = [], []
    for _ in range(repeat):
        c0, w0 = _cpu_s(), time.perf_counter()
        fn()
        wall.append((time.perf_counter() - w0) * 1e3)
        cpu.append((_cpu_s() - c0) * 1e3)
    return min(cpu), min(wall)


def _rss_mb() -> float:
    """Resident memory of this process now (Linux ``/proc``; the peak where that is missing)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return pages * resource.getpagesize() / 2**20


def measure(path: Path, repeat: int, check_shape: bool, keep: list) -> dict:
    """The figures of one example; its trace and pass cache are appended to ``keep``."""
    kernel = build(path, check_shape)
    cold, _ = best_ms(lambda: run_pipeline(kernel, cache=PassCache()), repeat)
    cache = PassCache()
    trace = run_pipeline(kernel, cache=cache)
    keep.append((trace, cache))
    again = build(path, check_shape)  # equal IR, new objects: what a daemon sees after a no-op edit
    warm, _ = best_ms(lambda: run_pipeline(again, cache=cache), repeat)
    text = path.read_text()
    to_ir_cpu, to_ir_wall = best_ms(lambda: run_pipeline(build(path, check_shape, text), cache=PassCache()), repeat)
    # The whole path a compile takes, assembly included, through the engine with nothing memoized.
    to_asm_cpu, to_asm_wall = best_ms(lambda: Engine().compile(Source(text, str(path)),
                                               "asm", kernel.problem.shape.canonical() if check_shape else None),
                     repeat)
    model = RegisterModel.of(get_target(kernel.target))
    iterations = reduction_iterations(kernel.body)
    before = kernel_metrics(kernel.body, model, iterations).to_dict()
    after = kernel_metrics(trace.final, model, iterations).to_dict()
    return {"example": path.name[: -len(".kernel.toml")], "target": kernel.target,
            "config": kernel.config.line(), "shape": kernel.problem.shape.canonical(),
            "nodes_built": count_nodes(kernel.body), "nodes_final": count_nodes(trace.final),
            "changed": [e.name for e in trace.entries if e.changed],
            "cold_ms": round(cold, 2), "warm_ms": round(warm, 3),
            "text_to_ir_ms": round(to_ir_cpu, 2), "text_to_ir_wall_ms": round(to_ir_wall, 2),
            "text_to_asm_ms": round(to_asm_cpu, 2), "text_to_asm_wall_ms": round(to_asm_wall, 2),
            "pass_ms": {e.name: round(e.ms, 2) for e in trace.entries},
            "before": before, "after": after}


def _compile_to_asm(path: Path, check_shape: bool) -> None:
    spec, _ = load_spec(path.read_text(), str(path))
    Engine().compile(Source(path.read_text(), str(path)), "asm", spec.check.shape.canonical() if check_shape else None)


def profile(paths: list[Path], check_shape: bool, top: int) -> dict:
    """cProfile over every example's cold text -> assembly: the ``top`` functions by own time."""
    profiler = cProfile.Profile()
    profiler.enable()
    for path in paths:
        _compile_to_asm(path, check_shape)
    profiler.disable()
    stats = pstats.Stats(profiler)
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    entries = [{"function": f"{Path(file).name}:{line}({name})", "calls": calls,
                "own_ms": round(own * 1e3, 1), "cumulative_ms": round(cum * 1e3, 1)}
               for (file, line, name), (_, calls, own, cum, _) in rows]
    return {"calls": stats.total_calls, "seconds": round(stats.total_tt, 2), "top": entries}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--check-shapes", action="store_true", help="use each example's [check] shape")
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="print cProfile's top N functions")
    ap.add_argument("--json", default="bench/results/pipeline.json")
    args = ap.parse_args()
    held: list = []  # what a daemon keeps of every compile: traces and pass caches
    rows = [measure(p, args.repeat, args.check_shapes, held) for p in sorted(EXAMPLES.glob("*.kernel.toml"))]

    print("Figures, per SIMD thread: built IR -> final IR")
    head = f"{'example':<20} {'stmts':>11} {'ops/iter':>14} {'loop ops':>18} {'barriers':>12} {'regs':>9}"
    print(head)
    for r in rows:
        b, a = r["before"], r["after"]
        cells = [f"{_num(b[k])}->{_num(a[k])}" for k in FIGURES]
        print(f"{r['example']:<20} {cells[0]:>11} {cells[1]:>14} {cells[2]:>18} {cells[3]:>12} {cells[4]:>9}")
    print()
    print(f"Pipeline time, best of {args.repeat}: CPU ms (wall ms for the whole paths)")
    print(f"{'example':<20} {'nodes':>13} {'cold':>7} {'warm':>6} {'text->IR':>15} {'text->asm':>15} "
          f"{'slowest pass':>28}")
    for r in rows:
        slow = max(r["pass_ms"], key=r["pass_ms"].get)
        nodes = f"{r['nodes_built']}->{r['nodes_final']}"
        to_ir = f"{r['text_to_ir_ms']:.0f} ({r['text_to_ir_wall_ms']:.0f})"
        to_asm = f"{r['text_to_asm_ms']:.0f} ({r['text_to_asm_wall_ms']:.0f})"
        print(f"{r['example']:<20} {nodes:>13} {r['cold_ms']:7.1f} {r['warm_ms']:6.2f} {to_ir:>15} {to_asm:>15} "
              f"{slow + ' ' + format(r['pass_ms'][slow], '.1f'):>28}")
    xe = [r for r in rows if r["target"] != "sm_90"]
    summary = {f"{name}{clock}_{stat}_ms": round(fn([r[f"{path}{clock}_ms"] for r in among]), 1)
               for name, path, among in (("text_to_ir", "text_to_ir", rows), ("text_to_asm", "text_to_asm", rows),
                                         ("xe_text_to_asm", "text_to_asm", xe))
               for clock in ("", "_wall") for stat, fn in (("median", statistics.median), ("max", max))}
    summary.update(rss_mb=round(_rss_mb(), 1),
                   peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1))
    for path, what in (("text_to_ir", "text -> IR"),
                       ("text_to_asm", "text -> assembly (Xe with iga64, sm_90 with ptxas and nvdisasm)"),
                       ("xe_text_to_asm", "text -> assembly, Xe examples")):
        print(f"{what}: CPU median {summary[path + '_median_ms']} ms, max {summary[path + '_max_ms']} ms; "
              f"wall median {summary[path + '_wall_median_ms']} ms, max {summary[path + '_wall_max_ms']} ms")
    print(f"memory after compiling every example: {summary['rss_mb']} MB resident, "
          f"{summary['peak_rss_mb']} MB at the peak")
    if args.profile:
        summary["profile"] = profile(sorted(EXAMPLES.glob("*.kernel.toml")), args.check_shapes, args.profile)
        print(f"\ncProfile, cold text -> assembly of every example: {summary['profile']['calls']} calls, "
              f"{summary['profile']['seconds']} s")
        print(f"{'own ms':>9} {'cum ms':>9} {'calls':>9}  function")
        for e in summary["profile"]["top"]:
            print(f"{e['own_ms']:9.1f} {e['cumulative_ms']:9.1f} {e['calls']:9d}  {e['function']}")
    out = {"python": platform.python_version(), "machine": platform.machine(),
           "shapes": "check" if args.check_shapes else "problem", "repeat": args.repeat,
           "summary": summary, "examples": rows}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
