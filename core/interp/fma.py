"""Multiply-accumulate intrinsics: ``mad``, ``dp4a``, ``dpas``/``dpasw`` (Xe) and ``mma`` (PTX).

Every operand is a ``(buffer, byte offset)`` pair of a register buffer. The
result is the exact value of the accumulation rounded once to the destination
type (floats) or wrapped to it (integers); threads outside the current thread
mask do not write their destination. ``dpas`` over f32 sources multiplies them
in tf32 (:func:`.values.tf32_operand`), as Xe-HPC's ``dpas`` with ``:tf32``
sources does.
"""
from __future__ import annotations

import numpy as np

from kdd.core.ir.funcs import Dp4a, Dpas, Mad, Mma
from kdd.core.ir.stmt import FuncCall, MemKind
from kdd.core.ir.types import Scalar, Type, s32

from .errors import InterpError
from .operands import read_bytes, read_strided, read_values, write_bytes, write_values
from .values import from_bytes, round_float, tf32_operand, to_bytes, value_dtype
from .vexpr import MASK

GRF = MemKind.GRF


def accumulate(acc: np.ndarray, products: np.ndarray, t: Type) -> np.ndarray:
    """``acc + products`` (both exact in float64/int64) rounded or wrapped to ``t``."""
    return _narrow(acc.astype(_wide_dtype(t)) + products, t)


def _wide(x: np.ndarray, t: Type) -> np.ndarray:
    return x.astype(_wide_dtype(t))


def _wide_dtype(t: Type) -> type:
    return np.float64 if t.is_float else np.int64


def _narrow(acc: np.ndarray, t: Type) -> np.ndarray:
    """An exact float64 / int64 accumulation rounded or wrapped to ``t``."""
    return round_float(acc, t) if t.is_float else acc.astype(value_dtype(t))


def _operands(ctx, call: FuncCall):
    """The four (buffer, offset) operand pairs of an FMA call, in ``OPERANDS`` order."""
    a, names = call.args, call.func.OPERANDS
    return [ctx.operand(a[i], a[i + 1], f"{call.func} {names[i]}") for i in range(0, 8, 2)]


def compile_mad(ctx, call: FuncCall):
    f: Mad = call.func
    dst, src0, src1, src2 = _operands(ctx, call)
    n = f.simd

    def mad(env):
        tm = env[MASK]
        # Operands may be views of the registers (copy=False): they are widened before dst is written.
        s0 = read_values(src0.memory(env, GRF), src0.off(env), f.dst_type, n, tm, copy=False)
        s1 = read_values(src1.memory(env, GRF), src1.off(env), f.src1_type, n, tm, copy=False)
        s2 = read_strided(src2.memory(env, GRF), src2.off(env), f.src2_type, n, f.src2_stride, tm, copy=False)
        prod = _wide(s1, f.src1_type) * _wide(s2, f.src2_type)
        write_values(dst.memory(env, GRF), dst.off(env), accumulate(s0, prod, f.dst_type), f.dst_type, tm)
    return mad


def compile_dp4a(ctx, call: FuncCall):
    f: Dp4a = call.func
    for t in (f.src1_type, f.src2_type):
        if t.scalar not in (Scalar.S8, Scalar.U8):
            raise InterpError(f"dp4a needs s8/u8 sources, got {t}")
    dst, src0, src1, src2 = _operands(ctx, call)
    n = f.simd
    dword = Type(Scalar.U32)

    def dp4a(env):
        tm = env[MASK]
        s0 = read_values(src0.memory(env, GRF), src0.off(env), s32, n, tm)
        b1 = read_bytes(src1.memory(env, GRF), src1.off(env), 4 * n, tm)
        q1 = from_bytes(b1, f.src1_type).reshape(b1.shape[0], n, 4)
        w2 = read_strided(src2.memory(env, GRF), src2.off(env), dword, n, f.src2_stride, tm)
        q2 = from_bytes(to_bytes(w2, dword), f.src2_type).reshape(w2.shape[0], w2.shape[1], 4)
        dot = (q1.astype(np.int64) * q2.astype(np.int64)).sum(axis=2)
        write_values(dst.memory(env, GRF), dst.off(env), accumulate(s0, dot, s32), s32, tm)
    return dp4a


