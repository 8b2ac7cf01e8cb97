"""The ``decompress`` knob's value: how a GEMM's integer weights become the FMA's float operand.

The modes are seed 002's steps (``kdd.core.builder.decompress`` generates them): ``cvt`` converts and then
subtracts the zero point and multiplies by the scale, ``mad`` multiplies and subtracts a precomputed
``zp * scale`` in one ``mad``, ``denorm`` converts u8 through the f16 denormal (``* 32768``) and then
``mad``s with ``scale * 512``, ``denorm_sub`` converts the same way and keeps zero point and scale apart.
``lanes`` is how many weights one decompression instruction covers (seed TRY2.0: 16 -> 32). ``bufs`` 2
(``.x2``) keeps two raw weight tiles in registers, ping-pong (seed TRY3.1): each iteration loads the next
tile's bytes into one while it decompresses the other (``kdd.core.passes.ping_pong``).
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import ConfigError

MODES = ("cvt", "mad", "denorm", "denorm_sub")
LANES = (8, 16, 32)
RAW_LOAD = "decompress_raw"  # the label of the group holding one iteration's raw weight load


@dataclass(frozen=True)
class Decompress:
    """A mode of :data:`MODES`, the lanes of each decompression instruction (None: the SIMD width) and the
    raw tiles kept in registers (1, or 2: ping-pong)."""

    mode: str
    lanes: int | None = None
    bufs: int = 1

    def __str__(self) -> str:
        return self.mode + (f".{self.lanes}" if self.lanes is not None else "") + (".x2" if self.bufs == 2 else "")

    @staticmethod
    def parse(text: str) -> "Decompress":
        """``mode``, ``mode.lanes`` (``mad.32``), either with ``.x2`` (``denorm_sub.32.x2``); errors span the
        bad part."""
        mode, *parts = text.split(".")
        if mode not in MODES:
            raise ConfigError(f"unknown decompression '{mode}' (modes: {', '.join(MODES)})", 0, max(1, len(mode)))
        lanes, bufs, at = None, 1, len(mode) + 1
        for i, part in enumerate(parts):
            if part == "x2" and i == len(parts) - 1:
                bufs = 2
            elif i == 0 and part.isdigit() and int(part) in LANES:
                lanes = int(part)
            else:
                raise ConfigError(f"decompression lanes '{part}' (allowed: {', '.join(map(str, LANES))}, then "
                                  f"'x2' for two raw tiles)", at, len(text))
            at += len(part) + 1
        return Decompress(mode, lanes, bufs)
