"""Problem data types in oneDNN's ``--dt`` form: ``src:wei:dst`` or one type for all.

``f16:f16:f16``, ``s8:s8:s32``, ``bf16:bf16:f32``; ``f32`` alone means
``f32:f32:f32``. For GEMM the three are A, B and C. The accumulator is not
written: it is ``s32`` when source and weights are both integers, ``f64`` when
either is ``f64``, and ``f32`` otherwise (oneDNN's rule for these primitives).
"""
from __future__ import annotations

from dataclasses import dataclass

from kdd.core.ir.types import Type, f32, f64, s32

from .errors import ProblemError

ROLES = ("src", "wei", "dst")


@dataclass(frozen=True)
class DataTypes:
    """Element types of the three tensors plus the derived accumulator type."""

    src: Type
    wei: Type
    dst: Type

    def __post_init__(self):
        for role in ROLES:
            t = getattr(self, role)
            if not isinstance(t, Type) or t.lanes != 1 or t.is_bool:
                raise ValueError(f"DataTypes.{role} must be a scalar numeric Type, got {t!r}")

    @property
    def post_op(self) -> Type:
        """The type post-ops compute in (:func:`post_op_type` of the accumulator)."""
        return post_op_type(self.acc)

    @property
    def acc(self) -> Type:
        """Accumulator type: s32 for integer inputs, f64 when an input is f64, f32 otherwise."""
        if self.src.is_int and self.wei.is_int:
            return s32
        return f64 if f64 in (self.src, self.wei) else f32

    def canonical(self) -> str:
        """``f32`` when all three agree, else ``src:wei:dst``."""
        names = [str(getattr(self, r)) for r in ROLES]
        return names[0] if len(set(names)) == 1 else ":".join(names)

    def to_dict(self) -> dict:
        return {**{r: str(getattr(self, r)) for r in ROLES}, "acc": str(self.acc),
                "canonical": self.canonical()}

    def __str__(self) -> str:
        return self.canonical()


def post_op_type(acc: Type) -> Type:
    """The type post-ops compute in for accumulator ``acc``: f32 (oneDNN's), f64 for an f64 accumulator."""
    return f64 if acc == f64 else f32


def parse_data_types(text: str) -> DataTypes:
    """Parse ``src:wei:dst`` or a single type; errors name the bad type and its span."""
    parts, pos = [], 0
    for piece in text.split(":"):
        parts.append((piece, pos))
        pos += len(piece) + 1
    if len(parts) not in (1, 3):
        raise ProblemError(f"data types {text!r} must be one type or three (src:wei:dst), "
                           f"got {len(parts)}", 0, len(text))
    types = [parse_element_type(piece, start) for piece, start in parts]
    return DataTypes(*(types * 3 if len(types) == 1 else types))


def parse_element_type(piece: str, start: int = 0) -> Type:
    """One scalar element type (``f16``, ``s8``...); error spans are offset by ``start``."""
    lead = len(piece) - len(piece.lstrip())
    name = piece.strip()
    span = (start + lead, start + lead + max(1, len(name)))
    if not name:
        raise ProblemError("empty data type", start, start)
    try:
        t = Type.parse(name)
    except ValueError as e:
        raise ProblemError(str(e), *span) from None
    if t.lanes != 1 or t.is_bool:
        raise ProblemError(f"data type {name!r} must be a scalar numeric type like f16 or s8", *span)
    return t
