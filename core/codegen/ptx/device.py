"""Running a generated cubin on an NVIDIA GPU: correctness against the float64 reference, and timing.

What ``kdd check --device`` and ``kdd bench`` call (CuPy is imported only
here, when a function runs; without it or without a device the answer is a
:class:`DeviceUnavailable` with the reason)::

    listing = generate_ptx(kernel, body, target)
    result = check_on_device(listing, kernel)        # dict: ok, rel_err, tol, tensor, ms, device
    timing = time_on_device(listing, kernel)         # dict: median_us (GPU time per launch), tflops, method

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
from functools import partial

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


def device_buffers(kernel, seed: int = 0, *, rounding: bool = False) -> tuple[dict, dict]:
    """Host byte buffers per argument (by argument name) and the logical inputs, as the interpreter
    check makes them; with ``rounding``, float inputs are normal random values of their type instead of
    the check's exactly-summable ``k / 8`` (products and sums round, as in real use: see
    :func:`rounding_tol`)."""
    from kdd.core.interp.check import pack, random_values, unwritten_bytes

    rng = np.random.default_rng(seed)
    mantissa = all(a.dtype.is_float for a in kernel.outputs)
    buffers, inputs = {}, {}
    for arg in kernel.args:
        dims = tuple(size for _, size in arg.dims)
        if arg.role in ("output", "scratch"):  # the kernel writes them before reading
            buffers[arg.name] = unwritten_bytes(arg)
            continue
        if rounding and arg.dtype.is_float:
            values = _normal(arg.dtype, dims, rng)
        else:
            values = random_values(arg.dtype, dims, rng, mantissa)
        inputs[arg.name] = values
        buffers[arg.name] = pack(values, arg.dtype, arg.layout)
    return buffers, inputs


def _normal(t, dims: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Standard normal values rounded to ``t`` (as float64): full mantissas, both signs, no zeros."""
    from kdd.core.interp.values import round_float

    v = rng.standard_normal(int(np.prod(dims)))
    v = np.where(np.abs(v) < 2.0 ** -8, 2.0 ** -8, v)
    return round_float(v, t).astype(np.float64).reshape(dims)


def reduction_length(problem) -> int:
    """How many products each output element sums: K of the problem's GEMM view."""
    return max(1, int(problem.gemm_dims().K))


def rounding_tol(problem, t) -> float:
    """The tolerance of an output of type ``t`` on :func:`device_buffers`' ``rounding`` inputs: the
    output's own rounding (``kdd check``'s tolerance for ``t``) plus a worst-case f32 accumulation error
    of ``K`` roundings of 2^-24 each, relative to the output's norm."""
    from kdd.core.interp.check import default_tol

    return default_tol(problem, t) + reduction_length(problem) * 2.0 ** -24


def _launch(fn, listing, ptrs) -> None:
    L = listing.launch
    if L.get("tensor_maps"):
        _launch_with_maps(fn, L, ptrs)
        return
    fn(tuple(L["grid"]), tuple(L["block"]), tuple(ptrs), shared_mem=L["shared_bytes"])


# cuTensorMapEncodeTiled's enumerations (cuda.h): data types, no interleave, 128-byte swizzle, L2 promotion
# of 128 bytes, out-of-bounds elements read as zeros
_TMA_DTYPE = {"FLOAT16": 6, "FLOAT32": 7, "BFLOAT16": 9}
_TMA_SWIZZLE = {128: 3}
_L2_PROMOTION_128B = 2


def _driver():
    import ctypes

    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        raise DeviceUnavailable(f"the CUDA driver library did not load: {exc}") from None


