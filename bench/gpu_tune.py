"""A tuning search for the sm_90 kernels on a Hopper GPU: a few configs per layer, the fastest correct one kept.

For every ResNet-50 forward layer of ``bench/gpu_resnet50.py`` (mb 32, f16,
NHWC) and its GEMMs, :func:`kdd.core.config.search.search_space` gives a
small space of configs (the heuristic's best per-thread tiles, group shapes,
SLM stages), and :func:`~kdd.core.config.search.split_k_variants` adds, for a config whose grid has few
thread groups, the same config with K split 2 and 4 ways across the grid.
``--lines FILE`` adds configs written by hand (rows ``LAYER-REGEX CONFIG
LINE``, see :func:`extra_configs`); ``--tiles 0`` leaves only those. In one
invocation on the GPU machine:

1. ``prepare`` builds each config, runs the passes, generates PTX and
   assembles it with ptxas (the GPU machine's own, on ``PATH``), in ``--jobs``
   processes; cubins and ABIs go to ``--bundle`` as ``gpu_resnet50.py``'s.
2. ``run`` checks every candidate against the float64 reference and times it
   (CUDA events, median of ``--runs``, inputs rotated past the L2 cache), times
   cuDNN/cuBLAS once per layer, keeps the fastest correct candidate and prints
   the ratio table: per layer the first candidate (the heuristic's default,
   or the first ``--lines`` row with ``--tiles 0``) and the best, with their
   geometric means. JSON goes to ``--json``.

``all`` does both. ``report`` (here, after the run) prints the table again from
that JSON's candidates; ``examples`` writes the best config of each layer as
``examples/sm90_tuned/<layer>.kernel.toml``. The best is the fastest correct
candidate that does not spill, where one exists::

    python3 bench/gpu_tune.py all --jobs 16 --json $OUT/gpu_tune.json      # on the GPU machine
    .venv/bin/python bench/gpu_tune.py report --json bench/results/gpu_tune.json
    .venv/bin/python bench/gpu_tune.py examples --json bench/results/gpu_tune.json

The GPU machine needs kdd's parsing wheels on ``PYTHONPATH`` (see docs/gpu.md).
"""
from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import pickle
import re
import sys
import time
import types
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_resnet50 as base  # noqa: E402  (the layer list, references and cuDNN timing)

ROOT = base.ROOT
BUNDLE = ROOT / "bench" / "results" / "gpu_tune_bundle"
TUNED = ROOT / "examples" / "sm90_tuned"
KNOBS = ("iter", "tg", "loop", "slm", "regs")  # what the search varies; the rest derives from these
SMS = 132                                   # multiprocessors of an H100 SXM or an H200
LINE_KNOBS = ("fma", "i", "T", "l", "s")    # their keys in the config line, with the instruction


def _layers(mb: int, only: str) -> list[tuple[str, str, str]]:
    conv = (ROOT / "examples" / "sm90_conv.kernel.toml").read_text()
    gemm = (ROOT / "examples" / "sm90_gemm.kernel.toml").read_text()
    out = [(f"resnet50:{n}", base._spec_text(conv, s), "resnet50") for n, s in base._resnet_shapes(mb)]
    out += [(f"gemm:{s}", base._spec_text(gemm, s), "gemm") for s in base.GEMMS]
    return [x for x in out if not only or re.search(only, x[0])]


def _jobs(args) -> list[tuple]:
    from kdd.core.config.search import search_space, split_k_variants
    from kdd.core.spec import load_spec

    jobs = []
    for name, text, group in _layers(args.mb, args.only):
        spec, diags = load_spec(text, "tune.kernel.toml")
        if spec is None:
            raise ValueError("; ".join(d.message for d in diags))
        space = search_space(spec.problem, spec.target, args.tiles)
        space += [c for c in extra_configs(name, spec, args.lines) if c.line() not in {s.line() for s in space}]
        space += [v for cfg in space for v in split_k_variants(spec.problem, cfg, args.split_below)]
        for i, cfg in enumerate(space):
            jobs.append((name, group, i, text, cfg, args.bundle))
    return jobs


