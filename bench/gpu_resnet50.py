"""sm_90 kernels on a Hopper GPU: correctness against float64 and time against cuDNN / cuBLAS (torch).

Two steps, so the GPU machine needs neither ptxas nor kdd's parser:

1. ``prepare`` (on any machine with kdd's .venv): for the sm_90 examples
   (their [check] shape and full shape), every ResNet-50 forward layer of
   ``../shared/data/benchdnn/conv/shapes_resnet_50`` (mb 32, f16, NHWC, the
   layouts and config of ``examples/sm90_conv.kernel.toml`` with the
   default tiles, or with ``--tuned`` the config of
   ``examples/sm90_tuned/<layer>.kernel.toml``) and the GEMMs m=n=k=4096 and
   8192 (f16 in, f16 out with f32 accumulation, the config of ``examples/sm90_gemm.kernel.toml``
   or tuned): build, run the passes, generate PTX,
   run ptxas and nvdisasm; write the cubin, the gzipped PTX and the ABI
   (pickled problem, arguments, launch) under ``--bundle``
   (``bench/results/gpu_bundle``).
2. ``run`` (on the GPU machine, torch + CuPy): for every prepared kernel,
   check it first on normal random f16 inputs (so products and sums
   round; tolerance from the accumulation length), three launches on the
   same buffers with no reset by the host (split K's scratch resets
   itself), against a float64 reference (torch in float64 on the GPU:
   conv2d or matmul, then the post-ops, rounded to the output type); a
   wrong kernel is not timed. Then GPU time only, on every side alike:
   ``--runs`` launches captured in a CUDA graph, replayed between two
   events, inputs rotated over copies larger than the L2 cache. Peers:
   cuDNN (channels_last, ``cudnn.benchmark``) conv alone and conv+relu
   (kdd's kernels carry their relu; ``ratio`` is against conv+relu), and
   for the GEMMs (f16 out on every side) cuBLAS and Triton. Prints a table
   and writes ``bench/results/gpu_resnet50.json`` with the card, driver,
   CUDA, cuDNN, torch, Triton versions and clocks. ``--reps N`` alternates
   N timings of each side; ratios are of the medians.

    .venv/bin/python bench/gpu_resnet50.py prepare [--limit N] [--only REGEX] [--tuned] [--bundle DIR] [--variant NAME=LINE]
    python bench/gpu_resnet50.py run [--only REGEX] [--reps N] [--json $OUT/gpu_resnet50.json]   # on the GPU machine
    python bench/gpu_resnet50.py compare BEFORE.json AFTER.json     # same card only

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
RESNET = Path(os.environ.get("KDD_BENCHDNN_DIR") or ROOT.parent / "shared" / "data" / "benchdnn") / "conv" / "shapes_resnet_50"
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


def _f16_out(text: str) -> str:
    """A GEMM spec writing f16 (f32 accumulation), as cuBLAS's and Triton's f16 GEMMs do: the same output
    type on every side of the comparison."""
    return re.sub(r'^types = "f16:f16:f32"', 'types = "f16:f16:f16"', text, count=1, flags=re.M)


def _with_line(text: str, line: str) -> str:
    """``text`` with its ``[config]`` table replaced by the config line ``line``, or with ``+KNOBS`` its
    config line (``line = "..."``) with ``KNOBS`` set (in place of the same keys written there)."""
    if line.startswith("+"):
        keys = {kv.split("=")[0] for kv in line[1:].split()}

        def added(m):
            kept = [kv for kv in m.group(1).split() if kv.split("=")[0] not in keys]
            return f'line = "{" ".join(kept + line[1:].split())}"'
        out, n = re.subn(r'^line = "([^"]*)"', added, text, count=1, flags=re.M)
        if not n:
            raise ValueError(f"--variant ...={line}: the spec has no config line to add to")
        return out
    head = re.sub(r"^\[config\][^\[]*", "", text, flags=re.M).rstrip()
    return f'{head}\n\n[config]\nline = "{line}"\n'


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
    jobs += [(f"gemm:{shape}", _f16_out(_layer_text(gemm, shape, shape, args.tuned)), False, "gemm") for shape in GEMMS]
    variants = []
    for variant in args.variant:            # NAME=LINE: the layers and GEMMs again under another config line
        label, _, line = variant.partition("=")
        variants += [(f"{name}@{label}", _with_line(text, line), check, group)
                     for name, text, check, group in jobs if group != "example" or not line.startswith("+")]
    jobs += variants
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


def _gpu_time(torch, launch_one, runs: int, reps: int = 5) -> dict:
    """GPU time per call of ``launch_one(i)`` (torch work on the current stream): ``runs`` calls captured
    once in a CUDA graph after a warm-up outside it (cuDNN's algorithm search, Triton's compile), the graph
    replayed ``reps`` times between two events; median and fastest replay over ``runs``. The same method
    as ``time_on_device`` for kdd's kernels, so host dispatch is in neither figure."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for i in range(3):
            launch_one(i)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(runs):
            launch_one(i)
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e3 / runs)
    del graph
    return {"median_us": _median(times), "min_us": min(times)}


