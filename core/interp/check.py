"""The correctness check: run a built kernel in the interpreter and compare with the float64 reference.

Protocol (:func:`check_kernel`):

1. Inputs are random and never zero, and exactly representable in their
   type: floats are ``k / 8`` with ``1 <= |k| <= 16`` (so f16/bf16 products
   and their f32 sums are exact for any realistic K), ``s8`` is ``±1..±4``,
   unsigned types ``1..8``, other integers ``±1..±8``. When every output is
   a float, f32 and f64 inputs instead fill their mantissa (``k / 8`` times
   a random factor in [1, 2)), so a kernel computing in a narrower type
   (an f64 problem accumulated in f32) fails against the f64 tolerance. The
   generator is seeded (``seed``), so a failure reproduces. A GEMM with weight decompression takes its
   weights and zero points over their type's whole range (u8 0..255, s8 -128..127) and scales
   ``k / 8`` times a random factor in [1, 2), over 256, rounded to f16 (the small scales of real
   quantized weights), so the decompression's f16 roundings show.
2. Every tensor is packed into its kernel argument's memory layout
   (``KernelArg.layout``; padding zero). Outputs are poisoned first (all
   bytes ``0xFF``: NaN for floats, -1/max for integers) unless the kernel
   accumulates into them (``zero_init``: zeroed) or reads them (``inout``,
   the ``sum`` post-op: random like an input).
3. The interpreter runs the kernel; it records which bytes of each buffer
   were stored to, so an output element the kernel never wrote fails even
   when its poison happens to equal the reference.
4. Per output: ``rel_err = ||out - ref|| / ||ref||`` (float64, 2-norm; NaN
   against NaN counts as equal; ``||out - ref||`` itself when ``ref`` is all
   zero). The check passes when every output element was written and
   ``rel_err <= tol`` for every output. ``first_bad_index`` is the first
   logical index (C order) that was not written or whose error exceeds
   ``tol * (|ref| + rms(ref))``.

Tolerances by output type (:func:`default_tol`): f64 1e-12, f32 1e-5
(the accumulation of exact products is exact or rounded once per add),
f16 4e-3 and bf16 3e-2 (about 8 units of their final rounding), integers 0
(exact) when every step is exact in f32 - integer or dyadic operands, no
eltwise, no division, dyadic scales - and 1e-2 otherwise (a rounding tie
decided differently in f32 and float64 moves one element by 1). A kernel whose
FMA form multiplies in a reduced-precision format (:func:`kernel_math`: f32
data in ``tf32`` on Xe-HPC's ``dpas``) gets at least that format's tolerance,
4e-3 for tf32 (f16's 10-bit mantissa): its inputs fill the f32 mantissa, so the
check sees the dropped bits. A decompression that rounds more than the product of each weight and its
scale (:func:`kernel_caveat`: the ``decompress`` modes of seed 002) widens the tolerance by what it
loses, and the result names why (``tol_reason``, :data:`CAVEATS`). A kernel whose config converts f32 A
and B to a narrower type before the FMA (``fma_type``, :func:`kernel_rounding`) is checked against the
reference of A and B rounded to that type (:func:`kernel_reference`): the products of two such values are
exact in f32, so the output type's tolerance stands, and ``tol_reason`` says so. A float output's tolerance is for an
accumulation; a post-op chain that magnifies its rounding (``exp`` of large values, ``exp`` of ``exp``, a
sum that cancels) scales it by the chain's amplification measured on the inputs
(:func:`~.reference.post_op_amplification`), and ``tol_reason`` says so. A reference value past the output
type's range is that type's infinity, matched exactly.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from kdd.core.ir.types import Scalar, Type

from kdd.core.problem.decompression import SCALES, ZERO_POINTS
from kdd.core.problem.reduced import MAX_CHECK_MACS, check_macs

from .errors import InterpError
from .grid import Launch
from .program import run_ir
from .reference import post_op_amplification, reference
from .values import from_storage, round_float, storage_dtype, to_storage

_FLOAT_TOL = {Scalar.F64: 1e-12, Scalar.F32: 1e-5, Scalar.F16: 4e-3, Scalar.BF16: 3e-2}
_MATH_TOL = {"tf32": _FLOAT_TOL[Scalar.F16]}
INEXACT_INT_TOL = 1e-2
# Seed 002's accuracy notes, as tolerance added to f16's and the reason the check prints. zs = f16(zp * s)
# is off by up to half an f16 unit of zp * s, and zp reaches 255 where the mean |w - zp| of uniform 8-bit
# values is 85: 2^-11 * 255 / 85 of a typical weight. s * 512 is exact in f16 while |s| < 65504 / 512.
_ZS = 2.0 ** -11 * 255 / 85
CAVEATS = {
    "mad": (_ZS, "decompress=mad: zero point x scale precomputed in f16 (seed 002 TRY2.1) is off by up to "
                 "2^-11 x |zp x s|, up to 255/85 of a weight's own rounding"),
    "denorm": (_ZS, "decompress=denorm: zero point x scale precomputed in f16 (TRY2.1), and the scale times 512 "
                    "(TRY2.2), exact in f16 only while |scale| < 128 (the check's scales are below 1/8)"),
}


@dataclass(frozen=True)
class CheckResult:
    """The verdict of one check run.

    ``shape`` is the checked problem's shape descriptor, ``ms`` the wall time
    of the check (packing, interpretation, reference and comparison).
    ``tensor`` names the output that failed (or had the largest error),
    ``unwritten`` counts output elements the kernel never stored,
    ``interp_ms`` is the part of ``ms`` spent compiling and running the IR.
    """

    ok: bool
    rel_err: float
    tol: float
    first_bad_index: tuple[int, ...] | None
    shape: str
    ms: float
    tensor: str | None = None
    unwritten: int = 0
    interp_ms: float = 0.0
    tol_reason: str | None = None

    def to_dict(self) -> dict:
        """The JSON form printed by ``kdd check --json``."""
        return {"ok": self.ok, "rel_err": _json_float(self.rel_err), "tol": _json_float(self.tol),
                "first_bad_index": None if self.first_bad_index is None else list(self.first_bad_index),
                "shape": self.shape, "ms": round(self.ms, 3), "tensor": self.tensor, "unwritten": self.unwritten
                } | ({"tol_reason": self.tol_reason} if self.tol_reason else {})


def _json_float(x: float) -> float | None:
    """JSON has no NaN or infinity: a non-finite error (NaN in the output) is null."""
    return x if math.isfinite(x) else None


# -- inputs ------------------------------------------------------------------------------------------

def full_range_values(t: Type, dims: tuple[int, ...], rng: np.random.Generator, scale: bool = False
                      ) -> np.ndarray:
    """A decompressed GEMM's weights and zero points over their integer type's whole range, or (``scale``)
    its scales: ``k / 8`` times a random factor in [1, 2), over 256, rounded to ``t``."""
    n = math.prod(dims)
    if scale:
        k = rng.integers(1, 17, n) * rng.choice([-1, 1], n)
        return round_float(k / 8.0 * rng.uniform(1.0, 2.0, n) / 256, t).astype(np.float64).reshape(dims)
    lo, hi = t.scalar.int_range()
    return rng.integers(lo, hi + 1, n).astype(np.float64).reshape(dims)


def random_values(t: Type, dims: tuple[int, ...], rng: np.random.Generator, mantissa: bool = False
                  ) -> np.ndarray:
    """Non-zero values exactly representable in ``t`` (see the module docstring), as float64.

    With ``mantissa``, f32 and f64 values fill their whole mantissa (``k / 8``
    times a random factor in [1, 2), rounded to ``t``), so arithmetic done in
    a narrower type than the problem's shows in the result.
    """
    n = math.prod(dims)
    if t.is_float:
        k = rng.integers(1, 17, n) * rng.choice([-1, 1], n)
        if mantissa and t.size >= 4:
            return round_float(k / 8.0 * rng.uniform(1.0, 2.0, n), t).astype(np.float64).reshape(dims)
        return (k / 8.0).reshape(dims)
    if not t.is_signed:
        return rng.integers(1, 9, n).astype(np.float64).reshape(dims)
    hi = 4 if t.scalar in (Scalar.S8, Scalar.S4) else 8
    return (rng.integers(1, hi + 1, n) * rng.choice([-1, 1], n)).astype(np.float64).reshape(dims)


def element_offsets(layout, dims: tuple[int, ...]) -> np.ndarray:
    """Element offset of every logical index of ``dims`` (C order) in ``layout`` (read-only)."""
    if tuple(layout.dims) != tuple(dims):
        raise ValueError(f"layout dims {tuple(layout.dims)} differ from the tensor's {tuple(dims)}")
    return _element_offsets(layout, tuple(dims))


@lru_cache(maxsize=16)
def _element_offsets(layout, dims: tuple[int, ...]) -> np.ndarray:
    # Cached: a bisection packs and unpacks the same tensors after every pass.
    return _read_only(layout.offsets_of(np.indices(dims).reshape(len(dims), -1).T))


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _typed(buf: np.ndarray, t: Type) -> np.ndarray:
    es = t.size
    return buf[: (buf.size // es) * es].view(storage_dtype(t))


def pack(values: np.ndarray, t: Type, layout, fill: int = 0) -> np.ndarray:
    """A byte buffer holding ``values`` (logical, exactly representable in ``t``) in ``layout`` (a packed
    4-bit type two a byte, the even element offset in the low nibble)."""
    buf = np.full(layout.size_bytes(), fill, dtype=np.uint8)
    offsets = element_offsets(layout, values.shape)
    if t.scalar.is_packed:
        nibbles = values.reshape(-1).astype(np.int64) & 0xF
        byte, high = offsets // 2, (offsets % 2).astype(bool)
        buf[byte[~high]] = (buf[byte[~high]] & 0xF0) | nibbles[~high]
        buf[byte[high]] = (buf[byte[high]] & 0x0F) | (nibbles[high] << 4)
        return buf
    stored = round_float(values, t) if t.is_float else values.astype(t.numpy)
    _typed(buf, t)[offsets] = to_storage(stored.reshape(-1), t)
    return buf


def unpack(buf: np.ndarray, t: Type, layout, dims: tuple[int, ...]) -> np.ndarray:
    """The logical float64 tensor stored in ``buf`` under ``layout``."""
    offsets = element_offsets(layout, dims)
    if t.scalar.is_packed:
        nibble = (buf[offsets // 2].astype(np.int64) >> (4 * (offsets % 2))) & 0xF
        signed = np.where(nibble >= 8, nibble - 16, nibble) if t.is_signed else nibble
        return signed.astype(np.float64).reshape(dims)
    raw = _typed(buf, t)[offsets]
    return from_storage(raw, t).astype(np.float64).reshape(dims)


def written_elements(written: np.ndarray, t: Type, layout, dims: tuple[int, ...]) -> np.ndarray:
    """Whether every byte of each logical element was stored: bool, shape ``dims``."""
    # Element e is bytes [e * size, (e + 1) * size): row e of the bytes taken ``size`` at a time.
    es = t.size
    per_element = written[: (written.size // es) * es].reshape(-1, es).all(axis=1)
    return per_element[element_offsets(layout, dims)].reshape(dims)


# -- tolerances ----------------------------------------------------------------------------------------

def _dyadic(x: float) -> bool:
    return float(x * 256).is_integer()


def _exact_chain(post_ops) -> bool:
    from kdd.core.problem.post_ops import Binary, Eltwise, Scale, Sum

    for op in post_ops:
        if isinstance(op, Eltwise) or (isinstance(op, Binary) and op.alg == "div"):
            return False
        if isinstance(op, Scale) and not _dyadic(op.value):
            return False
        if isinstance(op, Sum) and not _dyadic(op.scale):
            return False
    return True


def default_tol(problem, t: Type, math: str = "", caveat: str = "") -> float:
    """The tolerance of an output of type ``t`` of a kernel multiplying in ``math`` (``""``: the operand
    types) whose weight decompression rounds as ``caveat`` says (a key of :data:`CAVEATS`, ``""`` for
    none; see the module docstring)."""
    if t.is_float:
        return max(_FLOAT_TOL[t.scalar], _MATH_TOL.get(math, 0.0)) + CAVEATS.get(caveat, (0.0,))[0]
    return 0.0 if _exact_chain(problem.post_ops) else INEXACT_INT_TOL


def kernel_math(kernel) -> str:
    """The reduced-precision format ``kernel``'s FMA form multiplies in (the target's ``FmaShape.math``
    for its ``fma``, SIMD width and A/B types), ``""`` when it multiplies in the operand types or the
    kernel carries no config."""
    from kdd.core.config.operands import operands
    from kdd.core.targets import get_target

    config, problem = kernel.config, kernel.problem
    if config is None or problem is None or config.fma is None:
        return ""
    ops = operands(problem, config)
    shapes = get_target(kernel.target).shapes(fma=config.fma, simd=config.simd, a=ops.a, b=ops.b)
    return shapes[0].math if shapes else ""


def kernel_caveat(kernel) -> str:
    """The ``decompress`` mode of a kernel whose weight decompression rounds more than each weight's
    product with its scale (a key of :data:`CAVEATS`), else ``""``."""
    config, problem = kernel.config, kernel.problem
    if problem is None or problem.decompression is None or config is None or config.decompress is None:
        return ""
    return config.decompress.mode if config.decompress.mode in CAVEATS else ""


def kernel_rounding(kernel) -> Type | None:
    """The type ``kernel``'s config converts f32 A and B to before its FMA (``fma_type``), else None."""
    from kdd.core.config.operands import operands

    if kernel.config is None or kernel.problem is None:
        return None
    ops = operands(kernel.problem, kernel.config)
    return ops.a if ops.converted is not None else None