def extra_configs(name: str, spec, path: str | None) -> list:
    """Configs written by hand for layer ``name``: the rows of file ``path`` (``REGEX CONFIG LINE``, ``#``
    comments) whose regex matches the name, completed with the defaults. ``search_space`` varies the
    per-thread tile, group shape and stages at the full register budget; these rows add what it does not
    try, such as a lower ``regs=`` cap with smaller tiles and more warps per SM."""
    from kdd.core.config.defaults import resolve_config
    from kdd.core.config.line import parse_config_line

    if not path:
        return []
    out = []
    for row in Path(path).read_text().splitlines():
        if row.strip() and not row.lstrip().startswith("#"):
            pattern, line = row.split(None, 1)
            if re.search(pattern, name):
                out.append(resolve_config(spec.problem, spec.target, parse_config_line(line)))
    return out


def _prepare_one(job) -> dict:
    from kdd.core.builder import build_kernel
    from kdd.core.codegen.ptx import generate_ptx
    from kdd.core.codegen.ptx.tools import ptxas
    from kdd.core.passes.kernel_pipeline import run_pipeline
    from kdd.core.spec import load_spec

    name, group, i, text, cfg, bundle = job
    row = {"name": name, "group": group, "candidate": i, "config": cfg.line(),
           "knobs": {k: v for k, v in cfg.to_mapping().items() if k in KNOBS}}
    start = time.perf_counter()
    try:
        spec, _ = load_spec(text, "tune.kernel.toml")
        kernel = build_kernel(spec.problem, cfg, spec.target)
        listing = generate_ptx(kernel, run_pipeline(kernel).final, spec.target, check=False)
        result = ptxas(listing.asm)
        if result.cubin is None:
            raise RuntimeError("; ".join(result.report.messages)[:300])
    except Exception as exc:        # a config kdd cannot build or assemble is a row with the reason
        row["error"] = f"{type(exc).__name__}: {exc}"[:300]
        return row
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{name}-{i}")
    out = Path(bundle)
    (out / f"{stem}.cubin").write_bytes(result.cubin)
    (out / f"{stem}.ptx.gz").write_bytes(gzip.compress(listing.asm.encode()))
    abi = {"problem": spec.problem, "args": kernel.args, "launch": listing.launch, "flops": spec.problem.flops()}
    (out / f"{stem}.pkl").write_bytes(pickle.dumps(abi))
    r = result.resources
    row.update(stem=stem, registers=r.get("registers"), spill_stores=r.get("spill_stores"),
               shared_bytes=listing.launch["shared_bytes"], prepare_s=round(time.perf_counter() - start, 1))
    return row


def prepare(args) -> list[dict]:
    base._import_kdd()
    Path(args.bundle).mkdir(parents=True, exist_ok=True)
    jobs = _jobs(args)
    print(f"{len(jobs)} candidates in {args.jobs} processes", flush=True)
    with ProcessPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(_prepare_one, jobs, chunksize=1))
    for r in rows:
        print(f"{r['name']:32s} #{r['candidate']} {r['config']:70s} regs {r.get('registers')} "
              f"spill {r.get('spill_stores')} {r.get('error', '')}", flush=True)
    (Path(args.bundle) / "index.json").write_text(json.dumps(rows, indent=1))
    return rows


