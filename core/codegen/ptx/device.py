"""Running a generated cubin on an NVIDIA GPU: correctness against the float64 reference, and timing.

What ``kdd check --device`` and ``kdd bench`` call (CuPy is imported only
here, when a function runs; without it or without a device the answer is a
:class:`DeviceUnavailable` with the reason)::

    listing = generate_ptx(kernel, body, target)
    result = check_on_device(listing, kernel)        # dict: ok, rel_err, tol, tensor, ms, device
    timing = time_on_device(listing, kernel)         # dict: median_us, tflops, runs, rotations

Inputs follow the interpreter's check protocol (``kdd.core.interp.check``:
random exactly-representable values packed into each argument's layout,
outputs poisoned with ``0xFF`` or zeroed for ``zero_init``), so a device
result and an interpreter result are comparable. The reference is
``reference`` (float64 numpy) unless the caller passes its own (the ResNet
benchmark computes it with torch in float64 on the GPU, numpy being too slow
at full size). The launch is the listing's ``launch``: ``grid`` blocks of
``block`` threads (32 per IR thread in x) with ``shared_bytes`` of dynamic
shared memory. A cubin the driver refuses (built by a newer ptxas than the
driver knows) is loaded from the PTX instead, which the driver compiles.
"""
from __future__ import annotations

import math
import os
import tempfile
import time

import numpy as np


class DeviceUnavailable(RuntimeError):
    """No CuPy, no CUDA device, or the module could not be loaded."""


def _cupy():
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise DeviceUnavailable("no CUDA device")
        return cupy
    except ImportError:
        raise DeviceUnavailable("CuPy is not installed (pip install cupy-cuda12x)") from None
    except Exception as exc:    # CUDA runtime errors have no common base class in CuPy
        if isinstance(exc, DeviceUnavailable):
            raise
        raise DeviceUnavailable(f"CUDA is not usable: {exc}") from None


def load(listing):
    """The kernel function of ``listing`` (the cubin, or the PTX when the driver refuses the cubin)
    and how it was loaded."""
    cp = _cupy()
    with tempfile.TemporaryDirectory(prefix="kdd-dev-") as tmp:
        errors = []
        for suffix, data in ((".cubin", listing.cubin), (".ptx", listing.asm.encode())):
            if not data:
                continue
            path = os.path.join(tmp, "kernel" + suffix)
            with open(path, "wb") as f:
                f.write(data)
            try:
                fn = cp.RawModule(path=path).get_function(listing.launch["entry"])
            except Exception as exc:     # CuPy raises CUDADriverError; keep the driver's words
                errors.append(f"{suffix[1:]}: {exc}")
                continue
            shared = listing.launch["shared_bytes"]
            if shared > 48 * 1024:
                fn.max_dynamic_shared_size_bytes = shared
            return fn, suffix[1:]
    raise DeviceUnavailable("the module did not load: " + "; ".join(errors))


def device_buffers(kernel, seed: int = 0) -> tuple[dict, dict]:
    """Host byte buffers per argument (by argument name) and the logical inputs, as the interpreter
    check makes them."""
    from kdd.core.interp.check import pack, random_values

    rng = np.random.default_rng(seed)
    mantissa = all(a.dtype.is_float for a in kernel.outputs)
    buffers, inputs = {}, {}
    for arg in kernel.args:
        dims = tuple(size for _, size in arg.dims)
        if arg.role in ("output", "scratch"):  # the kernel writes them before reading
            buffers[arg.name] = np.full(arg.layout.size_bytes(), 0 if arg.zero_init else 0xFF, dtype=np.uint8)
            continue
        values = random_values(arg.dtype, dims, rng, mantissa)
        inputs[arg.name] = values
        buffers[arg.name] = pack(values, arg.dtype, arg.layout)
    return buffers, inputs


def _launch(fn, listing, ptrs) -> None:
    L = listing.launch
    fn(tuple(L["grid"]), tuple(L["block"]), tuple(ptrs), shared_mem=L["shared_bytes"])


def check_on_device(listing, kernel, problem=None, *, seed: int = 0, tol: float | None = None,
                    reference=None) -> dict:
    """Run the cubin once on the check inputs and compare every output with the float64 reference
    (``reference(problem, inputs) -> {name: array}``; kdd's numpy reference by default)."""
    from kdd.core.interp.check import compare, default_tol, unpack
    from kdd.core.interp.reference import reference as numpy_reference

    cp = _cupy()
    problem = problem if problem is not None else kernel.problem
    start = time.perf_counter()
    fn, loaded = load(listing)
    host, inputs = device_buffers(kernel, seed)
    dev = {name: cp.asarray(buf) for name, buf in host.items()}
    _launch(fn, listing, [dev[a.name] for a in kernel.args])
    cp.cuda.Device().synchronize()
    refs = (reference or numpy_reference)(problem, inputs)
    results = []
    for arg in kernel.outputs:
        dims = tuple(size for _, size in arg.dims)
        out = unpack(cp.asnumpy(dev[arg.name]), arg.dtype, arg.layout, dims)
        limit = tol if tol is not None else default_tol(problem, arg.dtype)
        results.append(compare(arg.name, out, np.asarray(refs[arg.name], dtype=np.float64),
                               np.ones(dims, dtype=bool), limit))
    worst = max(results, key=lambda r: r.badness)
    return {"ok": all(r.ok for r in results), "rel_err": _finite(worst.rel_err), "tol": worst.tol,
            "first_bad_index": list(worst.first_bad) if worst.first_bad else None, "tensor": worst.name,
            "shape": problem.shape.canonical(), "ms": (time.perf_counter() - start) * 1e3,
            "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "loaded_from": loaded}


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def time_on_device(listing, kernel, *, runs: int = 50, warmup: int = 5, rotate_bytes: int = 256 << 20,
                   flops: float | None = None) -> dict:
    """Median time of ``runs`` launches timed with CUDA events, the inputs rotated over enough
    copies that together they exceed ``rotate_bytes`` (larger than the L2 cache), so no launch
    finds its inputs cached by the one before."""
    cp = _cupy()
    fn, loaded = load(listing)
    host, _ = device_buffers(kernel)
    per_copy = sum(buf.nbytes for buf in host.values())
    copies = max(1, min(64, -(-rotate_bytes // max(per_copy, 1))))
    sets = [{name: cp.asarray(buf) for name, buf in host.items()} for _ in range(copies)]
    args = [[s[a.name] for a in kernel.args] for s in sets]
    for i in range(warmup):
        _launch(fn, listing, args[i % copies])
    times = []
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for i in range(runs):
        start.record()
        _launch(fn, listing, args[i % copies])
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
    median = float(np.median(times))
    out = {"median_us": median, "min_us": float(min(times)), "runs": runs, "rotations": copies,
           "loaded_from": loaded, "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode()}
    if flops:
        out["tflops"] = flops / (median * 1e-6) / 1e12
    return out


__all__ = ["DeviceUnavailable", "check_on_device", "device_buffers", "load", "time_on_device"]
