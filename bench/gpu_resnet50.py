"""sm_90 kernels on a Hopper GPU: correctness against float64 and time against cuDNN / cuBLAS (torch).

Two steps, so the GPU machine needs neither ptxas nor kdd's parser:

1. ``prepare`` (on any machine with kdd's .venv): for the sm_90 examples
   (their [check] shape and full shape), every ResNet-50 forward layer of
   ``../shared/data/benchdnn/conv/shapes_resnet_50`` (mb 32, f16, NHWC, the
   layouts and config of ``examples/sm90_conv.kernel.toml`` with the
   default tiles, or with ``--tuned`` the config of
   ``examples/sm90_tuned/<layer>.kernel.toml``) and the GEMMs m=n=k=4096 and
   8192 (f16 in, f32 out, as ``examples/sm90_gemm.kernel.toml``, or tuned): build, run the passes, generate PTX,
   run ptxas and nvdisasm; write the cubin, the gzipped PTX and the ABI
   (pickled problem, arguments, launch) under ``--bundle``
   (``bench/results/gpu_bundle``).
2. ``run`` (on the GPU machine, torch + CuPy): for every prepared kernel,
   run it once on random inputs and compare with a float64 reference
   (torch in float64 on the GPU: conv2d or matmul, then the post-ops, rounded
   to the output type; the tolerances of ``kdd check``), then time it with
   CUDA events (median of ``--runs``, inputs rotated over copies larger than
   the L2 cache) beside torch's f16 conv2d (cuDNN, channels_last,
   ``cudnn.benchmark``) or matmul (cuBLAS). Prints a table and writes
   ``bench/results/gpu_resnet50.json``. With ``--reps N`` each kernel and
   cuDNN are timed N times, alternated: the ratio is of the medians, and
   ``ratio_vs_fastest`` takes cuDNN's fastest rep (cuDNN's pick and time
   vary between runs more than ours).

    .venv/bin/python bench/gpu_resnet50.py prepare [--limit N] [--only REGEX] [--tuned] [--bundle DIR]
    python bench/gpu_resnet50.py run [--only REGEX] [--reps N] [--json $OUT/gpu_resnet50.json]   # on the GPU machine
    python bench/gpu_resnet50.py compare BEFORE.json AFTER.json

``run`` imports kdd from the repository's ``core/`` when kdd is not
installed (a ``kdd`` package shim in a temporary folder), so it needs only
numpy, torch and CuPy.
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
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "bench" / "results" / "gpu_bundle"
RESNET = ROOT.parent / "shared" / "data" / "benchdnn" / "conv" / "shapes_resnet_50"
GEMMS = ("m4096n4096k4096", "m8192n8192k8192")


def _import_kdd() -> None:
    try:
        import kdd.core  # noqa: F401
    except ImportError:
        shim = Path(tempfile.mkdtemp(prefix="kdd-shim-")) / "kdd"
        shim.mkdir()
        (shim / "__init__.py").write_text("")
        os.symlink(ROOT / "core", shim / "core")
        sys.path.insert(0, str(shim.parent))


# -- prepare ------------------------------------------------------------------------------------------

def _resnet_shapes(mb: int) -> list[tuple[str, str]]:
    out = []
    for line in RESNET.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r'([^n"]*?)n"resnet_50:([^"*]+)', line)
        desc, name = (m.group(1), m.group(2)) if m else (line, line)
        out.append((name, re.sub(r"mb\d+", f"mb{mb}", desc)))
    return out


def _spec_text(template: str, shape: str) -> str:
    text = re.sub(r'^shape = "[^"]*"', f'shape = "{shape}"', template, count=1, flags=re.M)
    return re.sub(r"\[check\][^\[]*", "", text)


def _layer_text(template: str, name: str, shape: str, tuned: bool) -> str:
    """The layer's spec: ``examples/sm90_tuned/<name>.kernel.toml`` with ``tuned`` (its shape must be
    ``shape``), else ``template`` at ``shape`` with the template's default tiles."""
    path = ROOT / "examples" / "sm90_tuned" / f"{name}.kernel.toml"
    if tuned and path.exists():
        return _spec_text(path.read_text(), shape)
    return _spec_text(template, shape)