def _geomean(xs: list[float]) -> float | None:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def run(args, rows: list[dict] | None = None) -> int:
    base._import_kdd()
    import torch
    from kdd.core.codegen.ptx.device import check_on_device, time_on_device

    bundle = Path(args.bundle)
    rows = rows if rows is not None else json.loads((bundle / "index.json").read_text())
    layers: dict[str, list[dict]] = {}
    for r in rows:
        layers.setdefault(r["name"], []).append(r)
    table = []
    for name, cands in layers.items():
        problem = None
        for r in sorted(cands, key=lambda r: r["candidate"]):
            if "error" in r:
                continue
            abi = pickle.loads((bundle / f"{r['stem']}.pkl").read_bytes())
            problem = abi["problem"]
            kernel = types.SimpleNamespace(args=abi["args"], problem=problem,
                                           outputs=tuple(a for a in abi["args"] if a.role in ("output", "inout")))
            listing = types.SimpleNamespace(cubin=(bundle / f"{r['stem']}.cubin").read_bytes(),
                                            asm=gzip.decompress((bundle / f"{r['stem']}.ptx.gz").read_bytes()).decode(),
                                            launch=abi["launch"])
            try:
                chk = check_on_device(listing, kernel, reference=lambda p, i: base._torch_reference(p, i, torch))
                r.update(ok=chk["ok"], rel_err=chk["rel_err"], device=chk["device"])
                flops = abi["flops"]() if callable(abi["flops"]) else abi["flops"]
                t = time_on_device(listing, kernel, runs=args.runs, flops=flops)
                r.update(ours_us=t["median_us"], tflops=t["tflops"])
            except Exception as exc:      # one failing candidate does not stop the search
                r["run_error"] = f"{type(exc).__name__}: {exc}"[:300]
        if problem is None:
            table.append({"name": name, "group": cands[0]["group"], "error": "no candidate built"})
            continue
        torch_us = base._time_torch(problem, torch, args.runs)
        table.append(_entry(name, cands, torch_us))
        _print(table[-1])
    summary = _summary(table)
    out = {"bench": "gpu_tune", "summary": summary, "layers": table, "candidates": rows}
    return base.write_results(args.json, out, summary)


def _entry(name: str, cands: list[dict], torch_us: float) -> dict:
    """A layer's row: the default (candidate 0) and the best candidate, the fastest correct one with no
    spill where one exists (a spilling kernel is kept only when every correct candidate spills)."""
    good = [r for r in cands if r.get("ok") and r.get("ours_us")]
    clean = [r for r in good if not r.get("spill_stores")]
    default = next((r for r in good if r["candidate"] == 0), None)
    best = min(clean or good, key=lambda r: r["ours_us"]) if good else None
    entry = {"name": name, "group": cands[0]["group"], "torch_us": torch_us, "candidates": len(cands),
             "device": next((r["device"] for r in cands if r.get("device")), None),
             "correct": len(good), "wrong": [r["candidate"] for r in cands if r.get("ok") is False]}
    for label, r in (("default", default), ("best", best)):
        if r is not None:
            entry[label] = {k: r.get(k) for k in ("candidate", "config", "knobs", "ours_us", "tflops",
                                                   "registers", "spill_stores", "rel_err")}
            entry[label]["ratio"] = torch_us / r["ours_us"]
    return entry


def _print(e: dict) -> None:
    d, b = e.get("default", {}), e.get("best", {})
    print(f"{e['name']:28s} {e['torch_us']:8.1f} {d.get('ours_us', 0):9.1f} {d.get('ratio', 0):6.3f} "
          f"{b.get('ours_us', 0):9.1f} {b.get('ratio', 0):6.3f} {b.get('spill_stores')!s:>5} "
          f"{e['correct']}/{e['candidates']}  {b.get('config', '')}", flush=True)


def _summary(table: list[dict]) -> dict:
    out = {}
    for group in ("resnet50", "gemm"):
        rs = [t for t in table if t["group"] == group]
        out[group] = {"layers": len(rs),
                      "geomean_default": _geomean([t["default"]["ratio"] for t in rs if "default" in t]),
                      "geomean_best": _geomean([t["best"]["ratio"] for t in rs if "best" in t])}
    return out


