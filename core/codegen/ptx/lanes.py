"""Which lane of a warp holds which byte of a register buffer, and per-lane work split into slots.

On ``sm_90`` byte ``b`` of a register buffer is byte ``b % 4`` of the 32-bit
register ``b // 128`` of lane ``(b % 128) // 4`` (``docs/ir-semantics.md``).
A warp-wide operation on ``n`` elements becomes, per lane, a few *slots*: a
slot is one (register row, byte in the word) position, and lane ``l`` handles
the element ``index[l]`` there (``-1``: no element for that lane). Every
lane runs the same instruction of a slot, predicated by the slot's lane mask,
with its element index computed from the lane id (``index = a * lane + c``
where that fits, else from a per-slot constant table).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

LANES = 32
ROW = 128


@dataclass(frozen=True)
class Slot:
    """One register word position: ``row`` of the buffer, ``byte`` inside the 32-bit word, and
    per lane the element handled there (``-1`` for none)."""

    row: int
    byte: int
    index: tuple[int, ...]

    @cached_property
    def mask(self) -> int:
        """Bit ``l`` set when lane ``l`` has an element in this slot (asked for every operand of every
        instruction of the slot: computed once)."""
        return sum(1 << lane for lane, i in enumerate(self.index) if i >= 0)

    @property
    def full(self) -> bool:
        return all(i >= 0 for i in self.index)


def locate(byte: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, lane, byte in the word) of register-buffer bytes."""
    byte = np.asarray(byte, dtype=np.int64)
    return byte // ROW, (byte % ROW) // 4, byte % 4


def slots(first_byte: np.ndarray) -> list[Slot]:
    """The slots of elements whose first bytes in the buffer are ``first_byte`` (element ``i`` at
    ``first_byte[i]``), in row-major order of (row, byte)."""
    row, lane, sub = locate(first_byte)
    out: dict[tuple[int, int], list[int]] = {}
    for i, (r, ln, s) in enumerate(zip(row.tolist(), lane.tolist(), sub.tolist())):
        idx = out.setdefault((r, s), [-1] * LANES)
        if idx[ln] >= 0:
            raise ValueError(f"two elements ({idx[ln]} and {i}) in lane {ln}, row {r}, byte {s}")
        idx[ln] = i
    return [Slot(r, s, tuple(idx)) for (r, s), idx in sorted(out.items())]


def affine(values: tuple[int, ...] | list[int], active: int | None = None) -> tuple[int, int] | None:
    """``(a, c)`` with ``values[l] == a * l + c`` for every lane with bit ``l`` set in ``active``
    (every lane whose value is not negative by default), or None."""
    lanes = [ln for ln, v in enumerate(values) if (v >= 0 if active is None else active >> ln & 1)]
    if not lanes:
        return 0, 0
    if len(lanes) == 1:
        return 0, values[lanes[0]]
    l0, l1 = lanes[0], lanes[1]
    a, rem = divmod(values[l1] - values[l0], l1 - l0)
    if rem:
        return None
    c = values[l0] - a * l0
    return (a, c) if all(values[ln] == a * ln + c for ln in lanes) else None


def lane_fields(values, active: int) -> tuple[int, list[tuple[int, int, int]]] | None:
    """``(c, [(low, width, weight)])`` with ``values[l] == c + sum(weight * bits low..low+width-1 of l)``
    for every lane in ``active``, or None. Nested layouts number lanes by bit fields, so lane maps
    between two of them (a reorder, a fragment) are such sums. A bit that no two active lanes differ
    in alone (one fixed in all of them: a half warp) gets no field; lanes outside ``active`` are
    don't-care."""
    lanes = [ln for ln in range(LANES) if active >> ln & 1]
    if not lanes:
        return None
    weights = [0] * 5
    for bit in range(5):
        pairs = [ln for ln in lanes if not ln >> bit & 1 and active >> (ln | 1 << bit) & 1]
        if pairs:
            weights[bit] = values[pairs[0] | 1 << bit] - values[pairs[0]]
        elif len({ln >> bit & 1 for ln in lanes}) > 1:
            return None             # the bit varies but its weight cannot be told apart
    part = (lambda ln: sum(w for b, w in enumerate(weights) if ln >> b & 1))
    c = values[lanes[0]] - part(lanes[0])
    if any(values[ln] != c + part(ln) for ln in lanes):
        return None
    parts: list[tuple[int, int, int]] = []
    for bit, w in enumerate(weights):
        if not w:
            continue
        if parts and parts[-1][0] + parts[-1][1] == bit and w == parts[-1][2] << parts[-1][1]:
            low, width, weight = parts[-1]
            parts[-1] = (low, width + 1, weight)
        else:
            parts.append((bit, 1, w))
    return c, parts
