"""``send``: block and scattered loads, stores and atomic (fetch-)adds between memory and registers.

Arguments ``(mem, mem_off, reg, reg_off, mask)``. Register data is dense
(element ``i`` at ``reg_off + i * size``). Block messages address ``elems``
consecutive elements from the byte offset ``mem_off``; scattered messages
take one byte offset per lane (a ``lanes``-lane vector), each lane moving
``vec`` consecutive elements, element ``v`` of lane ``l`` being register
element ``v * lanes + l`` (as the hardware orders a vector message's
payload). ``mask`` is a bool scalar (whole message) or a ``lanes``-lane vector (per lane):
masked-off elements are not accessed (no bounds check) and, as on hardware,
a load leaves their register bytes unchanged (the builder zero-fills a
destination first where padding needs zeros). Threads outside the current
thread mask do nothing at all.

``load_block2d`` (``Send2D``) reads a block of a row-pitched surface: its
elements outside the surface read as zero (no memory access), so a tile
that overhangs a matrix needs no mask and no zero fill.
"""
from __future__ import annotations

import numpy as np

from kdd.core.ir.funcs import Send, Send2D, SendKind, SendOp
from kdd.core.ir.stmt import FuncCall, MemKind

from .errors import InterpError
from .operands import combine_masks, is_true, read_bytes, write_bytes
from .values import from_bytes, to_bytes
from .vexpr import MASK

_SPACES = {"global": MemKind.GLOBAL, "slm": MemKind.SLM}


def compile_send(ctx, call: FuncCall):
    f: Send = call.func
    if f.op is SendOp.PREFETCH:
        return lambda env: None  # a cache hint: no effect on memory or registers
    space = _SPACES.get(f.space)
    if space is None:
        raise InterpError(f"unknown send space '{f.space}' (known: {', '.join(_SPACES)})")
    ops = call.ops
    mem = ctx.operand(ops.mem, ops.mem_offset, "send memory")
    reg = ctx.operand(ops.reg, ops.reg_offset, "send register")
    mask = None if is_true(ops.mask) else ctx.expr(ops.mask)
    t, n, vec = f.type, f.lanes, f.vec
    size, nbytes = t.size, f.elems * f.type.size
    scattered = f.kind is SendKind.SCATTERED
    if vec > 1 and f.op in (SendOp.ATOMIC_ADD, SendOp.ATOMIC_FETCH_ADD):
        raise InterpError(f"{f}: atomics move one element per lane")
    # Register order (vector element, lane, byte) -> the byte's distance from its lane's address.
    vec_steps = np.repeat(np.arange(vec, dtype=np.int64) * size, n * size) + np.tile(np.arange(size), n * vec)
    block_steps = np.arange(nbytes, dtype=np.int64)
    elem_starts = np.arange(f.elems, dtype=np.int64) * size

    def activity(env):
        """Per lane activity ``(rows, lanes | 1)`` (None: everything), and whether any is active."""
        act = combine_masks(env[MASK], None if mask is None else mask(env))
        return act, act is None or bool(act.any())

    def byte_index(env) -> np.ndarray:
        """Memory byte index of every message byte, in register order: ``(rows, nbytes)``."""
        o = mem.off(env)
        if not scattered:
            return o[:, None] + block_steps
        if o.ndim == 1:
            return o[:, None] + vec_steps
        idx = lane_bytes(o)
        idx += vec_steps
        return idx

    def lane_bytes(x):
        """Per-lane columns ``(rows, lanes)`` as a new array of register-order byte columns."""
        x = np.repeat(x, size, axis=1)
        return np.tile(x, (1, vec)) if vec > 1 else x

    def per_byte(act):
        """Lane activity as register-order byte activity (every vector element of a lane alike)."""
        if act is None or act.shape[1] == 1:
            return act
        return lane_bytes(act)

    threads = ctx.grid.threads

    def masked_block(env, act_b):
        """A block message masked per thread, read as one window per thread (None: another shape)."""
        o = mem.off(env)
        if act_b is None or act_b.shape != (threads, 1) or o.shape != (threads,):
            return None
        return mem.memory(env, space).read_rows(o, nbytes, act_b[:, 0])

    if f.op is SendOp.LOAD:
        def load(env):
            tm = env[MASK]
            regs = reg.memory(env, MemKind.GRF)
            if mask is None and not scattered:
                data = read_bytes(mem.memory(env, space), mem.off(env), nbytes, tm)
            else:
                act, some = activity(env)
                if not some:
                    return  # every element masked off: no access, registers unchanged
                act_b = per_byte(act)
                data = masked_block(env, act_b) if not scattered else None
                if data is None:
                    data = mem.memory(env, space).read(byte_index(env), act_b)
                if act_b is not None:
                    data = np.where(act_b, data, read_bytes(regs, reg.off(env), nbytes, tm))
            write_bytes(regs, reg.off(env), data, tm)
        return load

    if f.op is SendOp.STORE:
        def store(env):
            tm = env[MASK]
            if mask is None and not scattered:
                data = read_bytes(reg.memory(env, MemKind.GRF), reg.off(env), nbytes, tm)
                write_bytes(mem.memory(env, space), mem.off(env), data, tm)
                return
            act, some = activity(env)
            if some:
                data = read_bytes(reg.memory(env, MemKind.GRF), reg.off(env), nbytes, tm)
                mem.memory(env, space).write(byte_index(env), data, per_byte(act))
        return store

    if f.op in (SendOp.ATOMIC_ADD, SendOp.ATOMIC_FETCH_ADD):
        fetch = f.op is SendOp.ATOMIC_FETCH_ADD

        def atomic_add(env):
            act, some = activity(env)
            if not some:
                return
            tm = env[MASK]
            regs = reg.memory(env, MemKind.GRF)
            raw = read_bytes(regs, reg.off(env), nbytes, tm)
            o = mem.off(env)
            offs = (o if o.ndim == 2 else o[:, None] + np.zeros(n, dtype=np.int64)) if scattered \
                else o[:, None] + elem_starts
            old = mem.memory(env, space).atomic_add(offs, from_bytes(raw, t), t, act, fetch)
            if fetch:  # the old values land where the added ones were (masked-off elements keep theirs)
                act_b = per_byte(act)
                data = to_bytes(old, t)
                write_bytes(regs, reg.off(env), data if act_b is None else np.where(act_b, data, raw), tm)
        return atomic_add
    raise InterpError(f"unknown send operation {f.op}")


