"""ALU semantics: one small function per opcode, numpy-vectorized over (threads, channels).

Operands arrive as arrays of their own types (``bf`` as raw 16 bits). An
integer operation computes in 64-bit integers and the destination keeps
its low bits (two's complement wrap, as the hardware does for a narrower
destination); a float operation computes in ``f32`` (``f64`` for ``df``)
with round-to-nearest-even, and a fused ``mad`` rounds once. Conversions
to integers truncate toward zero and saturate (NaN becomes 0); ``.sat``
clamps floats to [0, 1] and integers to the destination's range.
"""
from __future__ import annotations

import numpy as np

from .program import TYPES

FLOAT = {"f", "hf", "df", "bf"}
CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
       "ge": np.greater_equal, "z": np.equal, "nz": np.not_equal}


def dtype(t: str) -> np.dtype:
    return np.dtype(TYPES[t][0])


def bf_to_f32(raw: np.ndarray) -> np.ndarray:
    return (raw.astype(np.uint32) << 16).view(np.float32)


def tf32_to_f32(raw: np.ndarray) -> np.ndarray:
    """A tf32 operand's value: the dword's sign, exponent and top 10 mantissa bits (the matrix unit
    ignores the low 13; NaNs whose payload lies only there stay NaN)."""
    raw = raw.astype(np.uint32)
    value = (raw & np.uint32(0xFFFFE000)).view(np.float32)
    return np.where(np.isnan(raw.view(np.float32)), raw.view(np.float32), value)


def f32_to_bf(x: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even to bfloat16 bits; NaN stays a quiet NaN."""
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FC0), rounded)


def as_compute(x: np.ndarray, t: str, wide_float: bool) -> np.ndarray:
    """An operand in the type its operation computes in: float32/float64 or int64 (uint64 for uq)."""
    if t == "bf":
        x = bf_to_f32(x)
    if wide_float:
        return x.astype(np.float64) if t == "df" else x.astype(np.float32)
    if t == "uq":
        return x.astype(np.uint64)
    return x.astype(np.int64)


def caster(t: str, wide_float: bool):
    """:func:`as_compute` for operands of type ``t``, as a function chosen once per operand."""
    if t == "bf":
        return (lambda x: bf_to_f32(x)) if wide_float else (lambda x: x.astype(np.int64))
    if wide_float:
        dt = np.float64 if t == "df" else np.float32
        return lambda x: x.astype(dt, copy=False)
    dt = np.uint64 if t == "uq" else np.int64
    return lambda x: x.astype(dt)


def converter(t: str, sat: bool):
    """:func:`convert` to ``t``, with the common case (an integer result into an integer type without
    saturation: keep the low bits) decided once."""
    if t in FLOAT or sat:
        return lambda x: convert(x, t, sat)
    dt = dtype(t)
    return lambda x: x.astype(dt) if x.dtype.kind != "f" else convert(x, t, False)


def convert(x: np.ndarray, t: str, sat: bool) -> np.ndarray:
    """A computed value stored as type ``t``."""
    if t in FLOAT:
        x = np.asarray(x)
        if x.dtype.kind != "f":
            x = x.astype(np.float64)
        if sat:
            x = np.clip(np.nan_to_num(x, nan=0.0), 0.0, 1.0)
        if t == "bf":
            return f32_to_bf(x.astype(np.float32))
        return x.astype(dtype(t))
    dt = dtype(t)
    info = np.iinfo(dt)
    if x.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            x = np.trunc(np.nan_to_num(x.astype(np.float64), nan=0.0))
            return np.clip(x, info.min, info.max).astype(dt)
    if sat:
        if x.dtype == np.uint64:
            x = np.minimum(x, np.uint64(info.max))
        else:
            x = np.clip(x, max(info.min, -(1 << 63)), min(info.max, (1 << 63) - 1))
    return x.astype(dt)


def op_mov(a):
    return a


def op_add(a, b):
    return a + b


def op_mul(a, b):
    return a * b


def op_add3(a, b, c):
    return a + b + c


def op_mad(a, b, c):
    if np.asarray(a).dtype.kind == "f":   # fused: one rounding
        wide = np.float64(0).dtype if a.dtype == np.float32 else a.dtype
        return (a.astype(wide) + b.astype(wide) * c.astype(wide)).astype(a.dtype)
    return a + b * c


def op_and(a, b):
    return a & b


def op_or(a, b):
    return a | b


def op_xor(a, b):
    return a ^ b


def op_not(a):
    return ~a


def op_mach(a, b):
    return (a * b) >> 32


# the ALU operations computed by one numpy expression (shifts, addc, cmp and sel have their own handlers)
TABLE = {"mov": op_mov, "add": op_add, "mul": op_mul, "add3": op_add3, "mad": op_mad, "and": op_and,
         "or": op_or, "xor": op_xor, "not": op_not, "mach": op_mach}
INT_ONLY = {"and", "or", "xor", "not", "mach", "add3", "shl", "shr", "asr", "addc"}


def shift(op: str, a: np.ndarray, ta: str, b: np.ndarray, td: str) -> np.ndarray:
    """``shl``/``shr``/``asr``: the count is the low 5 bits (6 for 64-bit operands); ``shr`` is
    logical on the source's bits, ``asr`` arithmetic."""
    wide = TYPES[ta][1] == 8 or TYPES[td][1] == 8
    n = b.astype(np.int64) & (63 if wide else 31)
    if op == "shl":
        return (a.astype(np.uint64) << n.astype(np.uint64)).astype(np.int64) if not wide else \
            a.astype(np.uint64) << n.astype(np.uint64)
    if op == "shr":
        size = TYPES[ta][1]
        unsigned = a.astype(np.int64) & ((1 << (8 * size)) - 1) if size < 8 else a.astype(np.uint64)
        return unsigned >> n.astype(unsigned.dtype)
    return a >> n
