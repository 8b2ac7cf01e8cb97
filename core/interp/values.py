"""Vectorized value conversions: IR types as numpy arrays, to and from bytes.

In the interpreter a value of IR type ``t`` is a numpy array of
``value_dtype(t)``: bool as ``np.bool_`` and bf16 as float32 holding a value
that is exactly representable in bf16 (numpy has no bf16). In memory, values
are little-endian bytes of ``storage_dtype(t)``: bf16 as the upper 16 bits of
its float32 (uint16), bool as one byte (non-zero reads as true).

``convert`` is the C cast of ``kdd.core.ir.eval.convert`` (truncation toward
zero, wrap-around or saturation, NaN to 0, infinities to the range ends);
``convert_nearest`` is the rounding conversion of ``reorder`` (round to
nearest even, saturate).
"""
from __future__ import annotations

import numpy as np

from kdd.core.ir.expr import wrap_int
from kdd.core.ir.types import Scalar, Type

_U32_LOW = np.uint32(0xFFFF0000)


def value_dtype(t: Type) -> np.dtype:
    """numpy dtype of values of ``t`` in registers of the interpreter (bf16 is float32)."""
    return _VALUE_DTYPES[t.scalar]


def storage_dtype(t: Type) -> np.dtype:
    """numpy dtype of ``t`` as stored in memory (bf16 is uint16, bool is uint8)."""
    return _STORAGE_DTYPES[t.scalar]


# Per scalar kind, looked up on every access of the interpreter.
_VALUE_DTYPES = {s: np.dtype(Type(s).numpy) for s in Scalar}
_STORAGE_DTYPES = {s: np.dtype(np.uint16 if s is Scalar.BF16 else np.uint8 if Type(s).is_bool else Type(s).numpy)
                   for s in Scalar}


# -- bf16 ----------------------------------------------------------------------------------------

def bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 values to bf16 bit patterns, rounding to nearest even (NaN stays NaN)."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    # A NaN whose payload sits in the low half would round to infinity: keep it a quiet NaN.
    return np.where(nan, (bits >> np.uint32(16)) | np.uint32(0x40), rounded).astype(np.uint16)