def compile_send2d(ctx, call: FuncCall):
    """``load_block2d``: element ``(a, r, c)`` of the block from surface row ``y + r``, column
    ``x + a * width + c``, zero outside the surface, into the registers in ``(a, r, c)`` order."""
    f: Send2D = call.func
    ops = call.ops
    mem = ctx.operand(ops.mem, ops.base, "2D block memory")
    reg = ctx.operand(ops.reg, ops.reg_offset, "2D block register")
    width, height, pitch, x, y = (ctx.expr(e) for e in (ops.surface_width, ops.surface_height, ops.pitch,
                                                         ops.x, ops.y))
    size = f.type.size
    a, r, c = np.meshgrid(np.arange(f.array), np.arange(f.height), np.arange(f.width), indexing="ij")
    cols = (a * f.width + c).reshape(-1).astype(np.int64)  # register order: (a, r, c)
    rows = r.reshape(-1).astype(np.int64)
    within = np.arange(size, dtype=np.int64)

    def load(env):
        tm = env[MASK]
        col = x(env).astype(np.int64)[:, None] + cols
        row = y(env).astype(np.int64)[:, None] + rows
        inside = (col >= 0) & (row >= 0) & (col * size < width(env).astype(np.int64)[:, None]) \
            & (row < height(env).astype(np.int64)[:, None])
        start = mem.off(env)[:, None] + row * pitch(env).astype(np.int64)[:, None] + col * size
        idx = (start[:, :, None] + within).reshape(start.shape[0], -1)
        act = np.repeat(inside, size, axis=1)
        if tm is not None:
            act = act & tm[:, None]
        data = mem.memory(env, MemKind.GLOBAL).read(idx, act)
        write_bytes(reg.memory(env, MemKind.GRF), reg.off(env), np.where(act, data, 0).astype(np.uint8), tm)
    return load
