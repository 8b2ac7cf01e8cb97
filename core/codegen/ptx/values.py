"""Operands of the PTX lowering: computed values, per-lane element contexts, register buffers, PTX spellings."""
from __future__ import annotations

import struct

from kdd.core.ir.expr import Op
from kdd.core.ir.types import Type

from ..errors import CodegenUnsupported
from .lanes import Slot

THREAD_IDS = {"group_id0": "%ctaid.x", "group_id1": "%ctaid.y", "group_id2": "%ctaid.z",
              "thread_id1": "%tid.y", "thread_id2": "%tid.z"}
CMP = {Op.EQ: "eq", Op.NE: "ne", Op.LT: "lt", Op.LE: "le", Op.GT: "gt", Op.GE: "ge"}
FCMP = {Op.EQ: "eq", Op.NE: "neu", Op.LT: "lt", Op.LE: "le", Op.GT: "gt", Op.GE: "ge"}
ARITH = {Op.ADD: "add", Op.SUB: "sub", Op.MIN: "min", Op.MAX: "max", Op.BIT_AND: "and", Op.BIT_OR: "or",
         Op.BIT_XOR: "xor"}
BITS = {1: "8", 2: "16", 4: "32", 8: "64"}
U8 = Type.parse("u8")


def imm_text(v, t: Type) -> str:
    if t.is_bool:
        return "1" if v else "0"
    if t.is_float:
        if t.size == 8:
            return "0d%016X" % struct.unpack("<Q", struct.pack("<d", float(v)))[0]
        return "0f%08X" % struct.unpack("<I", struct.pack("<f", float(v)))[0]
    return str(int(v))


def pow2(v: int) -> int:
    return 16 if v == 0 else min(16, v & -v)


class Value:
    """A computed value: an operand (register or immediate text) and its IR scalar type."""

    __slots__ = ("text", "type", "imm")

    def __init__(self, text: str, t: Type, imm=None):
        self.text, self.type, self.imm = text, t.base, imm


class Ctx:
    """Per-lane element context of a slot: the slot (per-lane element indices) and, computed when
    first asked for, the element index as an operand (``lane_value(values, active)`` makes it)."""

    def __init__(self, slot: Slot, lane_value):
        self.slot, self._lane_value, self._index = slot, lane_value, None

    @property
    def index(self) -> Value:
        if self._index is None:
            self._index = self._lane_value(self.slot.index, self.slot.mask)
        return self._index


class GrfBuf:
    def __init__(self, prefix: str, rows: int, name: str):
        self.prefix, self.rows, self.name = prefix, rows, name

    def row(self, r: int) -> str:
        if not 0 <= r < self.rows:
            raise CodegenUnsupported(f"register buffer {self.name}: row {r} outside its {self.rows} rows")
        return f"{self.prefix}{r}"
