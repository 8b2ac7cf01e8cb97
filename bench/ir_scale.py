"""Micro-benchmark of the IR core at kernel scale.

Builds a fully-unrolled-kernel-sized statement tree (about 10^5 nodes: a
deep let chain of address arithmetic feeding many stores), then times
structural hashing (a rebuild, since hashes are computed at construction),
equality, printing, an identity mutation (a mutator without hooks: it walks
the statements only, since nothing under an expression can change), a
substitution that matches nowhere (a hook on every node: the mutator's cost
per node), node counting and simplification, each the best of ``--repeat`` runs in CPU time (the machine is shared: CPU
time, and the best run, are what other processes disturb least) and in wall time. Prints a table and
writes JSON to bench/results/ir_scale.json. No asserts on time.

    .venv/bin/python bench/ir_scale.py [--lets 2000] [--stores 8000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from kdd.core.ir import IRMutator, Let, Store, count_nodes, print_ir, seq, substitute, var
from kdd.core.ir.simplify import simplify
from kdd.core.ir.types import s32


def build(lets: int, stores: int):
    """A let chain of offsets (each depending on the previous) and stores using them."""
    base, lane = var("base"), var("lane")
    vs = [var(f"off{i}") for i in range(lets)]
    out = var("dst", s32)
    body = seq(*(Store.make(out, (vs[i % lets] * 2 + (i % 16) * 4 - vs[i % lets]) * 1,
                            (lane * 16 + i % 16) // 16 + (lane * 16 + i % 16) % 16)
                 for i in range(stores)))
    for i in reversed(range(lets)):
        prev = vs[i - 1] if i else base
        body = Let.make(vs[i], 2 * (prev + 4) - prev, body)
    return body


def timed(fn, repeat: int):
    """``fn()``'s result and its best CPU and wall times over ``repeat`` runs, in ms."""
    cpu = wall = float("inf")
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        result = fn()
        wall = min(wall, (time.perf_counter() - w0) * 1e3)
        cpu = min(cpu, (time.process_time() - c0) * 1e3)
    return result, (cpu, wall)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lets", type=int, default=2000)
    ap.add_argument("--stores", type=int, default=8000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default="bench/results/ir_scale.json")
    args = ap.parse_args()
    r = args.repeat

    tree, build_ms = timed(lambda: build(args.lets, args.stores), r)
    nodes, count_ms = timed(lambda: count_nodes(tree), r)
    twin = build(args.lets, args.stores)
    _, eq_ms = timed(lambda: tree.is_equal(twin), r)
    printed, print_ms = timed(lambda: print_ir(tree), r)
    _, mutate_ms = timed(lambda: IRMutator().mutate(tree), r)
    nowhere = {var("nowhere"): var("elsewhere")}
    _, substitute_ms = timed(lambda: substitute(tree, nowhere), r)
    simplified, simplify_ms = timed(lambda: simplify(tree), r)
    rows = [
        ("build + hash", build_ms), ("count nodes", count_ms), ("is_equal (twin)", eq_ms),
        ("print", print_ms), ("identity mutate", mutate_ms), ("substitute (no match)", substitute_ms),
        ("simplify", simplify_ms),
    ]
    print(f"IR scale benchmark: {nodes} nodes, let depth {args.lets}, {len(printed.lines)} printed lines, "
          f"best of {r}")
    print(f"{'step':<22} {'CPU ms':>10} {'ns/node':>10} {'wall ms':>10}")
    for name, (cpu, wall) in rows:
        print(f"{name:<22} {cpu:10.1f} {cpu * 1e6 / nodes:10.0f} {wall:10.1f}")
    print(f"simplified: {count_nodes(simplified)} nodes")
    out = {"nodes": nodes, "let_depth": args.lets, "python": platform.python_version(),
           "machine": platform.machine(), "repeat": r, "ms": {name: cpu for name, (cpu, _) in rows},
           "wall_ms": {name: wall for name, (_, wall) in rows}, "simplified_nodes": count_nodes(simplified)}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
