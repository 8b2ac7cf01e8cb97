"""IR value types: a scalar kind (s8..s64, u8..u64, f16, bf16, f32, f64, bool; u4 and s4) and a lane count.

``u4`` and ``s4`` (benchdnn's 4-bit weights) are *packed* kinds: two elements share a byte, the even
element of the innermost dim in the low nibble. They exist in memory only - a problem's element type, a
kernel argument's, a layout's (which counts their bytes by bits) - and never as a register value: kernels
load their bytes as ``u8`` and unpack the nibbles with shifts and masks (``kdd.core.builder.decompress``).

``Type`` is the one vocabulary for data types in kdd: layouts, problems, the
interpreter and code generators all name element types through it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from functools import cache


class Scalar(Enum):
    """Scalar kinds, with their width in bits and their oneDNN/benchdnn name."""

    S4 = ("s4", 4)
    S8 = ("s8", 8)
    S16 = ("s16", 16)
    S32 = ("s32", 32)
    S64 = ("s64", 64)
    U4 = ("u4", 4)
    U8 = ("u8", 8)
    U16 = ("u16", 16)
    U32 = ("u32", 32)
    U64 = ("u64", 64)
    F16 = ("f16", 16)
    BF16 = ("bf16", 16)
    F32 = ("f32", 32)
    F64 = ("f64", 64)
    BOOL = ("bool", 8)

    # Members are singletons: identity hashing (in C) instead of Enum's hash of the name, which
    # every IR node's structural hash pays for.
    __hash__ = object.__hash__

    def __init__(self, short: str, bits: int):
        self.short = short
        self.bits = bits
        # Plain attributes, not properties: every type check of every pass reads them.
        self.size = bits // 8  # bytes of one element (bool occupies a byte in memory; 0 for packed kinds)
        self.is_packed = bits < 8  # two elements a byte: a memory type only (module docstring)
        self.is_bool = short == "bool"
        self.is_int = short[0] in "su"
        self.is_float = short[0] in "fb" and not self.is_bool
        self.is_signed = short[0] == "s" or self.is_float
        if self.is_int:
            half = 1 << (bits - 1)
            self._range = (-half, half - 1) if self.is_signed else (0, (1 << bits) - 1)

    def int_range(self) -> tuple[int, int]:
        """Inclusive range of an integer kind."""
        if not self.is_int:
            raise ValueError(f"{self.short} is not an integer type")
        return self._range


_BY_NAME = {s.short: s for s in Scalar}


@cache
def _numpy_types() -> dict:
    """Each scalar kind's numpy type; bf16 has none and is stored as its f32 value rounded to
    bf16 precision. numpy is imported here, on first use: most compiles never need it."""
    import numpy as np
    return {
        Scalar.S4: np.int8, Scalar.U4: np.uint8,  # a packed kind's logical values; memory packs them
        Scalar.S8: np.int8, Scalar.S16: np.int16, Scalar.S32: np.int32, Scalar.S64: np.int64,
        Scalar.U8: np.uint8, Scalar.U16: np.uint16, Scalar.U32: np.uint32, Scalar.U64: np.uint64,
        Scalar.F16: np.float16, Scalar.BF16: np.float32, Scalar.F32: np.float32,
        Scalar.F64: np.float64, Scalar.BOOL: np.bool_,
    }


@dataclass(frozen=True, slots=True)
class Type:
    """A scalar kind with a lane count (``lanes > 1`` is a vector)."""

    scalar: Scalar
    lanes: int = 1
    # The scalar kind's facts, copied in: the simplifier asks them millions of times.
    is_int: bool = field(init=False, repr=False, compare=False, hash=False)
    is_float: bool = field(init=False, repr=False, compare=False, hash=False)
    is_bool: bool = field(init=False, repr=False, compare=False, hash=False)
    is_signed: bool = field(init=False, repr=False, compare=False, hash=False)
    _hash: int = field(init=False, repr=False, compare=False, hash=False)  # every IR node hashes its type

    def __post_init__(self):
        if self.lanes < 1:
            raise ValueError(f"lanes must be >= 1, got {self.lanes}")
        for name in ("is_int", "is_float", "is_bool", "is_signed"):
            object.__setattr__(self, name, getattr(self.scalar, name))
        object.__setattr__(self, "_hash", hash((self.scalar, self.lanes)))

    def __eq__(self, other: object) -> bool:
        return self is other or (other.__class__ is Type and self.scalar is other.scalar
                                 and self.lanes == other.lanes)

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):
        # Rebuilt through the constructor: the cached hash is of this process's objects.
        return (Type, (self.scalar, self.lanes))

    @staticmethod
    def parse(name: str) -> "Type":
        """Parse ``f16``, ``s32x8`` (8 lanes) and the oneDNN aliases ``f32``/``s8``/``u8``..."""
        base, _, lanes = name.partition("x")
        try:
            scalar = _BY_NAME[base]
        except KeyError:
            known = ", ".join(_BY_NAME)
            raise ValueError(f"unknown data type '{name}' (known: {known})") from None
        return Type(scalar, int(lanes) if lanes else 1)

    def with_lanes(self, lanes: int) -> "Type":
        return self if lanes == self.lanes else Type(self.scalar, lanes)

    @property
    def base(self) -> "Type":
        """The scalar type of one lane (one shared object per scalar kind: asked for everywhere)."""
        return self if self.lanes == 1 else _SCALAR_TYPES[self.scalar]

    @property
    def size(self) -> int:
        """Size in bytes of the whole (possibly vector) value."""
        return self.scalar.size * self.lanes

    @property
    def numpy(self) -> type:
        """The numpy dtype holding values of this scalar kind (bf16 is kept as f32)."""
        return _numpy_types()[self.scalar]

    def __str__(self) -> str:
        return self.scalar.short if self.lanes == 1 else f"{self.scalar.short}x{self.lanes}"


_SCALAR_TYPES = {s: Type(s) for s in Scalar}


def _t(s: Scalar) -> Type:
    return _SCALAR_TYPES[s]


s4, u4 = _t(Scalar.S4), _t(Scalar.U4)
s8, s16, s32, s64 = _t(Scalar.S8), _t(Scalar.S16), _t(Scalar.S32), _t(Scalar.S64)
u8, u16, u32, u64 = _t(Scalar.U8), _t(Scalar.U16), _t(Scalar.U32), _t(Scalar.U64)
f16, bf16, f32, f64 = _t(Scalar.F16), _t(Scalar.BF16), _t(Scalar.F32), _t(Scalar.F64)
bool_ = _t(Scalar.BOOL)