def prepare(args) -> int:
    from kdd.core.builder import build_kernel
    from kdd.core.codegen.ptx import generate_ptx
    from kdd.core.passes.kernel_pipeline import run_pipeline
    from kdd.core.spec import load_spec

    out = Path(args.bundle)
    out.mkdir(parents=True, exist_ok=True)
    conv = (ROOT / "examples" / "sm90_conv.kernel.toml").read_text()
    gemm = (ROOT / "examples" / "sm90_gemm.kernel.toml").read_text()
    jobs = []
    for ex in sorted((ROOT / "examples").glob("sm90_*.kernel.toml")):
        jobs.append((f"{ex.stem.split('.')[0]}:check", ex.read_text(), True, "example"))
        jobs.append((f"{ex.stem.split('.')[0]}:full", ex.read_text(), False, "example"))
    jobs += [(f"resnet50:{name}", _layer_text(conv, name, shape, args.tuned), False, "resnet50")
             for name, shape in _resnet_shapes(args.mb)]
    jobs += [(f"gemm:{shape}", _layer_text(gemm, shape, shape, args.tuned), False, "gemm") for shape in GEMMS]
    if args.limit:
        jobs = jobs[: args.limit]
    index = []
    order = [j[0] for j in jobs]
    if args.only:           # rebuild the matching kernels into the bundle, keeping its other rows
        jobs = [j for j in jobs if re.search(args.only, j[0])]
        names = {j[0] for j in jobs}
        old = json.loads((out / "index.json").read_text()) if (out / "index.json").exists() else []
        index = [row for row in old if row["name"] not in names]
    for name, text, check, group in jobs:
        start = time.perf_counter()
        row = {"name": name, "group": group}
        try:
            spec, diags = load_spec(text, f"{name}.kernel.toml")
            if spec is None:
                raise ValueError("; ".join(d.message for d in diags))
            problem = spec.check if check else spec.problem
            kernel = build_kernel(problem, spec.config, spec.target)
            listing = generate_ptx(kernel, run_pipeline(kernel).final, spec.target)
        except Exception as exc:        # a layer kdd cannot build or lower is a row with the reason
            row["error"] = f"{type(exc).__name__}: {exc}"
            print(f"{name:40s} FAILED {row['error'][:200]}", flush=True)
            index.append(row)
            continue
        d = listing.to_dict()
        stem = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
        (out / f"{stem}.cubin").write_bytes(listing.cubin or b"")
        (out / f"{stem}.ptx.gz").write_bytes(gzip.compress(listing.asm.encode()))
        abi = {"problem": problem, "args": kernel.args, "launch": d["launch"], "flops": problem.flops()}
        (out / f"{stem}.pkl").write_bytes(pickle.dumps(abi))
        row.update(stem=stem, shape=problem.shape.canonical(), registers=d["registers"]["allocated"],
                   spill_stores=d["registers"]["spill_stores"], peak_live=d["registers"]["peak"],
                   ptxas_ok=d["assembler"]["ok"], prepare_s=round(time.perf_counter() - start, 1))
        print(f"{name:40s} {row['shape']:45s} regs {row['registers']} spill {row['spill_stores']} "
              f"({row['prepare_s']} s)", flush=True)
        index.append(row)
    index.sort(key=lambda row: order.index(row["name"]) if row["name"] in order else len(order))
    (out / "index.json").write_text(json.dumps(index, indent=1))
    return 0


# -- run (GPU machine) --------------------------------------------------------------------------------