def bf16_value(bits: np.ndarray) -> np.ndarray:
    """bf16 bit patterns (uint16) to the float32 values they denote (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def round_bf16(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to bf16 precision, as float32 (eval's ``round_float`` for bf16)."""
    x = np.asarray(x, dtype=np.float32)
    bits = x.view(np.uint32)
    rounded = ((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & _U32_LOW)
    return np.where(np.isnan(x), x, rounded.view(np.float32))


def round_float(x64: np.ndarray, t: Type) -> np.ndarray:
    """float64 values rounded to float type ``t`` (bf16 through float32, as eval does)."""
    s = t.scalar
    if s is Scalar.F64:
        return np.asarray(x64, dtype=np.float64)
    if s is Scalar.F32:
        return np.asarray(x64).astype(np.float32)
    if s is Scalar.F16:
        return np.asarray(x64).astype(np.float16)
    return round_bf16(np.asarray(x64).astype(np.float32))


# -- tf32 ------------------------------------------------------------------------------------------

_TF32_KEEP = np.uint32(0xFFFFE000)


def tf32_operand(x: np.ndarray) -> np.ndarray:
    """The values an f32 register holds as a matrix unit reads them in tf32: sign, 8-bit exponent and
    the top 10 mantissa bits, the low 13 bits dropped (rounding toward zero; a NaN whose payload sits
    only there stays a NaN). Xe's ``dpas`` with ``:tf32`` sources does not round: kernels that want
    round-to-nearest convert first."""
    x = np.asarray(x, dtype=np.float32)
    kept = (x.view(np.uint32) & _TF32_KEEP).view(np.float32)
    return np.where(np.isnan(x), x, kept)


# -- bytes -----------------------------------------------------------------------------------------

def to_storage(values: np.ndarray, t: Type) -> np.ndarray:
    """Values of type ``t`` as an array of ``storage_dtype(t)`` (same shape)."""
    if t.scalar is Scalar.BF16:
        return bf16_bits(values)
    return np.asarray(values).astype(storage_dtype(t), copy=False)


def from_storage(raw: np.ndarray, t: Type) -> np.ndarray:
    """The inverse of :func:`to_storage`."""
    if t.scalar is Scalar.BF16:
        return bf16_value(raw)
    if t.is_bool:
        return raw != 0
    return raw


def to_bytes(values: np.ndarray, t: Type) -> np.ndarray:
    """Values ``(..., k)`` of type ``t`` as little-endian bytes ``(..., k * size)``."""
    stored = np.ascontiguousarray(to_storage(values, t))
    return stored.view(np.uint8).reshape(stored.shape[:-1] + (-1,))


def from_bytes(raw: np.ndarray, t: Type, copy: bool = True) -> np.ndarray:
    """Bytes ``(..., k * size)`` (uint8) as ``k`` values of type ``t``: ``(..., k)``. With ``copy=False``
    the values may be a view of ``raw`` (when its last axis is contiguous), for a caller that is done
    with them before the memory under ``raw`` changes."""
    if copy or raw.ndim == 0 or raw.strides[-1] != 1:
        raw = np.ascontiguousarray(raw)
    return from_storage(raw.view(storage_dtype(t)), t)


# -- conversions -------------------------------------------------------------------------------------

def convert(x: np.ndarray, src: Type, dst: Type, saturate: bool = False) -> np.ndarray:
    """``x`` (values of ``src``) cast to ``dst`` with exactly the rules of ``eval.convert``."""
    src, dst = src.base, dst.base
    if src == dst:
        return x
    if dst.is_bool:
        return x != 0
    if dst.is_float:
        return round_float(np.asarray(x).astype(np.float64), dst)
    if src.is_bool:
        return np.asarray(x).astype(value_dtype(dst))
    if src.is_float:
        return _float_to_int(np.asarray(x, dtype=np.float64), dst, saturate)
    return _int_to_int(np.asarray(x), src, dst, saturate)


def _int_to_int(x: np.ndarray, src: Type, dst: Type, saturate: bool) -> np.ndarray:
    out = value_dtype(dst)
    if not saturate:
        return x.astype(out)  # numpy integer casts wrap around, like wrap_int
    lo, hi = dst.scalar.int_range()
    if src.scalar is Scalar.U64:
        return np.minimum(x, np.uint64(hi)).astype(out)
    i64 = np.iinfo(np.int64)
    return np.clip(x.astype(np.int64), max(lo, i64.min), min(hi, i64.max)).astype(out)


# Below this magnitude a truncated float64 is an exact int64; above it the wrap is done in Python.
_SMALL = float(2 ** 62)


def _float_to_int(x: np.ndarray, dst: Type, saturate: bool) -> np.ndarray:
    out = value_dtype(dst)
    lo, hi = dst.scalar.int_range()
    t = np.trunc(np.where(np.isnan(x), 0.0, x))
    small = np.abs(t) < _SMALL
    if saturate:
        res = np.clip(np.where(small, t, 0.0), max(lo, -_SMALL), min(hi, _SMALL)).astype(np.int64)
        res = res.astype(out)
    else:
        res = np.where(small, t, 0.0).astype(np.int64).astype(out)
    if not small.all():
        res = res.copy()
        flat_t, flat_res = t.reshape(-1), res.reshape(-1)
        for i in np.flatnonzero(~small.reshape(-1)):
            v = flat_t[i]
            if np.isinf(v):
                flat_res[i] = hi if v > 0 else lo
            else:
                n = int(v)
                flat_res[i] = min(max(n, lo), hi) if saturate else wrap_int(n, dst)
    return res


def convert_nearest(x: np.ndarray, src: Type, dst: Type) -> np.ndarray:
    """``reorder`` conversion: round to nearest even, saturate integers, NaN to 0."""
    src, dst = src.base, dst.base
    if src == dst:
        return x
    if dst.is_float or dst.is_bool or not src.is_float:
        return convert(x, src, dst, saturate=dst.is_int)
    return _float_to_int(np.rint(np.asarray(x, dtype=np.float64)), dst, saturate=True)
