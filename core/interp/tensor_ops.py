"""Whole-tensor intrinsics: ``reorder``, ``reduce`` and ``eltwise``.

``reorder(src, src_off, dst, dst_off)`` writes every element of
``dst_layout``'s padded index space: the source element converted with round
to nearest even and saturation (``values.convert_nearest``) where the index is
inside the logical dims, zero in the padding. Bytes of the destination buffer
that the layout does not cover are left as they are.

``reduce`` is the same with a sum over ``dims``: the destination layout has
size 1 in those dims and the source's sizes elsewhere; sums are exact
(float64 / int64) and converted like ``reorder``.
"""
from __future__ import annotations

import numpy as np

from kdd.core.ir.funcs import Eltwise, Reduce, Reorder
from kdd.core.ir.stmt import FuncCall
from kdd.core.ir.types import f64, s64

from .eltwise_math import ELTWISE, apply_eltwise
from .errors import InterpError
from .memory import Registers
from .operands import read_bytes, read_values, write_bytes, write_values
from .values import convert_nearest, from_bytes, to_bytes
from .vexpr import MASK


def _byte_index(elem_offsets: np.ndarray, size: int) -> np.ndarray:
    return (elem_offsets[:, None] * size + np.arange(size)).reshape(-1)


class _Placement:
    """Where the elements of a layout live, as byte indices relative to the buffer offset."""

    def __init__(self, layout, indices: np.ndarray):
        self.type = layout.dtype
        self.bytes = _byte_index(layout.offsets_of(indices), self.type.size)
        self.span = int(self.bytes.max()) + 1 if self.bytes.size else 0
        # Bytes 0, 1, .., span - 1 in order: the elements are the whole window, no gather or scatter.
        self.dense = bool((self.bytes == np.arange(self.bytes.size)).all())


def _padded_indices(layout) -> tuple[np.ndarray, np.ndarray]:
    """Every index of the padded dims (C order) and whether it is inside the logical dims."""
    grid = np.indices(layout.padded_dims).reshape(layout.ndims, -1).T
    return grid, (grid < np.asarray(layout.dims)).all(axis=1)


def _writer(dst_op, place: _Placement):
    """Writes ``values`` (``(T, elems)``) into the destination, keeping bytes the layout skips."""
    def write(env, values):
        tm = env[MASK]
        mem, off = dst_op.memory(env), dst_op.off(env)
        if place.dense and isinstance(mem, Registers) and off.min() >= 0 and off.max() + place.span <= mem.size:
            # Every byte is replaced, and reading registers has no effect: write the values as they are.
            write_bytes(mem, off, to_bytes(values, place.type), tm)
            return
        cur = np.array(read_bytes(mem, off, place.span, tm))
        cur[:, place.bytes] = to_bytes(values, place.type)   # (1 | rows, bytes), broadcast by the assignment
        write_bytes(mem, off, cur, tm)
    return write


def compile_reorder(ctx, call: FuncCall):
    f: Reorder = call.func
    src_l, dst_l = f.src_layout, f.dst_layout
    if tuple(src_l.dims) != tuple(dst_l.dims):
        raise InterpError(f"reorder between different dims {src_l.dims} and {dst_l.dims}")
    src = ctx.operand(call.ops.src, call.ops.src_offset, "reorder source")
    dst = ctx.operand(call.ops.dst, call.ops.dst_offset, "reorder destination")
    grid, inside = _padded_indices(dst_l)
    src_place, dst_place = _Placement(src_l, grid[inside]), _Placement(dst_l, grid)
    write = _writer(dst, dst_place)
    n, padded = len(grid), not inside.all()

    def reorder(env):
        raw = read_bytes(src.memory(env), src.off(env), src_place.span, env[MASK])
        vals = from_bytes(raw if src_place.dense else raw[:, src_place.bytes], src_place.type)
        conv = convert_nearest(vals, src_l.dtype, dst_l.dtype)
        if padded:
            out = np.zeros((vals.shape[0], n), dtype=conv.dtype)
            out[:, inside] = conv
            conv = out
        write(env, conv)
    return reorder


def compile_reduce(ctx, call: FuncCall):
    f: Reduce = call.func
    src_l, dst_l = f.src_layout, f.dst_layout
    dims = set(f.dims)
    want = tuple(1 if d in dims else s for d, s in enumerate(src_l.dims))
    if tuple(dst_l.dims) != want:
        raise InterpError(f"reduce over dims {sorted(dims)} of {src_l.dims} needs destination dims "
                          f"{want}, got {dst_l.dims}")
    src = ctx.operand(call.ops.src, call.ops.src_offset, "reduce source")
    dst = ctx.operand(call.ops.dst, call.ops.dst_offset, "reduce destination")
    logical = np.indices(src_l.dims).reshape(src_l.ndims, -1).T
    src_place = _Placement(src_l, logical)
    grid, inside = _padded_indices(dst_l)
    write = _writer(dst, _Placement(dst_l, grid))
    axes = tuple(1 + d for d in sorted(dims))
    # Sums are exact in float64 (float sources) or int64 (integer sources).
    wide, wide_type = (np.float64, f64) if src_l.dtype.is_float else (np.int64, s64)

    def reduce(env):
        raw = read_bytes(src.memory(env), src.off(env), src_place.span, env[MASK])
        vals = from_bytes(raw[:, src_place.bytes], src_l.dtype).astype(wide)
        sums = vals.reshape((-1,) + tuple(src_l.dims)).sum(axis=axes).reshape(vals.shape[0], -1)
        conv = convert_nearest(sums, wide_type, dst_l.dtype)
        out = np.zeros((vals.shape[0], len(grid)), dtype=conv.dtype)
        out[:, inside] = conv
        write(env, out)
    return reduce


def compile_eltwise(ctx, call: FuncCall):
    f: Eltwise = call.func
    if f.alg not in ELTWISE:
        raise InterpError(f"unknown eltwise algorithm '{f.alg}' (known: {', '.join(ELTWISE)})")
    buf = ctx.operand(call.ops.buf, call.ops.offset, "eltwise buffer")

    def eltwise(env):
        tm = env[MASK]
        mem, off = buf.memory(env), buf.off(env)
        x = read_values(mem, off, f.dtype, f.elems, tm)
        with np.errstate(all="ignore"):
            y = apply_eltwise(f.alg, x, f.alpha, f.beta).astype(f.dtype.numpy)
        write_values(mem, off, y, f.dtype, tm)
    return eltwise

