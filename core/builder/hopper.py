"""The ``schedule = "tma"`` GEMM of sm_90 (CUTLASS 3's ``KernelTma``): TMA, transaction barriers, wgmma.

The kernel, top to bottom (one IR thread is a warp; warps ``4q .. 4q+3`` are consumer warpgroup ``q``
and compute rows ``64q .. 64q+63`` of the group's ``tile`` of C)::

    kernel {
      alloc.slm a_s[stages x BM x 128 B], b_s[stages x BN/64 x BK x 128 B], full[stages x 8 B]
      alloc.grf acc[16 x BN f32]                                    (mma accumulator fragments)
      acc = 0;  warp 0: mbarrier.init(full[s], 1) for every stage;  barrier
      warp 0: load(s, s) for the first stages                        (prologue)
      for kt: wait full[kt % stages] (parity kt / stages % 2)
              wgmma x BK/16 on stage kt % stages;  wgmma.wait[1]      (the previous block's MMAs done)
              barrier;  warp 0: load((kt - 1) % stages, kt - 1 + stages)   (the stage they read refilled)
      wgmma.wait[0];  epilogue: each warp stores its 16 rows
    }
    load(s, j): mbarrier.arrive.expect_tx(full[s], bytes of A and B); tensor_load A box (BK x BM) at
                (j * BK, m0); tensor_load B boxes (64 x BK) at (n0 + 64 b, j * BK)

A's stage is BM rows of BK = 128 bytes (K-major, 128-byte swizzle); B's is BN / 64 blocks of BK rows
of 64 columns (N-major, the problem's ``K x N`` rows). The loop stays a loop: the PTX has one copy of
its body, whatever K is.
"""
from __future__ import annotations

from kdd.core.ir.expr import Broadcast, Cast, Load, Ramp, const, land, var
from kdd.core.ir.funcs import (Barrier, MbarrierExpectTx, MbarrierInit, MbarrierWait, Send, SendKind, SendOp,
                               TensorLoad, Wgmma, WgmmaWait)
from kdd.core.ir.stmt import Alloc, For, FuncCall, Group, If, Let, MemKind, Store, seq
from kdd.core.ir.types import Scalar, f32, s32, u32, u64

from .errors import BuildError
from .kernel import Kernel, KernelArg
from .layouts import tensor_layout

ROW = 128           # bytes of one swizzled SLM row, one register row of a warp
WARPGROUP = 4       # warps of a warpgroup
DEFAULT_TILE = {"m": 128, "n": 256}
INPUTS = (Scalar.F16, Scalar.BF16)


def tma_tile(problem, config) -> tuple[int, int, int]:
    """``(BM, BN, BK)`` of the ``tile`` knob (``m128n256`` when empty; BK is 128 bytes of the input type,
    which the 128-byte swizzle fixes)."""
    t = config.tile
    bk = ROW // problem.types.src.size
    bm, bn = (t.get(d) if d in t else DEFAULT_TILE[d] for d in ("m", "n"))
    if "k" in t and t.get("k") != bk:
        raise BuildError(f"tile k must be {bk} for {problem.types.src} (128-byte swizzled rows)", knob="tile")
    return bm, bn, bk


