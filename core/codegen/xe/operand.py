"""Operands of Xe instructions in IGA syntax: register regions and immediates.

A :class:`Reg` is a region of the register file: the absolute byte where its
first element lives, the element type and the element stride (0 repeats one
element, a scalar broadcast over the lanes). The text forms follow IGA's
syntax (``../shared/reference/iga-syntax.md``): ``r5.2<1>:d`` for a
destination, ``r5.2<0;1,0>:d`` for a source, ``<V;H>`` and ``<H>`` for the
sources of three-operand instructions.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from kdd.core.ir.types import Scalar, Type
from kdd.core.targets.xe_asm import SCALAR_TYPES


# Keyed by the scalar's short name: a str hashes from its cache, an Enum member through Python code.
_ELEM_SIZE = {s.short: 4 if s is Scalar.BOOL else s.bits // 8 for s in Scalar}
_IGA = {s.short: t for s, t in SCALAR_TYPES.items()}


def elem_size(t: Type) -> int:
    """Bytes one element of ``t`` takes in registers (a bool mask takes a dword)."""
    return _ELEM_SIZE[t.scalar.short]


def iga_type(t: Type) -> str:
    return _IGA[t.scalar.short]


# Operand texts by (byte, type, stride, ...): kernels name the same few registers thousands of times.
_DST_TEXT: dict[tuple, str] = {}
_SRC_TEXT: dict[tuple, str] = {}


@dataclass(frozen=True, slots=True)
class Reg:
    """``byte``: absolute byte offset in the GRF file; ``stride`` in elements (0: broadcast)."""

    byte: int
    type: Type
    stride: int = 1
    neg: bool = False

    @property
    def size(self) -> int:
        return _ELEM_SIZE[self.type.scalar.short]

    def at(self, elem: int) -> "Reg":
        """The region starting ``elem`` elements further (along the stride)."""
        if elem == 0:
            return self
        return Reg(self.byte + elem * self.stride * _ELEM_SIZE[self.type.scalar.short], self.type, self.stride, self.neg)

    def retype(self, t: Type, stride: int | None = None) -> "Reg":
        return Reg(self.byte, t.base, self.stride if stride is None else stride, self.neg)

    def scalar(self) -> "Reg":
        return Reg(self.byte, self.type, 0, self.neg)

    def negated(self) -> "Reg":
        return Reg(self.byte, self.type, self.stride, not self.neg)

    def span(self, lanes: int) -> tuple[int, int]:
        """Bytes ``[start, end)`` this region covers over ``lanes`` lanes."""
        n = 1 if self.stride == 0 else lanes
        return self.byte, self.byte + ((n - 1) * self.stride + 1) * self.size

    def name(self, reg_bytes: int) -> str:
        return f"r{self.byte // reg_bytes}.{(self.byte % reg_bytes) // self.size}"

    def dst(self, reg_bytes: int) -> str:
        key = (self.byte, self.type.scalar.short, self.stride, reg_bytes)
        text = _DST_TEXT.get(key)
        if text is None:
            text = _DST_TEXT[key] = f"{self.name(reg_bytes)}<{max(self.stride, 1)}>:{iga_type(self.type)}"
        return text

    def src(self, reg_bytes: int) -> str:
        key = (self.byte, self.type.scalar.short, self.stride, self.neg, reg_bytes)
        text = _SRC_TEXT.get(key)
        if text is None:
            sign = "-" if self.neg else ""
            region = "<0;1,0>" if self.stride == 0 else f"<{self.stride};1,0>"
            text = _SRC_TEXT[key] = f"{sign}{self.name(reg_bytes)}{region}:{iga_type(self.type)}"
        return text

    def src3(self, reg_bytes: int, last: bool) -> str:
        """A source of ``mad``/``add3``/``dp4a``: ``<V;H>`` for src0/src1, ``<H>`` for src2."""
        sign = "-" if self.neg else ""
        region = f"<{self.stride}>" if last else f"<{self.stride};0>"
        return f"{sign}{self.name(reg_bytes)}{region}:{iga_type(self.type)}"


@dataclass(frozen=True, slots=True)
class Rows:
    """A 2D source region ``<v;w,h>``: lane ``i`` reads element ``(i // w) * v + (i % w) * h`` from ``byte``
    (rows of ``w`` elements ``h`` apart, row starts ``v`` apart; a reorder's interleave of rows)."""

    byte: int
    type: Type
    v: int
    w: int
    h: int

    @property
    def size(self) -> int:
        return _ELEM_SIZE[self.type.scalar.short]

    def src(self, reg_bytes: int) -> str:
        return f"{Reg(self.byte, self.type).name(reg_bytes)}<{self.v};{self.w},{self.h}>:{iga_type(self.type)}"


@dataclass(frozen=True, slots=True)
class Imm:
    """An immediate of type ``type`` (ints wrapped to the type; floats written by bit pattern)."""

    value: int | float
    type: Type

    def text(self) -> str:
        t, s = self.type.scalar, iga_type(self.type)
        if t is Scalar.F32:
            return f"0x{struct.unpack('<I', struct.pack('<f', self.value))[0]:08X}:f"
        if t is Scalar.F16:
            return f"0x{struct.unpack('<H', struct.pack('<e', self.value))[0]:04X}:hf"
        if t is Scalar.F64:
            return f"0x{struct.unpack('<Q', struct.pack('<d', self.value))[0]:016X}:df"
        if t is Scalar.BF16:
            bits = struct.unpack('<I', struct.pack('<f', self.value))[0] >> 16
            return f"0x{bits:04X}:bf"
        v = int(self.value)
        if t.bits == 8:     # no byte immediates in the encoding: the word of the same signedness holds it
            s = "w" if self.type.is_signed else "uw"
        return f"{v}:{s}" if v >= 0 else f"-{-v}:{s}"

    def fits16(self) -> bool:
        """Whether a three-source instruction can take it (16-bit immediates only)."""
        return self.type.is_int and -(1 << 15) <= int(self.value) < (1 << 15)

    def as16(self) -> "Imm":
        from kdd.core.ir.types import s16
        return Imm(int(self.value), s16)


Operand = Reg | Imm
