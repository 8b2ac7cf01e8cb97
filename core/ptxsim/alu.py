"""PTX arithmetic on a warp's registers: raw bits in ``uint64`` arrays (one element per lane), read as
the instruction's type and written back as bits, following the PTX ISA's rules per type.

Floating point computes in the instruction's format: an f32 ``add``/``mul``/``div``/``sqrt`` in numpy
float32 (IEEE round-to-nearest-even, as ``.rn``), ``fma`` from the exact float64 product, added
rounding to odd so that the one rounding to the format is the correct one, f16/bf16 operations in
float32 rounded once to the format. Conversions (``cvt``) follow the PTX ISA's
``cvt`` section: float-to-integer rounds by the instruction's integer rounding modifier (``.rni``
nearest even, ``.rzi`` toward zero, ``.rmi`` down, ``.rpi`` up) and always saturates to the
destination range (NaN gives 0); integer-to-integer keeps the low bits (``.sat`` clamps instead);
a narrow destination (``.s8``, ``.u16``...) is sign- or zero-extended into its register.
"""
from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

from kdd.core.xesim.errors import SimulatorGap

LANES = 32
MASK = {8: 0xFF, 16: 0xFFFF, 32: 0xFFFFFFFF, 64: 0xFFFFFFFFFFFFFFFF}
FLOATS = ("f16", "bf16", "f32", "f64")
INTS = tuple(f"{s}{b}" for s in "sub" for b in (8, 16, 32, 64))


@lru_cache(maxsize=None)
def bits_of(t: str) -> int:
    """The width of PTX type ``t`` (``pred`` counts as 64: a predicate moves whole)."""
    return 64 if t == "pred" else int(re.sub(r"\D", "", t) or 32)


_UNSIGNED = {8: (np.uint8, np.int8), 16: (np.uint16, np.int16), 32: (np.uint32, np.int32), 64: (np.uint64, np.int64)}


def signed(v: np.ndarray, bits: int) -> np.ndarray:
    """The low ``bits`` of raw ``v`` as signed integers (int64): the truncating cast keeps the low bits,
    the view reads them two's complement."""
    unsigned, signed_t = _UNSIGNED[bits]
    return np.asarray(v).astype(np.uint64).astype(unsigned).view(signed_t).astype(np.int64)


def raw(v, bits: int) -> np.ndarray:
    """Integers ``v`` as raw bits, wrapped to ``bits``."""
    return np.asarray(v).astype(np.int64).astype(np.uint64) & np.uint64(MASK[bits])


def read(v: np.ndarray, t: str) -> np.ndarray:
    """Raw register bits ``v`` as values of PTX type ``t``: floats as their numpy format, integers as
    int64 (u64 as uint64)."""
    if t == "f32":
        return (v & np.uint64(MASK[32])).astype(np.uint32).view(np.float32)
    if t == "f64":
        return v.astype(np.uint64).view(np.float64)
    if t == "f16":
        return (v & np.uint64(0xFFFF)).astype(np.uint16).view(np.float16)
    if t == "bf16":
        return ((v & np.uint64(0xFFFF)).astype(np.uint32) << np.uint32(16)).view(np.float32)
    bits = bits_of(t)
    if t[0] == "s":
        return signed(v, bits)
    if bits == 64:
        return v.astype(np.uint64)
    return (v & np.uint64(MASK[bits])).astype(np.int64)


def write(x, t: str) -> np.ndarray:
    """Values ``x`` of PTX type ``t`` (already in range for it) as raw register bits; a float is
    rounded to nearest even into its format."""
    x = np.asarray(x)
    if t == "f32":
        return x.astype(np.float32).view(np.uint32).astype(np.uint64)
    if t == "f64":
        return x.astype(np.float64).view(np.uint64)
    if t == "f16":
        return x.astype(np.float16).view(np.uint16).astype(np.uint64)
    if t == "bf16":
        return _bf16_bits(x.astype(np.float32)).astype(np.uint64)
    bits = bits_of(t)
    if bits == 64:
        return x.astype(np.uint64) if x.dtype == np.uint64 else raw(x, 64)
    if bits < 32:       # a sub-word value lives in a 32-bit register, sign- or zero-extended
        x = signed(raw(x, bits), bits) if t[0] == "s" else raw(x, bits)
        return raw(x, 32)
    return raw(x, bits)