def compile_dpas(ctx, call: FuncCall):
    f: Dpas = call.func
    tf32 = f.src1_type.scalar is Scalar.F32 and f.src2_type.scalar is Scalar.F32
    if not tf32 and (f.src1_type.size != f.src2_type.size or f.src1_type.size not in (1, 2)):
        raise InterpError(f"dpas sources must both be 8-bit, both 16-bit or both f32 (tf32) types, got "
                          f"{f.src1_type} and {f.src2_type}")
    # f32 sources are read as tf32: one element per dword, the low 13 mantissa bits dropped.
    operand = tf32_operand if tf32 else (lambda x: x)
    dst, src0, src1, src2 = _operands(ctx, call)
    opc = 4 // f.src1_type.size        # elements per dword (ops per channel)
    M, N, K = f.rcount, f.simd, f.sdepth * opc
    a_rows = M // 2 if f.is_dpasw else M
    if f.is_dpasw and M % 2:
        raise InterpError(f"dpasw needs an even repeat count, got {M}")
    grid = ctx.grid
    if f.is_dpasw and grid.launch.group_size % 2:
        raise InterpError("dpasw pairs threads of a group: the group size must be even")
    partner = grid.group * grid.launch.group_size + (grid.local ^ 1)
    even_first = (grid.local % 2 == 0)[:, None, None]

    wide_a, wide_b = _wide_dtype(f.src2_type), _wide_dtype(f.src1_type)
    in_place = wide_a is wide_b is _wide_dtype(f.dst_type)

    def dpas(env):
        tm = env[MASK]
        # Operands may be views of the registers (copy=False): they are widened before dst is written.
        c = read_values(src0.memory(env, GRF), src0.off(env), f.dst_type, M * N, tm, copy=False)
        a = operand(read_values(src2.memory(env, GRF), src2.off(env), f.src2_type, a_rows * K, tm, copy=False))
        a = a.astype(wide_a)
        if a.shape[0] != grid.threads:
            a = np.broadcast_to(a, (grid.threads, a.shape[1]))
        a = a.reshape(-1, a_rows, K)
        if f.is_dpasw:
            # Each thread of a pair holds half of A: the even thread rows 0..M/2-1, the odd one the rest.
            mine, theirs = a, a[partner]
            a = np.where(even_first, np.concatenate([mine, theirs], 1), np.concatenate([theirs, mine], 1))
        # B: sdepth rows of N dwords; dword (kk, n) holds K elements kk*opc .. kk*opc+opc-1 of column n.
        b = operand(read_values(src1.memory(env, GRF), src1.off(env), f.src1_type, K * N, tm, copy=False))
        b = b.reshape(b.shape[0], f.sdepth, N, opc).transpose(0, 1, 3, 2).astype(wide_b, order="C")
        prod = np.matmul(a, b.reshape(-1, K, N))
        if in_place:
            prod += c.reshape(-1, M, N)     # c widened to the products' type first, as accumulate does
            out = _narrow(prod, f.dst_type)
        else:
            out = accumulate(c.reshape(-1, M, N), prod, f.dst_type)
        out = out.reshape(-1, M * N)
        write_values(dst.memory(env, GRF), dst.off(env), out, f.dst_type, tm)
    return dpas


# -- mma.sync ---------------------------------------------------------------------------------------
# Fragment maps from the PTX ISA ("Matrix Fragments for mma.m16n8k16 with floating point type",
# "... for mma.m16n8k32"): element i of a lane's fragment lives in fragment register i // per_reg,
# position i % per_reg inside it (low bits first), and holds matrix element (row, col).

def _frag_a(shape: str, lane: int, i: int) -> tuple[int, int]:
    g, tig = lane >> 2, lane % 4
    if shape == "m16n8k16":
        row = g if i in (0, 1, 4, 5) else g + 8
        return row, tig * 2 + (i & 1) + (8 if i >= 4 else 0)
    row = g if (i < 4 or 8 <= i < 12) else g + 8
    return row, tig * 4 + (i & 3) + (16 if i >= 8 else 0)


