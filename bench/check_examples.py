"""The on-save correctness check of every shipped example, timed.

For each ``examples/*.kernel.toml``: read the spec, build the kernel for its
``[check]`` shape (the written knobs, the omitted ones resolved for that
shape, as ``kdd check`` does), run it in the interpreter against the float64
reference. Times are wall clock of one cold run per stage (the interpreter
compiles the IR on first use): spec, build, check (packing, interpretation,
reference and comparison; ``interp`` is the part spent compiling and
running the IR). Prints a
table and writes JSON to bench/results/check_examples.json. No asserts on time.

    .venv/bin/python bench/check_examples.py [--full-config] [examples/foo.kernel.toml ...]

``--full-config`` builds with the complete config resolved for the full
problem instead (the kernel that would run on it, shrunk to the check shape).
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import time
from pathlib import Path

from kdd.core.builder import build_kernel
from kdd.core.interp.check import check_kernel
from kdd.core.spec import load_spec


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, (time.perf_counter() - start) * 1e3


def measure(path: Path, full_config: bool) -> dict:
    row: dict = {"file": str(path)}
    spec, spec_ms = timed(lambda: load_spec(path.read_text(encoding="utf-8"), str(path))[0])
    row["spec_ms"] = round(spec_ms, 1)
    if spec is None:
        row["error"] = "invalid config"
        return row
    row["shape"] = spec.check.shape.canonical()
    config = spec.config if full_config else spec.user_config
    try:
        kernel, build_ms = timed(lambda: build_kernel(spec.check, config, spec.target))
        row["build_ms"] = round(build_ms, 1)
        result, check_ms = timed(lambda: check_kernel(kernel, spec.check, seed=spec.check_seed,
                                                      tol=spec.check_tol))
    except Exception as exc:  # a failing example is a result too
        row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
        return row
    row.update(check_ms=round(check_ms, 1), interp_ms=round(result.interp_ms, 1),
               total_ms=round(spec_ms + build_ms + check_ms, 1), ok=result.ok, rel_err=result.rel_err,
               tol=result.tol, grid=list(kernel.grid), tg=list(kernel.tg),
               threads=math.prod(kernel.grid) * math.prod(kernel.tg))
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--full-config", action="store_true")
    ap.add_argument("--json", default="bench/results/check_examples.json")
    args = ap.parse_args()
    files = args.files or sorted(Path("examples").glob("*.kernel.toml"))
    rows = [measure(p, args.full_config) for p in files]
    print(f"{'example':34} {'check shape':30} {'spec':>6} {'build':>7} {'check':>8} {'interp':>8} "
          f"{'total':>8} {'thr':>4}  verdict")
    for r in rows:
        if "error" in r and "build_ms" not in r:
            print(f"{Path(r['file']).name:34} {r.get('shape', ''):30} {r['spec_ms']:6.1f}  {r['error']}")
            continue
        if "error" in r:
            print(f"{Path(r['file']).name:34} {r['shape']:30} {r['spec_ms']:6.1f} {r['build_ms']:7.1f}  {r['error']}")
            continue
        verdict = f"{'ok' if r['ok'] else 'FAIL'} rel_err {r['rel_err']:.2g} tol {r['tol']:g}"
        print(f"{Path(r['file']).name:34} {r['shape']:30} {r['spec_ms']:6.1f} {r['build_ms']:7.1f} "
              f"{r['check_ms']:8.1f} {r['interp_ms']:8.1f} {r['total_ms']:8.1f} {r['threads']:4}  {verdict}")
    out = {"machine": platform.platform(), "python": platform.python_version(),
           "config": "full" if args.full_config else "written knobs, defaults for the check shape",
           "unit": "ms, wall clock, one cold run", "examples": rows}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