def _bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 ``x`` rounded to nearest even bf16, as its 16 bits (NaN stays a quiet NaN)."""
    u = x.view(np.uint32).astype(np.uint64)
    rounded = (u + np.uint64(0x7FFF) + ((u >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)
    return np.where(np.isnan(x), np.uint64(0x7FC0), rounded & np.uint64(0xFFFF))


def _as_format(x: np.ndarray, t: str) -> np.ndarray:
    """float64/float32 ``x`` rounded once to float format ``t`` (returned as a float64 array)."""
    return read(write(x, t), t).astype(np.float64)


_INT_ROUND = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}


def convert(name: list[str], v: np.ndarray) -> np.ndarray:
    """``cvt[.rnd][.sat].dtype.stype`` of raw ``v``."""
    d, s = name[-2], name[-1]
    mods = set(name[1:-2])
    rnd = mods & {"rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi"}
    x = read(v, s)
    if d in FLOATS and s in FLOATS:
        if rnd - {"rn"} or (bits_of(d) < bits_of(s) and not rnd and not (d == "f32" and s in ("f16", "bf16"))):
            raise SimulatorGap(None, "cvt." + ".".join(name[1:]), "only round-to-nearest-even float narrowing")
        out = x.astype(np.float64)
        if "sat" in mods:
            out = np.where(np.isnan(out), 0.0, np.clip(out, 0.0, 1.0))
        return write(out, d)
    if d in FLOATS:         # integer to float: one rounding, to nearest even
        if rnd - {"rn"}:
            raise SimulatorGap(None, "cvt." + ".".join(name[1:]), "integer-to-float rounding other than .rn")
        return write(x.astype(np.float64) if d != "f64" else x, d)
    bits = bits_of(d)
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if d[0] == "s" else (0, (1 << bits) - 1)
    if s in FLOATS:         # float to integer: the rounding named, then always clamped (NaN -> 0)
        mode = rnd & set(_INT_ROUND)
        if len(mode) != 1:
            raise SimulatorGap(None, "cvt." + ".".join(name[1:]), "float-to-integer without an integer rounding")
        f = _INT_ROUND[mode.pop()](x.astype(np.float64))
        f = np.where(np.isnan(f), 0.0, np.clip(f, lo, hi))
        return write(f.astype(np.int64) if bits < 64 or d[0] == "s" else f.astype(np.uint64), d)
    if rnd:
        raise SimulatorGap(None, "cvt." + ".".join(name[1:]), "a rounding modifier on an integer conversion")
    if "sat" in mods:
        x = np.clip(x.astype(np.int64) if x.dtype != np.uint64 else np.minimum(x, np.uint64(hi)).astype(np.int64),
                    lo, hi)
    return write(x, d)


def _sum_to_odd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a + b`` in float64 rounded to odd: where the sum is inexact, the neighbour of the two around it
    whose last bit is 1. Rounding that once more to a format of at most 51 bits gives the correctly rounded
    sum (Boldo and Melquiond); float64's own nearest-even rounding would round twice, wrongly for an exact
    sum just off a midpoint of the narrow format. The error term is Knuth's TwoSum, exact in float64."""
    s = a + b
    bb = s - a
    err = (a - (s - bb)) + (b - bb)
    even = (s.view(np.uint64) & np.uint64(1)) == 0
    fix = np.isfinite(err) & (err != 0) & even
    return np.where(fix, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)


def _float_op(base: str, name: list[str], t: str, v: list[np.ndarray]) -> np.ndarray:
    if set(name[1:-1]) - {"rn", "sat"}:     # .approx, .ftz, other roundings: not modelled
        raise SimulatorGap(None, ".".join(name), "a float modifier other than .rn/.sat")
    x = [read(a, t) for a in v]
    if t in ("f16", "bf16"):    # exact in float32 for add/mul/fma of two narrow operands, then one rounding
        x = [a.astype(np.float32) for a in x]
    with np.errstate(all="ignore"):
        if base == "fma" or (base == "mad" and t != "f64"):
            r = _sum_to_odd(x[0].astype(np.float64) * x[1].astype(np.float64), x[2].astype(np.float64))
        elif base in ("add", "sub", "mul", "div", "min", "max"):
            a, b = x
            r = {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "div": lambda: a / b,
                 "min": lambda: np.fmin(a, b), "max": lambda: np.fmax(a, b)}[base]()
        elif base in ("neg", "abs", "sqrt"):
            r = {"neg": np.negative, "abs": np.abs, "sqrt": np.sqrt}[base](x[0])
        else:
            raise SimulatorGap(None, ".".join(name), f"{base} of {t}")
    if "sat" in name:
        r = np.where(np.isnan(r), 0.0, np.clip(r, 0.0, 1.0))
    return write(r, t)


def alu(op: str, v: list[np.ndarray]) -> np.ndarray:
    """The result bits of arithmetic instruction ``op`` (full opcode, e.g. ``mad.lo.s32``) on the raw
    operand arrays ``v``. Raises :class:`SimulatorGap` for an opcode or type it does not model."""
    name = op.split(".")
    base, t = name[0], name[-1]
    if base == "cvt":
        return convert(name, v[0])
    if t in FLOATS:
        return _float_op(base, name, t, v)
    if base in _BIT_OPS:
        return _bit_op(base, t, v)
    mods = name[1:-1]
    if base in ("mul", "mad") and mods == ["wide"] and t in ("s32", "u32"):    # 32 x 32 -> 64 bits
        product = read(v[0], t) * read(v[1], t)
        return raw(product + (signed(v[2], 64) if base == "mad" else 0), 64)
    if base == "mul" and mods == ["hi"] and t == "u32":     # u32 x u32 fits in 64 bits
        m = np.uint64(MASK[32])
        return ((v[0] & m) * (v[1] & m)) >> np.uint64(32)
    if t not in INTS and not (base == "shl" and t[0] == "b"):
        raise SimulatorGap(None, op, f"type .{t}")
    if mods not in ([], ["lo"]) or (mods == ["lo"] and base not in ("mul", "mad")):
        raise SimulatorGap(None, op, f"modifiers .{'.'.join(mods)}")
    return _int_op(op, base, t, v)