def kernel_reference(kernel, problem, inputs: dict):
    """The float64 reference of ``problem`` on ``inputs`` as ``kernel`` computes it: A and B rounded to the
    type its config converts them to (:func:`kernel_rounding`) first."""
    rounded = kernel_rounding(kernel)
    return reference(problem, inputs if rounded is None else _rounded_ab(problem, inputs, rounded))


def _rounded_ab(problem, inputs: dict, t: Type) -> dict:
    """``inputs`` with the GEMM's A and B tensors rounded to ``t`` (as float64)."""
    from kdd.core.config.operands import operands

    ab = operands(problem).tensors[:2]
    return {name: round_float(v, t).astype(np.float64) if name in ab else v for name, v in inputs.items()}


# -- comparison ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Compared:
    name: str
    rel_err: float
    tol: float
    first_bad: tuple[int, ...] | None
    unwritten: int

    @property
    def ok(self) -> bool:
        return self.unwritten == 0 and self.rel_err <= self.tol

    @property
    def badness(self) -> float:
        if not self.ok:
            return math.inf
        return self.rel_err / self.tol if self.tol else 0.0


def compare(name: str, out: np.ndarray, ref: np.ndarray, written: np.ndarray, tol: float) -> _Compared:
    """One output against its reference (see the module docstring for the rules)."""
    # equal values (infinities of one sign included: inf - inf is NaN) and NaN against NaN differ by nothing
    same = (np.isnan(out) & np.isnan(ref)) | (out == ref)
    # a reference past the type's range (inf) or NaN is matched exactly, and stays out of the norms: one
    # infinite element would otherwise make every other element's error relative to infinity
    finite = np.isfinite(ref)
    missed = ~finite & ~same
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(same | ~finite, 0.0, out - ref)
        ref_clean = np.where(finite, ref, 0.0)
        norm = float(np.linalg.norm(ref_clean))
        err = float(np.linalg.norm(diff))
        rel = math.inf if missed.any() else (err / norm if norm > 0 else err)
        if math.isnan(rel):
            rel = math.inf
        rms = norm / math.sqrt(max(ref.size, 1)) or 1.0
        bad = ~written | missed | ~(np.abs(diff) <= tol * (np.abs(ref_clean) + rms))
    first = None
    if bad.any():
        first = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad.reshape(-1))), ref.shape))
    elif rel > tol:
        first = tuple(int(i) for i in np.unravel_index(int(np.argmax(np.abs(diff))), ref.shape))
    return _Compared(name, rel, tol, first, int((~written).sum()))


