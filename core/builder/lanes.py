"""Lane distributions of sm_90 register buffers as nested layouts (seed 001).

On ``sm_90`` a register buffer is a warp's registers: byte ``b`` is lane
``(b % 128) // 4`` of register ``b // 128`` (``docs/ir-semantics.md``). Each
GRF allocation carries the distribution of its logical tile over the 32
lanes as a :class:`NestedLayout` (alloc attrs ``("lanes", layout)`` and
``("lane_dims", names)``, the dims in the nested layout's order): the
thread digits are the lane, and a lane's element id ``e`` is its register
``e // (4 / size)`` and the part ``e % (4 / size)`` of it.

The nested layout is derived from the buffer's :class:`Layout` (splitting its
blocks at the sub-register and lane boundaries) and verified element by
element; a buffer whose order no nested layout over its tile dims describes
gets the distribution of its raw 32-bit words.
"""
from __future__ import annotations

import itertools
import math

from kdd.core.layout.layout import Block, Layout
from kdd.core.layout.nested import NestedLayout

from .tile import RegTensor


def lanes_attrs(reg: RegTensor, reg_bytes: int) -> tuple:
    """Alloc attributes giving ``reg``'s lane distribution."""
    found = nested_of(reg.layout, reg_bytes)
    if found is None:
        return flat_lanes(reg.bytes, reg_bytes)
    nested, order = found
    return (("lanes", nested), ("lane_dims", tuple(reg.roles[d] for d in order)))


def flat_lanes(nbytes: int, reg_bytes: int) -> tuple:
    """The distribution of a buffer's 32-bit words: word ``w`` is lane ``w % 32`` of register ``w // 32``."""
    rows = max(1, -(-nbytes // reg_bytes))
    nested = NestedLayout((1,), (rows,), (1,), (reg_bytes // 4,), (1,), (0,), (1,))
    return (("lanes", nested), ("lane_dims", ("word",)))


def _split(blocks, at: int) -> list[Block]:
    out = []
    for b in blocks:
        if b.stride < at < b.stride * b.size and at % b.stride == 0 and b.size % (at // b.stride) == 0:
            inner = at // b.stride
            out += [Block(b.dim, inner, b.stride), Block(b.dim, b.size // inner, at)]
        else:
            out.append(b)
    return out


def nested_of(layout: Layout, reg_bytes: int) -> tuple[NestedLayout, tuple[int, ...]] | None:
    """A nested layout (and its dim order) equal to ``layout`` on a 32-lane register file, or None.

    Blocks whose stride falls inside one register row pick the lane; all other
    blocks number a lane's elements. Along each dim, element digits below the
    lane digits form the element tile and those above the outer and batch
    tiles; the candidates are checked element by element.
    """
    size = layout.dtype.size
    if size > 4 or layout.offset:
        return None
    per_reg = 4 // size
    digits = _digits(layout, per_reg, per_reg * (reg_bytes // 4))
    if digits is None:
        return None
    options = []  # per dim: candidate (element, thread, thread stride, outer + batch digits)
    for dim_digits in digits:
        dim_options = _dim_options(dim_digits, per_reg)
        if dim_options is None:
            return None
        options.append(dim_options)
    ndims = len(layout.dims)
    for order in itertools.permutations(range(ndims)):
        for picks in itertools.product(*(options[d] for d in order)):
            for cuts in itertools.product(*(range(len(pick[3]) + 1) for pick in picks)):
                nested = _candidate(picks, cuts)
                if nested is not None and _agrees(nested, order, layout, per_reg, reg_bytes):
                    return nested, order
    return None


def _digits(layout: Layout, per_reg: int, row: int) -> list[list[tuple[bool, Block]]] | None:
    """Per dim, its blocks (split at the dword and the register row) innermost first, each marked
    whether it picks the lane (its stride within one row); None where a lane block crosses the row."""
    blocks = _split(_split([b for b in layout.blocks if b.size > 1], per_reg), row)
    digits: list[list[tuple[bool, Block]]] = [[] for _ in layout.dims]
    for b in blocks:
        is_lane = per_reg <= b.stride < row
        if is_lane and b.stride * b.size > row:
            return None
        digits[b.dim].append((is_lane, b))
    return digits


def _dim_options(dim_digits: list[tuple[bool, Block]], per_reg: int) -> list[tuple] | None:
    """A dim's candidates (element, thread, thread stride, outer + batch digits): its lane digits must
    be consecutive and dense (None where they are not); without any, each split of its digits."""
    flags = [lane for lane, _ in dim_digits]
    first = flags.index(True) if True in flags else None
    lane = [b for is_lane, b in dim_digits if is_lane]
    if first is not None and flags[first:first + len(lane)] != [True] * len(lane):
        return None
    if any(nxt.stride != cur.stride * cur.size for cur, nxt in zip(lane, lane[1:])):
        return None
    sizes = [b.size for _, b in dim_digits]
    t_stride = lane[0].stride // per_reg if lane else 0
    splits = [first] if first is not None else range(len(sizes) + 1)
    return [(math.prod(sizes[:j]), math.prod(b.size for b in lane), t_stride, sizes[j + len(lane):])
            for j in splits]


def _candidate(picks, cuts) -> NestedLayout | None:
    n = len(picks)
    try:
        return NestedLayout((1,) * n, [math.prod(p[3][c:]) for p, c in zip(picks, cuts)],
                            [math.prod(p[3][:c]) for p, c in zip(picks, cuts)], [p[1] for p in picks],
                            [p[0] for p in picks], (0,) * n, [p[2] if p[1] > 1 else 0 for p in picks])
    except ValueError:
        return None


def _agrees(nested: NestedLayout, order, layout: Layout, per_reg: int, reg_bytes: int) -> bool:
    import numpy as np
    if nested.shape != tuple(layout.dims[d] for d in order):
        return False
    idx = np.moveaxis(np.indices(layout.dims, dtype=np.int64), 0, -1).reshape(-1, len(layout.dims))
    _, lane = nested.lane_of(idx[:, list(order)])
    elem = nested.element_of(idx[:, list(order)])
    size = layout.dtype.size
    got = (elem // per_reg) * reg_bytes + lane * 4 + (elem % per_reg) * size
    return bool(np.array_equal(got, layout.offsets_of(idx) * size))