def _copies(torch, make, nbytes: int) -> list:
    """``make()`` called for as many input copies as together exceed the L2 cache (as kdd's own inputs
    rotate: ``rotation_copies``)."""
    from kdd.core.codegen.ptx.device import rotation_copies

    return [make() for _ in range(rotation_copies(nbytes))]


def _normal(torch, *shape, **kw):
    return torch.randn(*shape, device="cuda", dtype=torch.float16, **kw)


def _baselines(problem, torch, runs: int) -> dict:
    """The library peers' GPU times per call, inputs rotated: for a convolution cuDNN's conv alone and
    conv followed by relu (kdd's kernels carry their relu; the fair figure is conv+relu where the problem
    has it); for a GEMM cuBLAS and Triton, both writing f16 as kdd's benchmark GEMMs do."""
    s = problem.shape
    if problem.op == "gemm":
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        ab = _copies(torch, lambda: (_normal(torch, s.m, s.k), _normal(torch, s.k, s.n)), 2 * (s.m * s.k + s.k * s.n))
        out = {"cublas": _gpu_time(torch, lambda i: torch.matmul(*ab[i % len(ab)]), runs)}
        out.update(_triton_gemm(torch, ab, runs))
        return out
    torch.backends.cudnn.benchmark = True
    xw = _copies(torch, lambda: (_normal(torch, s.mb, s.ic, s.ih, s.iw).to(memory_format=torch.channels_last),
                                 _normal(torch, s.oc, s.ic // s.g, s.kh, s.kw).to(memory_format=torch.channels_last)),
                 2 * (s.mb * s.ic * s.ih * s.iw + s.oc * s.ic // s.g * s.kh * s.kw + s.mb * s.oc * s.oh * s.ow))

    def conv(i):
        x, w = xw[i % len(xw)]
        return torch.nn.functional.conv2d(x, w, stride=(s.sh, s.sw), padding=(s.ph, s.pw),
                                          dilation=(s.dh + 1, s.dw + 1), groups=s.g)
    out = {"cudnn": _gpu_time(torch, conv, runs)}
    if problem.post_ops:
        out["cudnn_relu"] = _gpu_time(torch, lambda i: torch.relu_(conv(i)), runs)
    return out


# (BLOCK_M, BLOCK_N, BLOCK_K, stages, warps): Triton's usual Hopper f16 GEMM tiles
TRITON_CONFIGS = ((128, 256, 64, 3, 8), (128, 256, 64, 4, 8), (256, 128, 64, 3, 8), (128, 128, 64, 4, 4),
                  (128, 128, 32, 4, 4))


def _triton_gemm(torch, ab, runs: int) -> dict:
    """Triton's f16 GEMM (f32 accumulation, f16 out, grouped tile order) at its fastest of
    ``TRITON_CONFIGS``, each checked against cuBLAS first; ``{}`` without Triton."""
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return {}

    @triton.jit
    def matmul(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
        pid = tl.program_id(0)
        tiles_m, tiles_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
        per_group = GROUP * tiles_n
        first = (pid // per_group) * GROUP
        rows = tl.minimum(tiles_m - first, GROUP)
        tm = first + (pid % per_group) % rows
        tn = (pid % per_group) // rows
        im = tm * BM + tl.arange(0, BM)
        jn = tn * BN + tl.arange(0, BN)
        kk = tl.arange(0, BK)
        pa = a + im[:, None] * K + kk[None, :]
        pb = b + kk[:, None] * N + jn[None, :]
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for _ in range(0, K, BK):
            acc += tl.dot(tl.load(pa), tl.load(pb))
            pa += BK
            pb += BK * N
        tl.store(c + im[:, None] * N + jn[None, :], acc.to(tl.float16))

    a0, b0 = ab[0]
    M, K = a0.shape
    N = b0.shape[1]
    best = None
    for bm, bn, bk, stages, warps in TRITON_CONFIGS:
        if M % bm or N % bn or K % bk:
            continue
        grid = ((M // bm) * (N // bn),)

        def call(i, bm=bm, bn=bn, bk=bk, stages=stages, warps=warps):
            a, b = ab[i % len(ab)]
            c = torch.empty(M, N, device="cuda", dtype=torch.float16)
            matmul[grid](a, b, c, M, N, K, BM=bm, BN=bn, BK=bk, GROUP=8, num_stages=stages, num_warps=warps)
            return c
        try:
            err = ((call(0).double() - torch.matmul(a0, b0).double()).norm() / torch.matmul(a0, b0).double().norm()).item()
            if not err < 1e-2:
                continue
            t = _gpu_time(torch, call, runs)
        except Exception:               # a config Triton cannot compile for this card is skipped
            continue
        if best is None or t["median_us"] < best[1]["median_us"]:
            best = ((bm, bn, bk, stages, warps), t)
    if best is None:
        return {}
    return {"triton": {**best[1], "config": list(best[0])}}


def environment(torch) -> dict:
    """The card and the software a run measured with: ``compare`` refuses runs of different cards."""
    import subprocess

    props = torch.cuda.get_device_properties(0)
    env = {"card": props.name, "sms": props.multi_processor_count, "torch": torch.__version__,
           "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version()}
    for name in ("triton", "cupy"):
        try:
            env[name] = __import__(name).__version__
        except ImportError:
            env[name] = None
    try:
        fields = "driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit"
        line = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20).stdout.splitlines()[0]
        env.update(dict(zip(fields.split(","), (v.strip() for v in line.split(",")))))
    except (OSError, IndexError, subprocess.SubprocessError):
        env["driver_version"] = None
    return env


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs))


def _peer_key(row: dict) -> str:
    """The peer a row's ``ratio`` is against: cuDNN conv+relu (or conv alone without relu), cuBLAS."""
    return "cublas" if "cublas_us" in row else ("cudnn_relu" if "cudnn_relu_us" in row else "cudnn")


def run(args) -> int:
    _import_kdd()
    import torch
    from kdd.core.codegen.ptx.device import check_on_device, time_on_device

    bundle = Path(args.bundle)
    index = json.loads((bundle / "index.json").read_text())
    env = environment(torch)
    print(json.dumps(env), flush=True)
    rows = []
    for row in index:
        if "error" in row or (args.only and not re.search(args.only, row["name"])):
            rows.append(row)
            continue
        started = time.monotonic()
        abi = pickle.loads((bundle / f"{row['stem']}.pkl").read_bytes())
        kernel = types.SimpleNamespace(args=abi["args"], problem=abi["problem"],
                                       outputs=tuple(a for a in abi["args"] if a.role in ("output", "inout")))
        listing = types.SimpleNamespace(cubin=(bundle / f"{row['stem']}.cubin").read_bytes(),
                                        asm=gzip.decompress((bundle / f"{row['stem']}.ptx.gz").read_bytes()).decode(),
                                        launch=abi["launch"])
        try:
            chk = check_on_device(listing, kernel, reference=lambda p, i: _torch_reference(p, i, torch),
                                  rounding=True, launches=3)
            row.update(ok=chk["ok"], rel_err=chk["rel_err"], tol=chk["tol"], inputs=chk["inputs"],
                       launches=chk["launches"], loaded_from=chk["loaded_from"], device=chk["device"])
            if not chk["ok"]:           # a wrong kernel is not timed: every timed launch must be a correct one
                raise RuntimeError(f"wrong result (rel_err {chk['rel_err']}, tol {chk['tol']}): not timed")
            flops = abi["flops"]() if callable(abi["flops"]) else abi["flops"]
            ours, peers = [], {}
            for _ in range(args.reps):      # alternated, so drifts of clocks or of the libraries' picks show in both
                t = time_on_device(listing, kernel, runs=args.runs, flops=flops)
                ours.append(t["median_us"])
                for name, timing in _baselines(abi["problem"], torch, args.runs).items():
                    peers.setdefault(name, []).append(timing["median_us"])
                    if "config" in timing:
                        row["triton_config"] = timing["config"]
            mine = _median(ours)
            row.update(ours_us=mine, ours_reps_us=ours, tflops=flops / (mine * 1e-6) / 1e12, method=t["method"],
                       rotations=t["rotations"])
            for name, reps in peers.items():
                row[f"{name}_us"] = _median(reps)
                row[f"{name}_reps_us"] = reps
                row[f"ratio_{name}"] = _median(reps) / mine
            row["ratio"] = row[f"ratio_{_peer_key(row)}"]
        except Exception as exc:          # one failing kernel does not stop the sweep
            row["run_error"] = f"{type(exc).__name__}: {exc}"[:500]
        row["run_s"] = round(time.monotonic() - started, 1)     # check, timing and peers: the run's own cost
        rows.append(row)
        peers_text = " ".join(f"{k[:-3]}={row[k]:.1f}us" for k in row if k.endswith("_us") and not k.startswith("ours")
                              and isinstance(row[k], float))
        print(f"{row['name']:40s} ok={row.get('ok')} rel_err={row.get('rel_err')} ours={row.get('ours_us', 0):.1f}us "
              f"{peers_text} ratio={row.get('ratio', 0):.3f} {row.get('run_error', '')}", flush=True)
        if args.json:           # the rows so far, so that a run stopped by a time limit still leaves them
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).write_text(json.dumps(_results(env, rows, args.reps, complete=False), indent=1,
                                                  default=str))
    out = _results(env, rows, args.reps, complete=True)
    return write_results(args.json, out, out["summary"])


def _results(env: dict, rows: list[dict], reps: int, complete: bool) -> dict:
    """The JSON of a run: environment, rows and per group the geometric means of the correct kernels'
    ratios (``complete`` false while rows are still to come)."""
    summary = {"card": env["card"]}
    for group in ("resnet50", "gemm"):
        ok = [x for x in rows if x.get("group") == group and x.get("ratio") and x.get("ok")]
        if ok:
            keys = sorted({k for x in ok for k in x if k.startswith("ratio_")})
            summary[group] = {"kernels": len(ok), "reps": reps, "worst_ratio": min(x["ratio"] for x in ok),
                              **{f"geomean_{k}": _geomean([x[k] for x in ok if k in x]) for k in keys}}
    return {"bench": "gpu_resnet50", "method": "GPU time per launch: CUDA graphs of --runs launches, inputs rotated "
            "past L2 on every side, correct launches only (rounding inputs, 3 launches on unreset buffers)",
            "complete": complete, "environment": env, "summary": summary, "rows": rows}


def compare(args) -> int:
    """Two ``run`` JSONs (before, after) of the same card: per kernel our two times, and per group the
    geometric mean of our speed-up and of the fastest peer rep of both runs over each run's time. A
    library's pick and time move between machines more than ours, so a ratio against each run's own
    peer can hide a change. Runs of different cards, or of the earlier harness (no ``environment``: host
    time inside the events, split-K launches that skipped their epilogue), are refused."""
    runs = [json.loads(Path(f).read_text()) for f in (args.before, args.after)]
    cards = [r.get("environment", {}).get("card") for r in runs]
    if None in cards:
        print("compare: a run without 'environment' was measured with the earlier, flawed harness; "
              "re-measure it with this one", file=sys.stderr)
        return 2
    if cards[0] != cards[1]:
        print(f"compare: the runs are of different cards ({cards[0]} / {cards[1]}); "
              "measure both on one card", file=sys.stderr)
        return 2
    before, after = ({r["name"]: r for r in run["rows"] if r.get("ok") and "ours_us" in r} for run in runs)
    for group in ("resnet50", "gemm"):
        names = [n for n, r in after.items() if r.get("group") == group and n in before]
        if not names:
            continue
        key = {n: _peer_key(after[n]) for n in names}
        fastest = {n: min(before[n].get(f"{key[n]}_reps_us", [math.inf]) + after[n][f"{key[n]}_reps_us"])
                   for n in names}
        for n in names:
            old, new = before[n]["ours_us"], after[n]["ours_us"]
            print(f"{n:40s} ours {old:8.1f} -> {new:8.1f} us, fastest {key[n]} {fastest[n]:7.1f} us: "
                  f"{fastest[n] / old:.3f} -> {fastest[n] / new:.3f}")
        speedup = _geomean([before[n]["ours_us"] / after[n]["ours_us"] for n in names])
        print(f"{group}: {len(names)} kernels, our speed-up {speedup:.3f}, vs the fastest peer rep of both runs "
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
    p.add_argument("--variant", action="append", default=[], metavar="NAME=LINE",
                   help="also build the layers and GEMMs under config line LINE (+KNOBS: their own line with "
                        "KNOBS added), as rows NAME@VARIANT (repeatable; --only selects them too): variants "
                        "timed in one run against the same peers")
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
