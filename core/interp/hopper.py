"""Hopper's IR functions in the lockstep interpreter: transaction barriers, tensor copies, warpgroup MMAs.

``docs/ir-semantics.md`` ("Hopper") is the contract; this is its executable form:

- a barrier (``mbarrier.init``) is per thread group and SLM byte offset: the arrivals and transaction
  bytes its current phase still waits for and its completed phases; ``arrive.expect_tx`` and the bytes of
  ``tensor_load`` count down, and a phase completes when both are zero;
- ``tensor_load`` copies its box when issued (the copy engine's writes are not race-checked: the
  barrier's phase orders them) and completes its bytes on the barrier;
- ``mbarrier.wait`` of a phase that has not completed is a hang: threads run in lockstep, so nothing
  that comes later in program order can complete it (a warp-specialized kernel, whose producer runs in
  another branch, is beyond this interpreter; the PTX simulator runs warps apart);
- ``tensor_store`` writes its box's elements inside the tensor when issued (the latest legal read of its
  SLM is the PTX simulator's to check); ``tensor_store.wait`` has nothing left to wait for;
- ``wgmma`` computes its rows when issued, reading A and B through the 128-byte swizzle; ``wgmma.wait``
  has nothing left to wait for.
"""
from __future__ import annotations

import numpy as np

from kdd.core.ir.expr import const
from kdd.core.ir.funcs import (HOPPER_FUNCS, MbarrierExpectTx, MbarrierInit, MbarrierWait, SetMaxNreg, TensorLoad,
                               TensorStore, TensorStoreWait, Wgmma, WgmmaWait, swizzle128)
from kdd.core.ir.stmt import FuncCall, MemKind

from .errors import InterpError
from .fma import accumulate
from .operands import read_bytes, write_bytes
from .values import from_bytes, to_bytes
from .vexpr import MASK

ROW = 128


def _threads(env) -> np.ndarray:
    m = env[MASK]
    return np.flatnonzero(m) if m is not None else None


def _each(env, grid) -> np.ndarray:
    """The flat indices of the threads running the call."""
    t = _threads(env)
    return np.arange(grid.threads) if t is None else t


def _per_thread(fn, env, grid) -> np.ndarray:
    v = np.asarray(fn(env)).astype(np.int64)
    return np.broadcast_to(v, (grid.threads,)) if v.shape[0] == 1 else v


def _barrier(env, ctx, key, t: int) -> list[int]:
    """``[count, pending arrivals, pending bytes, completed phases]`` of the barrier ``key``."""
    b = env[ctx.sync_slot].mbarriers.get(key)
    if b is None:
        raise InterpError(f"{ctx.grid.describe(t)} uses the mbarrier at {key[0]}+{key[2]} before mbarrier.init")
    return b


def _settle(b: list[int]) -> None:
    """The phase completes when no arrival and no byte is pending; the next one starts."""
    if b[1] == 0 and b[2] == 0:
        b[1], b[3] = b[0], b[3] + 1


def compile_hopper(ctx, call: FuncCall):
    grid, f, ops = ctx.grid, call.func, call.ops
    if isinstance(f, (WgmmaWait, SetMaxNreg, TensorStoreWait)):     # MMAs and stores write when issued; no
        return lambda env: None                                         # register file to share out
    if isinstance(f, Wgmma):
        return _wgmma(ctx, call)
    if isinstance(f, TensorStore):
        return _tensor_copy(ctx, call, None)
    bar = ctx.operand(ops.bar, ops.bar_offset, f"{f} barrier")
    bar_name = ops.bar.name

    def keys(env):
        off = _per_thread(bar.off, env, grid)
        bar.memory(env, MemKind.SLM)            # a barrier lives in SLM
        return [(t, (bar_name, int(grid.group[t]), int(off[t]))) for t in _each(env, grid)]

    if isinstance(f, MbarrierInit):
        def init(env):
            for _, key in keys(env):
                env[ctx.sync_slot].mbarriers[key] = [f.count, f.count, 0, 0]
        return init
    if isinstance(f, MbarrierExpectTx):
        def arrive(env):
            for t, key in keys(env):
                b = _barrier(env, ctx, key, t)
                b[1] -= 1
                b[2] += f.tx_bytes
                if b[1] < 0:
                    raise InterpError(f"{grid.describe(t)} arrives at the mbarrier at {key[0]}+{key[2]} more "
                                      f"often than its count {b[0]} in one phase")
                _settle(b)
        return arrive
    if isinstance(f, MbarrierWait):
        parity = ctx.expr(ops.parity)

        def wait(env):
            p = _per_thread(parity, env, grid)
            for t, key in keys(env):
                b = _barrier(env, ctx, key, t)
                if b[3] % 2 == p[t] % 2:
                    raise InterpError(f"{grid.describe(t)} waits on phase parity {p[t] % 2} of the mbarrier at "
                                      f"{key[0]}+{key[2]}, which has not completed (it expects {b[1]} more "
                                      f"arrivals and {b[2]} bytes): the kernel would hang")
        return wait
    if isinstance(f, TensorLoad):
        return _tensor_copy(ctx, call, keys)
    raise InterpError(f"no interpreter for function {f}")