def _frag_b(shape: str, lane: int, i: int) -> tuple[int, int]:
    g, tig = lane >> 2, lane % 4
    if shape == "m16n8k16":
        return tig * 2 + (i & 1) + (8 if i >= 2 else 0), g
    return tig * 4 + (i & 3) + (16 if i >= 4 else 0), g


def _frag_c(shape: str, lane: int, i: int) -> tuple[int, int]:
    g, tig = lane >> 2, lane % 4
    return g + (8 if i >= 2 else 0), tig * 2 + (i & 1)


_MMA_SHAPES = {
    # shape: (allowed a/b types, accumulator type, A regs, B regs, C regs)
    "m16n8k16": ({Scalar.F16, Scalar.BF16}, Scalar.F32, 4, 2, 4),
    "m16n8k32": ({Scalar.S8, Scalar.U8}, Scalar.S32, 4, 2, 4),
}


def fragment_positions(frag, shape: str, rows: int, cols: int, elem_size: int, reg_bytes: int) -> np.ndarray:
    """Byte offset, inside a fragment buffer, of matrix element ``(row, col)``: ``(rows, cols)``."""
    per_reg = 4 // elem_size
    pos = np.full((rows, cols), -1, dtype=np.int64)
    count = rows * cols // 32
    for lane in range(32):
        for i in range(count):
            r, c = frag(shape, lane, i)
            pos[r, c] = (i // per_reg) * reg_bytes + lane * 4 + (i % per_reg) * elem_size
    assert (pos >= 0).all(), "fragment map does not cover the matrix"
    return pos


def compile_mma(ctx, call: FuncCall):
    f: Mma = call.func
    shape = f"m{f.m}n{f.n}k{f.k}"
    spec = _MMA_SHAPES.get(shape)
    if spec is None:
        raise InterpError(f"mma shape {shape} is not supported (known: {', '.join(_MMA_SHAPES)})")
    types, acc, a_regs, b_regs, c_regs = spec
    if f.a_type.scalar not in types or f.b_type.scalar not in types or f.c_type.scalar is not acc:
        raise InterpError(f"mma.{shape} takes {'/'.join(sorted(s.short for s in types))} inputs and "
                          f"{acc.short} accumulators, got {f.a_type}, {f.b_type}, {f.c_type}")
    rb = ctx.launch.reg_bytes
    if rb != 128:
        raise InterpError(f"mma needs 32-lane register rows (reg_bytes 128), launch has {rb}")
    d, a, b, c = _operands(ctx, call)
    M, N, K = f.m, f.n, f.k
    pa = fragment_positions(_frag_a, shape, M, K, f.a_type.size, rb)
    pb = fragment_positions(_frag_b, shape, K, N, f.b_type.size, rb)
    pc = fragment_positions(_frag_c, shape, M, N, 4, rb)

    def gather(raw, pos, t):
        idx = (pos.reshape(-1, 1) + np.arange(t.size)).reshape(-1)
        return from_bytes(raw[:, idx], t).reshape((raw.shape[0],) + pos.shape)

    def mma(env):
        tm = env[MASK]
        A = gather(read_bytes(a.memory(env, GRF), a.off(env), a_regs * rb, tm), pa, f.a_type)
        B = gather(read_bytes(b.memory(env, GRF), b.off(env), b_regs * rb, tm), pb, f.b_type)
        C = gather(read_bytes(c.memory(env, GRF), c.off(env), c_regs * rb, tm), pc, f.c_type)
        D = accumulate(C, np.matmul(_wide(A, f.a_type), _wide(B, f.b_type)), f.c_type)
        out = np.empty((D.shape[0], c_regs * rb), dtype=np.uint8)
        idx = (pc.reshape(-1, 1) + np.arange(4)).reshape(-1)
        out[:, idx] = to_bytes(D.reshape(D.shape[0], -1), f.c_type)
        write_bytes(d.memory(env, GRF), d.off(env), out, tm)
    return mma