_BIT_OPS = ("selp", "not", "and", "or", "xor", "bfe", "bfi")


def _bit_op(base: str, t: str, v: list[np.ndarray]) -> np.ndarray:
    """``selp``, ``not``, ``and``, ``or``, ``xor``, ``bfe`` and ``bfi`` on the raw bits of type ``t``."""
    bits = bits_of(t)
    if base == "selp":
        return np.where(v[2] != 0, v[0], v[1]) & np.uint64(MASK[bits])
    if base == "not":
        return ~v[0] & np.uint64(MASK[bits])
    if base in ("and", "or", "xor"):
        r = {"and": v[0] & v[1], "or": v[0] | v[1], "xor": v[0] ^ v[1]}[base]
        return r & np.uint64(MASK[bits])
    if base == "bfe":
        pos, ln = v[1].astype(np.int64), v[2].astype(np.int64)
        r = (v[0] >> v[1]) & ((np.uint64(1) << v[2]) - np.uint64(1))
        if t == "s32":
            r = raw(np.where(r >> (ln - 1).astype(np.uint64) & np.uint64(1), r.astype(np.int64) - (1 << ln), r), 32)
        return r & np.uint64(MASK[32]) if pos.size else r
    m = ((np.uint64(1) << v[3]) - np.uint64(1)) << v[2]      # bfi
    return ((v[1] & ~m) | ((v[0] << v[2]) & m)) & np.uint64(MASK[32])


def _int_op(op: str, base: str, t: str, v: list[np.ndarray]) -> np.ndarray:
    """Integer arithmetic of ``op`` (shifts, C division and remainder, add, mul, mad, min, max, neg, abs)
    on the values of type ``t`` the raw ``v`` hold, wrapped to its width."""
    bits = bits_of(t)
    is_signed = t.startswith("s")
    x = [signed(a, bits) if is_signed else (a & np.uint64(MASK[bits])).astype(np.int64) for a in v]
    if base in ("shl", "shr"):
        amount = np.minimum(v[1].astype(np.int64), bits)
        if base == "shl":
            return raw(np.where(amount >= bits, 0, (v[0] & np.uint64(MASK[bits])) << amount.astype(np.uint64)), bits)
        if is_signed:
            return raw(x[0] >> np.minimum(amount, bits - 1), bits)
        return raw(np.where(amount >= bits, 0, x[0] >> amount), bits)
    if base == "div":       # the IR guards zero divisors; C's truncating division
        q = np.where(x[1] == 0, 0, np.abs(x[0]) // np.where(x[1] == 0, 1, np.abs(x[1])))
        return raw(q * np.sign(x[0]) * np.sign(x[1]), bits)
    if base == "rem":
        q = np.where(x[1] == 0, 0, np.abs(x[0]) % np.where(x[1] == 0, 1, np.abs(x[1])))
        return raw(q * np.sign(x[0]), bits)
    ops = {"add": lambda: x[0] + x[1], "sub": lambda: x[0] - x[1], "mul": lambda: x[0] * x[1],
           "mad": lambda: x[0] * x[1] + x[2], "min": lambda: np.minimum(x[0], x[1]),
           "max": lambda: np.maximum(x[0], x[1]), "neg": lambda: -x[0], "abs": lambda: np.abs(x[0])}
    if base not in ops:
        raise SimulatorGap(None, op, f"{base} of {t}")
    return raw(ops[base](), bits)


def compare(cmp: str, t: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``setp.cmp.t``: the predicate of comparing raw ``a`` and ``b`` as type ``t`` (float comparisons
    without ``u`` are false on NaN, those with ``u`` true)."""
    x, y = read(a, t), read(b, t)
    if t not in FLOATS and t not in INTS and not t.startswith("b"):
        raise SimulatorGap(None, f"setp.{cmp}.{t}", f"type .{t}")
    unordered = {"equ": "eq", "neu": "ne", "ltu": "lt", "leu": "le", "gtu": "gt", "geu": "ge"}
    base = unordered.get(cmp, cmp)
    rel = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
           "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal, "hi": np.greater,
           "hs": np.greater_equal}
    if base not in rel:
        raise SimulatorGap(None, f"setp.{cmp}.{t}", f"comparison .{cmp}")
    with np.errstate(invalid="ignore"):
        r = rel[base](x, y)
    if t in FLOATS:
        r = np.where(np.isnan(x.astype(np.float64)) | np.isnan(y.astype(np.float64)), cmp in unordered, r)
    return r.astype(bool)