# -- the check -------------------------------------------------------------------------------------------

class CheckTooLarge(InterpError):
    """The check would interpret more multiply-adds than its bound (pass ``max_macs=None`` to run it)."""


def check_kernel(kernel, problem=None, *, seed: int = 0, tol: float | None = None,
                 max_macs: int | None = MAX_CHECK_MACS) -> CheckResult:
    """Runs ``kernel`` (a built :class:`~kdd.core.builder.Kernel`) in the interpreter on random
    inputs and compares its outputs with :func:`~.reference.reference` for ``problem``
    (``kernel.problem`` by default). ``tol`` overrides :func:`default_tol` for every output.

    Raises :class:`CheckTooLarge` before running anything when the problem
    has more than ``max_macs`` multiply-adds (None: no bound)."""
    start = time.perf_counter()
    problem = problem if problem is not None else kernel.problem
    if max_macs is not None and check_macs(problem) > max_macs:
        raise CheckTooLarge(f"the check of {problem.shape.canonical()} would interpret {check_macs(problem)} "
                            f"multiply-adds, more than the bound of {max_macs}; check a smaller shape")
    buffers, inputs, refs = _prepared(tuple(kernel.args), _fills_mantissa(kernel), seed, problem,
                                      kernel_rounding(kernel))
    buffers = {arg.var.name: buffers[arg.name].copy() for arg in kernel.args}
    launch = Launch(tuple(kernel.grid), tuple(kernel.tg), kernel.simd, kernel.reg_bytes)
    interp_start = time.perf_counter()
    run = run_ir(kernel.body, launch, buffers)
    interp_ms = (time.perf_counter() - interp_start) * 1e3
    outputs = {arg.name: buffers[arg.var.name] for arg in kernel.outputs}
    written = {arg.name: run.written[arg.var.name] for arg in kernel.outputs if arg.var.name in run.written}
    return verdict(kernel, problem, inputs, outputs, written, tol, start, interp_ms, refs)


