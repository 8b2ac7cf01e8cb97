"""Target data: registers, SIMD widths, FMA instructions, memories and peak rates (one place).

``get_target(name)`` returns a :class:`Target`; ``TARGETS`` maps every known
name to its target. Code generators live in ``kdd.core.codegen``
(``codegen/xe``); this package holds only data, including
what passes need to know (how messages address memory, fused integer ops).
"""
from .catalog import SM90, TARGETS, XE2, XEHPC, XEHPG, UnknownTargetError, get_target
from .target import (FMA_KINDS, Addressing, Device, Figure, FmaShape, FusedIntOps, Int64, Lanes, MessageLimits, Peak,
                     RegisterFile, SharedMemory, Target, XeIsa)

__all__ = [
    "FMA_KINDS", "SM90", "TARGETS", "XE2", "XEHPC", "XEHPG", "Addressing", "Device", "Figure", "FmaShape", "FusedIntOps",
    "Int64", "Lanes", "MessageLimits", "Peak", "RegisterFile", "SharedMemory", "Target", "UnknownTargetError",
    "XeIsa", "get_target",
]