def _torch_reference(problem, inputs, torch):
    """float64 outputs on the GPU: conv2d or matmul, relu post-op, rounded to the output type."""
    types_ = problem.types
    dev = "cuda"
    if problem.op == "gemm":
        ref = torch.from_numpy(inputs["src"]).to(dev) @ torch.from_numpy(inputs["wei"]).to(dev)
    else:
        s = problem.shape
        src = torch.from_numpy(inputs["src"]).to(dev)
        wei = torch.from_numpy(inputs["wei"]).to(dev)
        ref = torch.nn.functional.conv2d(src, wei, stride=(s.sh, s.sw), padding=(s.ph, s.pw),
                                         dilation=(s.dh + 1, s.dw + 1), groups=s.g)
    for op in problem.post_ops:
        if getattr(op, "alg", None) != "relu" or getattr(op, "alpha", 0) not in (0, 0.0):
            raise NotImplementedError(f"post-op {op} has no torch reference here")
        ref = torch.relu(ref)
    dt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[types_.dst.scalar.short]
    return {"dst": ref.to(dt).to(torch.float64).cpu().numpy()}


def _time_torch(problem, torch, runs: int) -> float:
    dev = "cuda"
    if problem.op == "gemm":
        s = problem.shape
        a = torch.randn(s.m, s.k, device=dev, dtype=torch.float16)
        b = torch.randn(s.k, s.n, device=dev, dtype=torch.float16)
        fn = (lambda: a @ b)
    else:
        s = problem.shape
        torch.backends.cudnn.benchmark = True
        x = torch.randn(s.mb, s.ic, s.ih, s.iw, device=dev, dtype=torch.float16).to(memory_format=torch.channels_last)
        w = torch.randn(s.oc, s.ic // s.g, s.kh, s.kw, device=dev, dtype=torch.float16).to(
            memory_format=torch.channels_last)
        relu = bool(problem.post_ops)

        def fn():
            y = torch.nn.functional.conv2d(x, w, stride=(s.sh, s.sw), padding=(s.ph, s.pw),
                                           dilation=(s.dh + 1, s.dw + 1), groups=s.g)
            return torch.relu_(y) if relu else y
    for _ in range(5):
        fn()
    times = []
    for _ in range(runs):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e3)
    times.sort()
    return times[len(times) // 2]


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs))


def run(args) -> int:
    _import_kdd()
    import torch
    from kdd.core.codegen.ptx.device import check_on_device, time_on_device

    bundle = Path(args.bundle)
    index = json.loads((bundle / "index.json").read_text())
    rows = []
    for row in index:
        if "error" in row or (args.only and not re.search(args.only, row["name"])):
            rows.append(row)
            continue
        abi = pickle.loads((bundle / f"{row['stem']}.pkl").read_bytes())
        kernel = types.SimpleNamespace(args=abi["args"], problem=abi["problem"],
                                       outputs=tuple(a for a in abi["args"] if a.role in ("output", "inout")))
        listing = types.SimpleNamespace(cubin=(bundle / f"{row['stem']}.cubin").read_bytes(),
                                        asm=gzip.decompress((bundle / f"{row['stem']}.ptx.gz").read_bytes()).decode(),
                                        launch=abi["launch"])
        try:
            chk = check_on_device(listing, kernel, reference=lambda p, i: _torch_reference(p, i, torch))
            row.update(ok=chk["ok"], rel_err=chk["rel_err"], tol=chk["tol"], loaded_from=chk["loaded_from"],
                       device=chk["device"])
            flops = abi["flops"]() if callable(abi["flops"]) else abi["flops"]
            ours, theirs = [], []
            for _ in range(args.reps):      # alternated, so drifts of clocks or of cuDNN's pick show in both
                ours.append(time_on_device(listing, kernel, runs=args.runs, flops=flops)["median_us"])
                theirs.append(_time_torch(abi["problem"], torch, args.runs))
            mine, base = _median(ours), _median(theirs)
            row.update(ours_us=mine, tflops=flops / (mine * 1e-6) / 1e12, torch_us=base, ratio=base / mine,
                       ours_reps_us=ours, torch_reps_us=theirs, ratio_fastest_torch=min(theirs) / mine)
        except Exception as exc:          # one failing kernel does not stop the sweep
            row["run_error"] = f"{type(exc).__name__}: {exc}"[:500]
        rows.append(row)
        spread = (f" torch {min(row['torch_reps_us']):.1f}..{max(row['torch_reps_us']):.1f}us"
                  f" ratio_vs_fastest={row['ratio_fastest_torch']:.3f}" if args.reps > 1 and "torch_reps_us" in row else "")
        print(f"{row['name']:40s} ok={row.get('ok')} rel_err={row.get('rel_err')} ours={row.get('ours_us', 0):.1f}us "
              f"torch={row.get('torch_us', 0):.1f}us ratio={row.get('ratio', 0):.3f}{spread} {row.get('run_error', '')}",
              flush=True)
    summary = {}
    for group in ("resnet50", "gemm"):
        ok = [x for x in rows if x.get("group") == group and x.get("ratio") and x.get("ok")]
        if ok:
            summary[group] = {"kernels": len(ok), "reps": args.reps,
                              "geomean_vs_torch": _geomean([x["ratio"] for x in ok]),
                              "geomean_vs_fastest_torch": _geomean([x["ratio_fastest_torch"] for x in ok])}
    out = {"bench": "gpu_resnet50", "summary": summary, "rows": rows}
    return write_results(args.json, out, summary)