def encode_tensor_map(entry: dict, ptr: int) -> bytes:
    """The 128 bytes of the tensor map the launch's ``entry`` describes (``dtype``, ``dims`` innermost
    first, ``strides``: the bytes between consecutive elements of each dim above the first, ``box``,
    ``swizzle``) over the device buffer at ``ptr``, encoded by the driver's ``cuTensorMapEncodeTiled``."""
    import ctypes

    u64, u32 = ctypes.c_uint64, ctypes.c_uint32
    rank = len(entry["dims"])
    out = (ctypes.c_uint8 * 128)()
    rc = _driver().cuTensorMapEncodeTiled(
        ctypes.byref(out), ctypes.c_int(_TMA_DTYPE[entry["dtype"]]), u32(rank), ctypes.c_void_p(ptr),
        (u64 * rank)(*entry["dims"]), (u64 * (rank - 1))(*entry["strides"]), (u32 * rank)(*entry["box"]),
        (u32 * rank)(*[1] * rank), ctypes.c_int(0), ctypes.c_int(_TMA_SWIZZLE[entry["swizzle"]]),
        ctypes.c_int(_L2_PROMOTION_128B), ctypes.c_int(0))
    if rc != 0:
        raise DeviceUnavailable(f"cuTensorMapEncodeTiled failed with CUresult {rc} for {entry}")
    return bytes(out)


def _launch_with_maps(fn, launch: dict, ptrs) -> None:
    """``cuLaunchKernel`` with the pointer arguments followed by the tensor maps, passed by value (the
    kernel's ``.param .align 64 .b8 tmap_N[128]``), on CuPy's current stream."""
    import ctypes

    import cupy

    by_name = dict(zip(launch["params"], ptrs))
    values = [ctypes.c_uint64(int(p.data.ptr)) for p in ptrs]
    for m in launch["tensor_maps"]:
        raw = encode_tensor_map(m, int(by_name[m["buffer"]].data.ptr))
        values.append((ctypes.c_uint8 * 128).from_buffer_copy(raw))
    params = (ctypes.c_void_p * len(values))(*(ctypes.addressof(v) for v in values))
    g, b = launch["grid"], launch["block"]
    rc = _driver().cuLaunchKernel(ctypes.c_void_p(getattr(fn, "kernel", fn).ptr),  # RawKernel -> CUfunction
                                  *(ctypes.c_uint(x) for x in (*g, *b)),
                                  ctypes.c_uint(launch["shared_bytes"]),
                                  ctypes.c_void_p(cupy.cuda.get_current_stream().ptr), params, None)
    if rc != 0:
        raise RuntimeError(f"cuLaunchKernel failed with CUresult {rc}")


def check_on_device(listing, kernel, problem=None, *, seed: int = 0, tol: float | None = None,
                    reference=None, rounding: bool = False, launches: int = 1) -> dict:
    """Run the cubin on the check inputs and compare every output with the float64 reference
    (``reference(problem, inputs) -> {name: array}``; by default kdd's numpy reference as the kernel computes
    it: A and B rounded first where its config's ``fma_type`` converts them).

    With ``launches`` > 1 the kernel runs that many times on the same buffers, the outputs poisoned (or
    zeroed where it adds into them) before each launch but its scratch buffers never reset by the host:
    every launch must be correct on what the one before left (split K's scratch and arrival counters).
    The answer is the worst launch's."""
    from kdd.core.interp.check import compare, default_tol, kernel_reference, unpack, unwritten_bytes

    cp = _cupy()
    problem = problem if problem is not None else kernel.problem
    start = time.perf_counter()
    fn, loaded = load(listing)
    host, inputs = device_buffers(kernel, seed, rounding=rounding)
    dev = {name: cp.asarray(buf) for name, buf in host.items()}
    refs = None
    results = []
    for _ in range(launches):
        for arg in kernel.outputs:
            dev[arg.name][...] = cp.asarray(unwritten_bytes(arg))
        _launch(fn, listing, [dev[a.name] for a in kernel.args])
        cp.cuda.Device().synchronize()
        refs = refs if refs is not None else (reference or partial(kernel_reference, kernel))(problem, inputs)
        for arg in kernel.outputs:
            dims = tuple(size for _, size in arg.dims)
            out = unpack(cp.asnumpy(dev[arg.name]), arg.dtype, arg.layout, dims)
            limit = tol if tol is not None else (rounding_tol if rounding else default_tol)(problem, arg.dtype)
            results.append(compare(arg.name, out, np.asarray(refs[arg.name], dtype=np.float64),
                                   np.ones(dims, dtype=bool), limit))
    worst = max(results, key=lambda r: r.badness)
    return {"ok": all(r.ok for r in results), "rel_err": _finite(worst.rel_err), "tol": worst.tol,
            "first_bad_index": list(worst.first_bad) if worst.first_bad else None, "tensor": worst.name,
            "shape": problem.shape.canonical(), "ms": (time.perf_counter() - start) * 1e3, "launches": launches,
            "inputs": "rounding" if rounding else "exact", "device": _device_name(cp), "loaded_from": loaded}


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _device_name(cp) -> str:
    return cp.cuda.runtime.getDeviceProperties(0)["name"].decode()