@lru_cache(maxsize=2)
def _prepared(args: tuple, mantissa: bool, seed: int, problem, rounded: Type | None
              ) -> tuple[dict, dict, dict]:
    """:func:`check_buffers` and the reference outputs (A and B rounded to ``rounded`` first, see
    :func:`kernel_reference`), read-only. Cached: a bisection checks the same arguments of the same
    problem after every pass."""
    buffers, inputs = _buffers(args, mantissa, seed)
    refs = reference(problem, inputs if rounded is None else _rounded_ab(problem, inputs, rounded))
    for a in (*buffers.values(), *inputs.values(), *refs.values()):
        _read_only(a)
    if refs.accumulator is not None:
        _read_only(refs.accumulator)
    return buffers, inputs, refs


def _fills_mantissa(kernel) -> bool:
    # Float outputs have a rounding tolerance, so their inputs can fill the mantissa; integer outputs
    # need exact sums (a rounding tie decided differently would move an element by one).
    return all(arg.dtype.is_float for arg in kernel.outputs)


def check_buffers(kernel, seed: int = 0) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Every argument's bytes (by argument name) and the logical inputs, as the protocol makes them
    (steps 1 and 2 of the module docstring)."""
    return _buffers(kernel.args, _fills_mantissa(kernel), seed)


def unwritten_bytes(arg) -> np.ndarray:
    """An output or scratch buffer before a launch (step 1 of the protocol): zeroed where the kernel adds
    into it (``zero_init``), else poisoned with ``0xFF`` so an element never written shows."""
    return np.full(arg.layout.size_bytes(), 0 if arg.zero_init else 0xFF, dtype=np.uint8)


def _buffers(args, mantissa: bool, seed: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    buffers: dict[str, np.ndarray] = {}
    inputs: dict[str, np.ndarray] = {}
    decompressed = any(arg.name == SCALES for arg in args)
    for arg in args:
        dims = tuple(size for _, size in arg.dims)
        if arg.role in ("output", "scratch"):  # the kernel writes them before reading
            buffers[arg.name] = unwritten_bytes(arg)
            continue
        if decompressed and arg.name in ("wei", SCALES, ZERO_POINTS):
            values = full_range_values(arg.dtype, dims, rng, scale=arg.name == SCALES)
        else:
            values = random_values(arg.dtype, dims, rng, mantissa)
        inputs[arg.name] = values
        buffers[arg.name] = pack(values, arg.dtype, arg.layout)
    return buffers, inputs


def verdict(kernel, problem, inputs: dict, outputs: dict, written: dict, tol: float | None, start: float,
            run_ms: float = 0.0, refs: dict | None = None) -> CheckResult:
    """Step 4 of the protocol: every output (bytes by argument name; ``written``: bool per byte, an
    output missing from it was never written) against the float64 reference (``refs`` when the caller
    computed it already). ``start`` is the ``perf_counter`` the check's time counts from."""
    refs = refs if refs is not None else kernel_reference(kernel, problem, inputs)
    math, caveat, rounded = kernel_math(kernel), kernel_caveat(kernel), kernel_rounding(kernel)
    amplified = tol is None and any(arg.dtype.is_float for arg in kernel.outputs)
    amplification = post_op_amplification(problem, inputs, getattr(refs, "accumulator", None)) if amplified else 1.0
    results = []
    for arg in kernel.outputs:
        dims = tuple(size for _, size in arg.dims)
        out = unpack(outputs[arg.name], arg.dtype, arg.layout, dims)
        written_bytes = written.get(arg.name, np.zeros(arg.layout.size_bytes(), dtype=bool))
        done = written_elements(written_bytes, arg.dtype, arg.layout, dims)
        limit = tol if tol is not None else default_tol(problem, arg.dtype, math, caveat) * (
            amplification if arg.dtype.is_float else 1.0)
        results.append(compare(arg.name, out, refs[arg.name], done, limit))
    worst = max(results, key=lambda r: r.badness)
    reasons = [CAVEATS[caveat][1]] if caveat and tol is None else []
    if rounded is not None and tol is None:
        reasons.append(f"fma_type={rounded}: the kernel rounds A and B to {rounded} before the multiply, and the "
                       f"reference rounds them the same way; products of {rounded} values are exact in f32, so "
                       "the tolerance is the output type's")
    if amplification > 1.0:
        reasons.append(f"the post-ops magnify the accumulator's rounding {amplification:.3g} times on these inputs "
                       "(measured on the float64 reference), and the tolerance with it")
    return CheckResult(all(r.ok for r in results), worst.rel_err, worst.tol, worst.first_bad,
                       problem.shape.canonical(), (time.perf_counter() - start) * 1e3, worst.name,
                       sum(r.unwritten for r in results), run_ms, "; ".join(reasons) or None)


def run_check(problem, config, target, *, seed: int = 0, tol: float | None = None,
              max_macs: int | None = MAX_CHECK_MACS) -> CheckResult:
    """Builds the kernel of ``problem`` under ``config`` for ``target`` and checks it."""
    from kdd.core.builder import build_kernel

    return check_kernel(build_kernel(problem, config, target), problem, seed=seed, tol=tol, max_macs=max_macs)


__all__ = ["CAVEATS", "CheckResult", "CheckTooLarge", "check_buffers", "check_kernel", "default_tol", "full_range_values",
           "kernel_caveat", "kernel_math", "kernel_reference", "kernel_rounding", "pack", "random_values", "run_check",
           "unpack", "unwritten_bytes", "verdict"]