def _tensor_copy(ctx, call: FuncCall, keys):
    """A ``tensor_load`` (``keys``: its barrier's, per thread) or, with ``keys`` None, a ``tensor_store``."""
    f = call.func
    ops, grid = call.ops, ctx.grid
    mem = ctx.operand(ops.mem, const(0), f"{f.NAME} tensor")
    slm = ctx.operand(ops.slm, ops.slm_offset, f"{f.NAME} SLM")
    corner = [ctx.expr(e) for e in (ops.x0, ops.x1, ops.x2, ops.x3, ops.x4)[:f.rank]]
    size = f.type.size
    # box element (c, i1, ..) as a grid, i1 fastest among the rows: index [i_{r-1}, .., i1, c]
    index = np.meshgrid(*(np.arange(b) for b in reversed(f.box)), indexing="ij")[::-1]
    pitch = (size, *f.strides)
    box_bytes = swizzle128(np.arange(f.rows * ROW, dtype=np.int64))   # where byte i of the box lands

    def copy(env):
        g = mem.memory(env, MemKind.GLOBAL)
        s = slm.memory(env, MemKind.SLM)
        at = [_per_thread(fn, env, grid) for fn in corner]
        dst = _per_thread(slm.off, env, grid)
        for t, key in keys(env) if keys else ((t, None) for t in _each(env, grid)):
            inside = np.ones(index[0].shape, dtype=bool)
            start = np.zeros(index[0].shape, dtype=np.int64)
            for d, i in enumerate(index):
                pos = at[d][t] + i
                inside &= (pos >= 0) & (pos < f.dims[d])
                start += pos * pitch[d]
            start = np.where(inside, start, 0)
            idx = (start[..., None] + np.arange(size)).reshape(1, -1)
            where = dst[t] + box_bytes
            if dst[t] % 1024 or where.max() >= s.size:
                raise InterpError(f"{grid.describe(t)}: {f.NAME} at {ops.slm.name}+{dst[t]} (a box must start "
                                  f"1024-byte aligned and fit the buffer's {s.size} bytes)")
            if key is None:         # a store: the elements inside the tensor
                keep = np.repeat(inside.reshape(-1), size)
                g.write(idx[:, keep], s.data[grid.group[t], where][keep][None])
                continue
            data = np.where(np.repeat(inside.reshape(-1), size), g.read(idx).reshape(-1), 0).astype(np.uint8)
            s.data[grid.group[t], where] = data
            b = _barrier(env, ctx, key, t)
            b[2] -= f.bytes
            _settle(b)
    return copy


def _wgmma(ctx, call: FuncCall):
    f: Wgmma = call.func
    ops, grid = call.ops, ctx.grid
    d = ctx.operand(ops.d, ops.d_offset, "wgmma D")
    a = ctx.operand(ops.a, ops.a_offset, "wgmma A")
    b = ctx.operand(ops.b, ops.b_offset, "wgmma B")
    n, sa, sb = f.n, f.a_type.size, f.b_type.size
    rows = np.arange(64)[:, None] * ROW + np.arange(16)[None, :] * sa                   # A (m, k)
    cols = np.arange(n)[None, :]
    k = np.arange(16)[:, None]
    b_pos = ((cols // 64) * f.b_block + k * ROW + (cols % 64) * sb if f.b_major == "n"     # B (k, n)
             else cols * ROW + k * sb)
    lane, i = np.meshgrid(np.arange(32), np.arange(n // 2), indexing="ij")
    frag_row = lane // 4 + 8 * ((i // 2) % 2)
    frag_col = 8 * (i // 4) + 2 * (lane % 4) + i % 2
    frag_byte = (i * ROW + lane * 4).reshape(-1)          # D element (row, col) of a thread's 16 rows
    rank = grid.ids["thread_id0"] % 4

    def read(mem, off, pos, size, t):
        where = swizzle128(off + pos)[..., None] + np.arange(size)
        if where.min() < 0 or where.max() >= mem.size:
            raise InterpError(f"{grid.describe(t)}: wgmma reads {mem.name} outside its {mem.size} bytes")
        return mem.data[grid.group[t], where.reshape(-1)]

    def mma(env):
        sa_mem, sb_mem = a.memory(env, MemKind.SLM), b.memory(env, MemKind.SLM)
        dm = d.memory(env, MemKind.GRF)
        a_off, b_off = _per_thread(a.off, env, grid), _per_thread(b.off, env, grid)
        threads = _each(env, grid)
        mask = env[MASK]
        raw = read_bytes(dm, d.off(env), n * 64, mask)
        out = raw.copy()
        for t in threads:
            A = from_bytes(read(sa_mem, a_off[t], rows, sa, t)[None], f.a_type).reshape(64, 16)
            B = from_bytes(read(sb_mem, b_off[t], b_pos, sb, t)[None], f.b_type).reshape(16, n)
            mine = A[16 * rank[t]: 16 * rank[t] + 16].astype(np.float64) @ B.astype(np.float64)
            row_t = 0 if raw.shape[0] == 1 else t
            C = from_bytes(raw[row_t][None], f.c_type).reshape(-1)          # register order
            products = mine[frag_row, frag_col].reshape(-1)
            D = accumulate(C[frag_byte // 4], products, f.c_type)
            word = np.empty_like(C)
            word[frag_byte // 4] = D
            out[row_t] = to_bytes(word[None], f.c_type).reshape(-1)
        write_bytes(dm, d.off(env), out, mask)
    return mma


HOPPER_COMPILERS = {cls: compile_hopper for cls in HOPPER_FUNCS}