def gpu_time_per_launch(cp, launch_one, runs: int, reps: int = 5) -> dict:
    """GPU time of ``launch_one(i)`` (which enqueues launch ``i`` on the current stream), per launch:
    ``runs`` launches captured once in a CUDA graph, the graph replayed ``reps`` times between two
    events; the median and the fastest replay over ``runs``. Host work (argument packing, the launch
    calls) stays out of the events. Where the stream cannot be captured the ``runs`` launches are
    enqueued back to back between the events instead (``method`` says which)."""
    stream = cp.cuda.Stream(non_blocking=True)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    with stream:
        try:
            stream.begin_capture()
            for i in range(runs):
                launch_one(i)
            graph = stream.end_capture()
            method = "cuda-graph"
            replay = (lambda: graph.launch(stream))
        except Exception:           # CuPy raises CUDARuntimeError or a RuntimeError without capture support
            if stream.is_capturing():
                stream.end_capture()
            method = "back-to-back"

            def replay():
                for i in range(runs):
                    launch_one(i)
        replay()                    # warm-up: module load, caches, clocks
        stream.synchronize()
        times = []
        for _ in range(reps):
            start.record(stream)
            replay()
            stop.record(stream)
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop) * 1e3 / runs)
    return {"median_us": float(np.median(times)), "min_us": float(min(times)), "runs": runs, "reps": reps,
            "method": method}


def rotation_copies(bytes_per_copy: int, rotate_bytes: int = 256 << 20) -> int:
    """How many copies of the inputs together exceed ``rotate_bytes`` (more than the L2 cache), so no
    launch finds its inputs cached by the one before (at most 64)."""
    return max(1, min(64, -(-rotate_bytes // max(bytes_per_copy, 1))))


def time_on_device(listing, kernel, *, runs: int = 50, reps: int = 5, rotate_bytes: int = 256 << 20,
                   flops: float | None = None) -> dict:
    """GPU time per launch (:func:`gpu_time_per_launch`), the inputs rotated over
    :func:`rotation_copies` copies. Every timed launch is a correct one: outputs the kernel adds into
    (plain split-K atomics) are zeroed before each launch inside the timed region, as a caller must;
    split K's scratch buffers and counters are left as the kernel leaves them, zeroed again by the last
    arrival (``kdd.core.builder.split_k``)."""
    cp = _cupy()
    fn, loaded = load(listing)
    host, _ = device_buffers(kernel)
    copies = rotation_copies(sum(buf.nbytes for buf in host.values()), rotate_bytes)
    sets = [{name: cp.asarray(buf) for name, buf in host.items()} for _ in range(copies)]
    args = [[s[a.name] for a in kernel.args] for s in sets]
    zeroed = [a.name for a in kernel.outputs if a.zero_init]

    def launch_one(i: int) -> None:
        for name in zeroed:
            sets[i % copies][name].fill(0)
        _launch(fn, listing, args[i % copies])
    out = {**gpu_time_per_launch(cp, launch_one, runs, reps), "rotations": copies, "loaded_from": loaded,
           "zeroed_per_launch": zeroed, "device": _device_name(cp)}
    if flops:
        out["tflops"] = flops / (out["median_us"] * 1e-6) / 1e12
    return out


__all__ = ["DeviceUnavailable", "check_on_device", "device_buffers", "encode_tensor_map", "gpu_time_per_launch", "load", "rotation_copies",
           "rounding_tol", "time_on_device"]