def compare(args) -> int:
    """Two ``run --reps N`` JSONs (before, after) against one cuDNN: per kernel our two times, and per group the
    geometric means of our speed-up and of the fastest cuDNN rep of both runs over each run's time. cuDNN's pick
    and time move between machines more than ours, so a ratio against each run's own cuDNN can hide a change."""
    before, after = ({r["name"]: r for r in json.loads(Path(f).read_text())["rows"] if r.get("ok")}
                     for f in (args.before, args.after))
    for group in ("resnet50", "gemm"):
        names = [n for n, r in after.items() if r.get("group") == group and n in before]
        if not names:
            continue
        fastest = {n: min(before[n]["torch_reps_us"] + after[n]["torch_reps_us"]) for n in names}
        for n in names:
            old, new = before[n]["ours_us"], after[n]["ours_us"]
            print(f"{n:40s} ours {old:8.1f} -> {new:8.1f} us, fastest cuDNN {fastest[n]:7.1f} us: "
                  f"{fastest[n] / old:.3f} -> {fastest[n] / new:.3f}")
        speedup = _geomean([before[n]["ours_us"] / after[n]["ours_us"] for n in names])
        print(f"{group}: {len(names)} kernels, our speed-up {speedup:.3f}, vs the fastest cuDNN rep of both runs "
              f"{_geomean([fastest[n] / before[n]['ours_us'] for n in names]):.3f} -> "
              f"{_geomean([fastest[n] / after[n]['ours_us'] for n in names]):.3f}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--bundle", default=str(BUNDLE))
    p.add_argument("--mb", type=int, default=32)
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--only", default="", help="rebuild only the kernels whose name matches this regex into "
                   "--bundle, keeping the rows of the others")
    p.add_argument("--tuned", action="store_true",
                   help="layers with a file in examples/sm90_tuned/ take its config instead of the default tiles")
    r = sub.add_parser("run")
    r.add_argument("--bundle", default=str(BUNDLE))
    r.add_argument("--runs", type=int, default=30)
    r.add_argument("--only", default="")
    r.add_argument("--reps", type=int, default=1,
                   help="times each kernel and cuDNN/cuBLAS are timed, alternated; medians of the reps and "
                        "the ratio against the fastest cuDNN time are reported")
    r.add_argument("--json", default=str(ROOT / "bench" / "results" / "gpu_resnet50.json"))
    c = sub.add_parser("compare", help="two run JSONs (before, after) against the fastest cuDNN rep of both")
    c.add_argument("before")
    c.add_argument("after")
    args = ap.parse_args()
    return {"prepare": prepare, "run": run, "compare": compare}[args.cmd](args)


def write_results(json_path: str, out: dict, summary: dict) -> int:
    """Writes ``out`` as JSON to ``json_path``, prints ``summary`` and where it went (exit code 0)."""
    path = Path(json_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1, default=str))
    print(json.dumps(summary, indent=1))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