def report(args) -> int:
    """The layer table again from ``--json``'s candidates (the choice rule of :func:`_entry`)."""
    data = json.loads(Path(args.json).read_text())
    by_layer: dict[str, list[dict]] = {}
    for r in data["candidates"]:
        by_layer.setdefault(r["name"], []).append(r)
    print(f"{'layer':28s} {'cuDNN us':>8} {'default':>9} {'ratio':>6} {'tuned':>9} {'ratio':>6} {'spill':>5} "
          "ok  config")
    table = [_entry(t["name"], by_layer[t["name"]], t["torch_us"]) for t in data["layers"] if "torch_us" in t]
    for e in table:
        _print(e)
    data["layers"], data["summary"] = table, _summary(table)
    Path(args.json).write_text(json.dumps(data, indent=1, default=str))
    for group, s in data["summary"].items():
        print(f"{group}: {s['layers']} layers, geometric mean of ratio: default {s['geomean_default']:.3f}, "
              f"tuned {s['geomean_best']:.3f}")
    return 0


def examples(args) -> int:
    """The best config of every layer in ``--json`` as ``examples/sm90_tuned/<layer>.kernel.toml``."""
    data = json.loads(Path(args.json).read_text())
    TUNED.mkdir(parents=True, exist_ok=True)
    shapes = {n: t for n, t, _ in _layers(args.mb, "")}
    for t in data["layers"]:
        if "best" not in t:
            continue
        b = t["best"]
        text = shapes[t["name"]]
        line = " ".join(kv for kv in b["config"].split()
                        if kv.split("=")[0] in LINE_KNOBS or kv.startswith("regs=") and kv != "regs=255")
        text = re.sub(r"\[config\]\n(?:[^\[\n][^\n]*\n)*", "", text)
        text = re.sub(r"^(#[^\n]*\n)+", "", text).rstrip() + "\n"     # the template's own comment
        spill = b.get("spill_stores")
        kind = (f"correct config of {t['candidates']} (every one spills; this one {spill} bytes)" if spill
                else f"correct config without spills of {t['candidates']}")
        head = (f"# {t['name']}: the fastest {kind} that "
                f"bench/gpu_tune.py tried on\n# {t.get('device', 'a Hopper GPU')}: {b['ours_us']:.1f} us against "
                f"{t['torch_us']:.1f} us for cuDNN/cuBLAS (ratio {b['ratio']:.3f}); the default config ran "
                f"{t.get('default', {}).get('ours_us', float('nan')):.1f} us.\n")
        path = TUNED / f"{t['name'].split(':')[1]}.kernel.toml"
        check = re.search(r"^\[check\]\n(?:[^\[\n][^\n]*\n)*", path.read_text(), re.M) if path.exists() else None
        if check:           # a [check] shape written by hand (the interpreter's bound) stays
            text = re.sub(r"\n\[target\]", f"\n{check.group(0).rstrip()}\n\n[target]", text, count=1)
        path.write_text(f'{head}{text}\n[config]\nline = "{line}"\n')
    print(f"wrote {TUNED}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cmd", choices=("prepare", "run", "all", "report", "examples"))
    ap.add_argument("--bundle", default=str(BUNDLE))
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "gpu_tune.json"))
    ap.add_argument("--mb", type=int, default=32)
    ap.add_argument("--only", default="", help="layers whose name matches this regex")
    ap.add_argument("--tiles", type=int, default=2, help="per-thread tiles tried per layer (0: only --lines)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--split-below", type=int, default=2 * SMS,
                    help="also try split-K variants of configs whose grid has fewer thread groups (0: none)")
    ap.add_argument("--lines", help="a file of 'LAYER-REGEX CONFIG LINE' rows: configs added to those layers")
    args = ap.parse_args()
    if args.cmd in ("report", "examples"):
        return report(args) if args.cmd == "report" else examples(args)
    rows = prepare(args) if args.cmd in ("prepare", "all") else None
    return run(args, rows) if args.cmd in ("run", "all") else 0


if __name__ == "__main__":
    raise SystemExit(main())
