"""The ``decompress`` knob's value: how a GEMM's integer weights become the FMA's float operand.

The modes are seed 002's steps (``kdd.core.builder.decompress`` generates them): ``cvt`` converts and then
subtracts the zero point and multiplies by the scale, ``mad`` multiplies and subtracts a precomputed
``zp * scale`` in one ``mad``, ``denorm`` converts u8 through the f16 denormal (``* 32768``) and then
``mad``s with ``scale * 512``, ``denorm_sub`` converts the same way and keeps zero point and scale apart.
``lanes`` is how many weights one decompression instruction covers (seed TRY2.0: 16 -> 32).
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import ConfigError

MODES = ("cvt", "mad", "denorm", "denorm_sub")
LANES = (8, 16, 32)


@dataclass(frozen=True)
class Decompress:
    """A mode of :data:`MODES` and the lanes of each decompression instruction (None: the SIMD width)."""

    mode: str
    lanes: int | None = None

    def __str__(self) -> str:
        return self.mode if self.lanes is None else f"{self.mode}.{self.lanes}"

    @staticmethod
    def parse(text: str) -> "Decompress":
        """``mode`` or ``mode.lanes`` (``mad.32``); errors span the bad part."""
        mode, dot, lanes = text.partition(".")
        if mode not in MODES:
            raise ConfigError(f"unknown decompression '{mode}' (modes: {', '.join(MODES)})", 0, max(1, len(mode)))
        if not dot:
            return Decompress(mode)
        if not lanes.isdigit() or int(lanes) not in LANES:
            raise ConfigError(f"decompression lanes '{lanes}' (allowed: {', '.join(map(str, LANES))})",
                              len(mode) + 1, len(text))
        return Decompress(mode, int(lanes))
