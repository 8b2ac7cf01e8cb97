"""ALU semantics: one small function per opcode, numpy-vectorized over (threads, channels).

Operands arrive as arrays of their own types (``bf`` as raw 16 bits). An
integer operation computes in 64-bit integers and the destination keeps
its low bits (two's complement wrap, as the hardware does for a narrower
destination); a float operation computes in ``f32`` (``f64`` for ``df``)
with round-to-nearest-even, and a fused ``mad`` rounds once. Conversions
to integers (a ``mov`` from a float type) truncate toward zero and saturate
(NaN becomes 0), as the hardware's float-to-integer conversion does (Mesa's
Intel backend lowers the truncating ``f2i`` to a plain ``mov``, and kdd's
generator rounds with ``rnde`` first where the IR asks for nearest even);
``.sat`` clamps floats to [0, 1] and integers to the destination's range.
``rnde``/``rndd``/``rndu``/``rndz`` round a float to an integral float (half
to even, down, up, toward zero); ``math`` functions are correctly rounded
(:data:`MATH_ULP` is the error allowed to the hardware).
"""
from __future__ import annotations

import numpy as np

from kdd.core.targets.xe_asm import FLOAT_TYPES, TYPES

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
    if t in FLOAT_TYPES or sat:
        return lambda x: convert(x, t, sat)
    dt = dtype(t)
    return lambda x: x.astype(dt) if x.dtype.kind != "f" else convert(x, t, False)


def convert(x: np.ndarray, t: str, sat: bool) -> np.ndarray:
    """A computed value stored as type ``t``."""
    if t in FLOAT_TYPES:
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


def op_rnde(a):
    return np.rint(a)       # half to even


def op_rndd(a):
    return np.floor(a)


def op_rndu(a):
    return np.ceil(a)


def op_rndz(a):
    return np.trunc(a)


# ``math`` functions, computed in float64 and rounded once to the destination (so the simulator gives
# the correctly rounded result; MATH_ULP is the error the check allows the hardware beyond it).
MATH = {"exp": np.exp2, "log": np.log2, "inv": lambda a: 1.0 / a, "sqt": np.sqrt,
        "rsqt": lambda a: 1.0 / np.sqrt(a), "sin": np.sin, "cos": np.cos,
        "pow": np.power, "fdiv": lambda a, b: a / b}
# Units in the last place of f32 the hardware's math unit may be off by, per function: an assumed
# bound, not a measured one (the Xe documents kdd's authors found give none). They are OpenCL's
# full-profile bounds for the matching built-ins (exp2 and log2 3 ulp, divide/inverse 2.5, sqrt 3,
# rsqrt 2, sin/cos 4, pow 16); docs/xesim.md says so.
MATH_ULP = {"exp": 3.0, "log": 3.0, "inv": 2.5, "sqt": 3.0, "rsqt": 2.0, "sin": 4.0, "cos": 4.0,
            "pow": 16.0, "fdiv": 2.5}


def op_dp4a(a, b, c, tb: str, tc: str):
    """``dst = src0 + sum of the four byte products of src1 and src2``, each byte signed when its
    dword operand is signed (``:d``) and unsigned for ``:ud``."""
    def lanes(x, t):
        x = x.astype(np.int64) & 0xFFFFFFFF
        parts = [(x >> (8 * i)) & 0xFF for i in range(4)]
        return [np.where(p >= 128, p - 256, p) for p in parts] if t == "d" else parts
    return a + sum(p * q for p, q in zip(lanes(b, tb), lanes(c, tc)))


# the ALU operations computed by one numpy expression (shifts, addc, cmp and sel have their own handlers)
TABLE = {"mov": op_mov, "add": op_add, "mul": op_mul, "add3": op_add3, "mad": op_mad, "and": op_and,
         "or": op_or, "xor": op_xor, "not": op_not, "mach": op_mach, "rnde": op_rnde, "rndd": op_rndd,
         "rndu": op_rndu, "rndz": op_rndz}
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