def build_tma_gemm(problem, config, target) -> Kernel:
    """The kernel IR of a GEMM ``problem`` under ``schedule = "tma"``; :class:`BuildError` names the knob
    the schedule cannot honour."""
    if problem.op != "gemm":
        raise BuildError("schedule=tma generates GEMMs only yet (convolutions: schedule=classic)", knob="schedule")
    if target.isa != "ptx":
        raise BuildError(f"schedule=tma is an sm_90 schedule, not one of {target.name}", knob="schedule")
    types = problem.types
    if types.src.scalar not in INPUTS or types.wei != types.src or types.dst.scalar not in (Scalar.F32, *INPUTS):
        raise BuildError(f"schedule=tma takes f16 or bf16 inputs and an f32, f16 or bf16 destination, got {types}",
                         knob="schedule")
    if problem.post_ops:
        raise BuildError("schedule=tma has no post-ops yet", knob="schedule")
    if config.cluster.product() != 1:
        raise BuildError("clusters larger than one group are not generated yet", knob="cluster")
    shape = problem.shape
    if shape.batch and any(b != 1 for b in shape.batch):
        raise BuildError("schedule=tma has no batch dims yet", knob="schedule")
    M, N, K = shape.m, shape.n, shape.k
    bm, bn, bk = tma_tile(problem, config)
    stages = config.stages
    if bm % 64 or not 64 <= bm <= 256 or bn % 64 or not 64 <= bn <= 256:
        raise BuildError(f"tile m{bm}n{bn}: M a multiple of 64 up to 256 (a warpgroup per 64 rows), N a multiple "
                         "of 64 up to 256", knob="tile")
    if M % bm or N % bn or K % bk:
        raise BuildError(f"tile m{bm}n{bn}k{bk} must divide the problem m{M}n{N}k{K} (no tails yet)", knob="tile")
    esize = types.src.size
    a_stage, b_stage = bm * ROW, (bn // 64) * bk * ROW
    smem = stages * (a_stage + b_stage) + stages * 8
    if smem > target.slm.per_group:
        raise BuildError(f"{stages} stages of m{bm}n{bn}k{bk} need {smem} bytes of shared memory, "
                         f"{target.name} has {target.slm.per_group}", knob="stages")
    args = tuple(KernelArg(name, var(name, u64), getattr(types, name), tensor_layout(problem, name,
                                                                                       getattr(types, name)),
                           problem.tensor_dims(name), "output" if name == "dst" else "input")
                 for name in ("src", "wei", "dst"))
    for a in args:
        if a.layout.size_bytes() != a.dtype.size * _count(a.dims) or not _row_major(a):
            raise BuildError(f"schedule=tma reads dense row-major tensors; {a.name} is "
                             f"{a.layout.blocks_str([n for n, _ in a.dims])}", knob=f"{a.name}_layout")
    src, wei, dst = (a.var for a in args)
    a_s, b_s, full, acc = var("a_s", u64), var("b_s", u64), var("full", u64), var("acc", u64)
    tid, n0, m0 = var("thread_id0"), var("n0"), var("m0")
    wg, rank = var("wg"), var("rank")
    kt, s, s_next, kk = var("kt"), var("s"), var("s_next"), var("kk")
    k_iters = K // bk
    acc_rows = bn // 2          # f32 accumulator registers per lane: 16 rows x BN / 32 lanes
    producer = tid.eq(0)

    def load(stage, j):
        """Stage ``stage`` filled with K block ``j`` of A and B, counted on ``full[stage]``."""
        bar = stage * 8
        calls = [FuncCall.make(MbarrierExpectTx(a_stage + b_stage), [full, bar]),
                 FuncCall.make(TensorLoad(types.src, bk, bm), [src, K, M, K * esize, j * bk, m0, a_s,
                                                               stage * a_stage, full, bar])]
        calls += [FuncCall.make(TensorLoad(types.wei, 64, bk), [wei, N, K, N * esize, n0 + b * 64, j * bk, b_s,
                                                                stage * b_stage + b * bk * ROW, full, bar])
                  for b in range(bn // 64)]
        return seq(*calls)

    zero, init_bar, first = var("acc_row"), var("bar"), var("first")
    init = seq(For.make(zero, 0, acc_rows, Store.make(acc, zero * ROW, Broadcast.make(const(0.0, f32), 32))),
               If.make(producer, For.make(init_bar, 0, stages, FuncCall.make(MbarrierInit(1), [full, init_bar * 8]))),
               FuncCall.make(Barrier(), []))
    prologue = If.make(producer, For.make(first, 0, min(stages, k_iters), load(first, first)))
    mma = For.make(kk, 0, bk // 16, FuncCall.make(
        Wgmma(bn, types.src, types.wei, f32, bk * ROW),
        [acc, 0, a_s, s * a_stage + wg * 64 * ROW + kk * 16 * esize, b_s, s * b_stage + kk * 16 * ROW]),
        unroll=bk // 16)        # back-to-back MMAs behind one wgmma.fence
    refill = If.make(land(producer, kt.ge(1), (kt + (stages - 1)).lt(k_iters)),
                     Let.make(s_next, (kt + (stages - 1)) % stages, load(s_next, kt + (stages - 1))))
    main = For.make(kt, 0, k_iters, seq(
        Let.make(s, kt % stages, seq(FuncCall.make(MbarrierWait(), [full, s * 8, (kt // stages) % 2]), mma)),
        FuncCall.make(WgmmaWait(1), []), FuncCall.make(Barrier(), []), refill))
    body = seq(Group.make("init", init), Group.make("prologue", prologue), Group.make("k_loop", main),
               FuncCall.make(WgmmaWait(0), []), Group.make("epilogue", _epilogue(dst, types.dst, acc, acc_rows, N, m0, n0,
                                                                               wg, rank)))
    body = Alloc.make(acc, acc_rows * ROW, MemKind.GRF, body)
    for buf, size in ((full, stages * 8), (b_s, stages * b_stage), (a_s, stages * a_stage)):
        body = Alloc.make(buf, size, MemKind.SLM, body)
    body = Let.make(n0, var("group_id0") * bn, Let.make(m0, var("group_id1") * bm, Let.make(
        wg, tid // WARPGROUP, Let.make(rank, tid % WARPGROUP, body))))
    return Kernel(Group.make("kernel", body), args, (N // bn, M // bm, 1), (WARPGROUP * bm // 64, 1, 1), 32,
                  target.name, target.registers.reg_bytes, smem, problem, config)


def _epilogue(dst, out_type, acc, acc_rows: int, N: int, m0, n0, wg, rank):
    """Each warp's 16 rows of C: register pair ``(i, i + 1)`` (``i = 2 p``) holds, in lane ``l``, row
    ``l / 4 + 8 * (p % 2)`` and columns ``8 * (p / 2) + 2 * (l % 4)`` and the next one. An f32 C is
    stored a register at a time; a 16-bit C converts the pair side by side into one word per lane
    (``packed``) and stores that. Each address is a scalar (the warp's corner, the pair's constant) plus
    one lane pattern, so that the unrolled stores share one address register."""
    pair = var("acc_pair")
    lane = Ramp.make(const(0), 1, 32)
    size = out_type.size
    corner = ((m0 + wg * 64 + rank * 16) * N + n0) * size
    pattern = (lane // 4) * (N * size) + (lane % 4) * (2 * size)
    everywhere = Broadcast.make(const(True), 32)

    def at(half):
        return Broadcast.make(corner + ((pair % 2) * 8 * N + (pair // 2) * 8) * size + half * size, 32) + pattern
    if size == 4:
        stores = seq(*(FuncCall.make(Send(SendOp.STORE, SendKind.SCATTERED, "global", f32, 32),
                                     [dst, at(half), acc, (pair * 2 + half) * ROW, everywhere]) for half in (0, 1)))
    else:
        packed = var("packed", u64)
        halves = [Store.make(packed, half * size, Cast.make(out_type.with_lanes(32), Load.make(
            f32.with_lanes(32), acc, (pair * 2 + half) * ROW)), stride=4) for half in (0, 1)]
        stores = Alloc.make(packed, ROW, MemKind.GRF, seq(*halves, FuncCall.make(
            Send(SendOp.STORE, SendKind.SCATTERED, "global", u32, 32), [dst, at(0), packed, 0, everywhere])))
    # over pairs, not over even registers: a loop of step 1 keeps its index's range exact for the verifier
    return For.make(pair, 0, acc_rows // 2, stores)


def _count(dims) -> int:
    n = 1
    for _, size in dims:
        n *= size
    return n


def _row_major(arg: KernelArg) -> bool:
    """Whether the tensor's last dim is contiguous and each dim's stride is the product of the later ones."""
    import numpy as np

    sizes = [s for _, s in arg.dims]
    idx = np.zeros((len(sizes) + 1, len(sizes)), dtype=np.int64)
    for d in range(len(sizes)):
        idx[d + 1, d] = 1
    offs = arg.layout.offsets_of(idx)
    strides = [int(offs[d + 1] - offs[0]) for d in range(len(sizes))]
    want = [int(np.prod(sizes[d + 1:])) for d in range(len(sizes))]
    return strides == want
