"""sm_90's CUTLASS-style schedules: GEMMs (and forward convolutions as implicit GEMMs) from TMA copies,
transaction barriers and warpgroup MMAs.

One IR thread is a warp; warps ``4q .. 4q+3`` form warpgroup ``q``. A consumer warpgroup computes 64
rows of the group's ``tile`` of C, each of its warps 16 (``wgmma.m64nNk16``). Shared memory holds
``stages`` stages of A (BM rows of BK = 128 bytes, K-major, 128-byte swizzle) and B (a GEMM's ``K x N``
rows: BN / 64 blocks of BK rows of 64 columns, N-major; a convolution's OWHI or OHWI weights: BN rows of
BK, K-major), and per stage a *full* barrier (its copies landed) and, warp-specialized, an *empty* one (its
MMAs are done).

``schedule = "tma"`` (CUTLASS's ``KernelTma``), one tile per group::

    acc = 0;  warp 0: mbarrier.init(full[s], 1);  barrier;  warp 0: load(s, s) for the first stages
    for kt: wait full[kt % stages] (parity kt / stages % 2); wgmma x BK/16; wgmma.wait[1]   (kt-1's done)
            barrier;  warp 0: load((kt - 1) % stages, kt - 1 + stages)    (the stage they read refilled)
    wgmma.wait[0];  [relu];  each warp stores its 16 rows

``schedule = "tma_ws_cooperative"`` (``KernelTmaWarpSpecializedCooperative``), persistent::

    warp 0: init full[s] (1) and empty[s] (consumer warps);  barrier
    warpgroup 0 (setmaxnreg.dec): warp 0, for each of the group's tiles, for kt (g = its K block over the
        group's tiles, s = g % stages): wait empty[s] (parity g / stages + 1); load(s, kt)
    the others (setmaxnreg.inc): for each tile: acc = 0; for kt: wait full[s]; wgmma; wgmma.wait[1];
        release the previous block's stage (arrive on its empty barrier); then wgmma.wait[0], release the
        last stage, [relu], store

``load(s, j)``: ``mbarrier.arrive.expect_tx(full[s], bytes)`` and the ``tensor_load`` boxes of K block
``j``. The loops stay loops: the PTX has one copy of the K loop's body, whatever K is. The persistent walk
takes tiles in bands of ``swizzle`` M tiles; with ``splits`` its units are a tile's parts of K, each warp's
partial rows summed in an f32 scratch and finished by the last part (:meth:`_TmaGemm.split_epilogue`).

"store" is ``epilogue``'s: ``direct`` from registers (:func:`_epilogue`), or ``tma`` through swizzled SLM
buffers and tensor stores that drain during the next tile (:meth:`_TmaGemm.tma_epilogue`).

A convolution's A rows are its NHWC pixels: a 1x1 stride-1 one's M tile is a run of them, as a GEMM's;
any other's (a stride-1 kernel of any size and padding, a strided 1x1) is a box of output pixels, and K
block ``j`` one tap's channels, copied as a 4D box of the input shifted by the tap (:class:`_PixelTiles`).
Pixels that are no 16-byte TMA row (conv1's 3 channels) are gathered by the producer warps with plain loads
and stores instead (:class:`_Im2colRows`).
"""
from __future__ import annotations

from kdd.core.config.knobs import TMA_SCHEDULES
from kdd.core.ir.expr import BoolImm, Broadcast, Cast, Load, Ramp, as_expr, const, iif, land, var
from kdd.core.ir.funcs import (TENSOR_RANK, Barrier, Eltwise, Fence, MbarrierExpectTx, MbarrierInit, MbarrierWait, Send,
                               SendKind, SendOp, SetMaxNreg, TensorLoad, TensorStore, TensorStoreWait, Wgmma, WgmmaWait)
from kdd.core.ir.stmt import Alloc, For, FuncCall, Group, If, Let, MemKind, Store, seq
from kdd.core.ir.types import Scalar, f32, s32, u16, u32, u64
from kdd.core.layout.layout import Layout
from kdd.core.problem.post_ops import Eltwise as EltwisePostOp

from .errors import BuildError
from .kernel import Kernel, KernelArg
from .layouts import tensor_layout, vector_layout
from .origin import Origin

ROW = 128           # bytes of one swizzled SLM row, one register row of a warp
WARPGROUP = 4       # warps of a warpgroup
DEFAULT_TILE = {"m": 128, "n": 256}
INPUTS = (Scalar.F16, Scalar.BF16)
# setmaxnreg of the warp-specialized schedule: the producer keeps what issuing copies needs, the consumers
# take the rest of the registers the launch holds, at most 232 each (CUTLASS's figure for two consumer
# warpgroups: 128 x 40 + 256 x 232 = 64512 = 384 threads x 168)
PRODUCER_REGS, CONSUMER_REGS, SM_REGISTERS = 40, 232, 65536
GATHER_REGS = 96    # a gathering producer's (its loads' addresses and masks in flight)
# epilogue=tma: each consumer warp's SLM buffers of 16 rows x 128 bytes of C, stored by TMA; with two, a warp
# fills one while the store of the other drains
EPILOGUE_BUFS, EPILOGUE_ROWS = 2, 16


# The builder step and knob behind each call (the editor's IR-node links, kdd compile's line map)
_ORIGINS = {TensorLoad: Origin("hopper.copies", "stages"), MbarrierExpectTx: Origin("hopper.copies", "stages"),
            MbarrierInit: Origin("hopper.barriers", "stages"), MbarrierWait: Origin("hopper.pipeline", "stages"),
            Barrier: Origin("hopper.barriers", "stages"), Wgmma: Origin("hopper.wgmma", "tile"),
            WgmmaWait: Origin("hopper.pipeline", "stages"), SetMaxNreg: Origin("hopper.roles", "schedule"),
            Send: Origin("hopper.epilogue", "tile"), Eltwise: Origin("epilogue.post_ops", "post_ops"),
            TensorStore: Origin("hopper.epilogue", "epilogue"), TensorStoreWait: Origin("hopper.epilogue", "epilogue")}


def _call(func, args):
    return FuncCall.make(func, args, origin=_ORIGINS.get(type(func)))


def tma_tile(problem, config) -> tuple[int, int, int]:
    """``(BM, BN, BK)`` of the ``tile`` knob (``m128n256`` when empty, N the largest of 256, 128, 64 that
    divides the problem's; BK is 128 bytes of the input type, which the 128-byte swizzle fixes)."""
    t = config.tile
    bk = ROW // problem.types.src.size
    n = problem.shape.n if problem.op == "gemm" else problem.shape.oc
    # unset N: the largest that divides the problem's (N has no tails), so m64n64k64 builds by default
    default = {**DEFAULT_TILE, "n": next((b for b in (256, 128, 64) if n % b == 0), DEFAULT_TILE["n"])}
    bm, bn = (t.get(d) if d in t else default[d] for d in ("m", "n"))
    if "k" in t and t.get("k") != bk:
        raise BuildError(f"tile k must be {bk} for {problem.types.src} (128-byte swizzled rows)", knob="tile")
    return bm, bn, bk


def tma_check_shape(problem, config):
    """The check shape of a ``schedule=tma*`` kernel (a :class:`~kdd.core.problem.reduced.Reduction`): one
    tile of C over two K blocks, so that the check runs about ``REDUCED_MACS`` multiply-adds with the
    config's tile and stages; a 1x1 stride-1 convolution keeps up to 8 x 8 pixels per image and as many
    images as fill M's tile (a 7 x 7 image leaves a tail, as the full shape does); a gathered one
    (:class:`_Im2colRows`) up to 12 x 12 pixels of one image (144 rows: an M tail); another keeps its
    kernel, strides and padding, one box of output pixels (:class:`_PixelTiles`) with the tails the full
    shape has, and one K block of channels per tap (two for a 1x1 kernel). With split K (``splits``) the K
    blocks (per tap) are as many as its parts, so that every part has one. Sizes already smaller stay."""
    from dataclasses import replace

    from kdd.core.problem.reduced import Reduction

    bm, bn, bk = tma_tile(problem, config)
    s = problem.shape
    parts = config.splits or 1
    blocks = 2 if parts == 1 else parts       # K blocks (per tap: a multiple of split K's parts)
    if problem.op == "gemm":
        sizes = {"m": min(s.m, bm), "n": min(s.n, bn), "k": min(s.k, blocks * bk)}
    elif _gathered(problem):        # its kernel, strides, padding, channels; one image of about two M tiles
        o = min(s.oh, 12)
        sizes = {"mb": 1, "oh": o, "ow": o, "ih": s.ih - (s.oh - o) * s.sh, "iw": s.iw - (s.ow - o) * s.sw,
                 "oc": min(s.oc, bn)}
    elif _dense_rows(problem):      # up to 8 x 8 pixels of as many images as fill M's tile
        h, w = min(s.oh, 8), min(s.ow, 8)
        sizes = {"mb": -(-bm // (h * w)), "oh": h, "ow": w, "ih": h, "iw": w, "oc": min(s.oc, bn),
                 "ic": min(s.ic, blocks * bk)}
        sizes = {d: min(v, getattr(s, d)) for d, v in sizes.items()}
    else:                           # one box of output pixels (with its tails), the input sizes to match
        bw, bh, images = _PixelTiles(problem, bm).box
        ow, oh = (min(o, b + o % b) for o, b in ((s.ow, bw), (s.oh, bh)))
        sizes = {"mb": min(s.mb, images), "oh": oh, "ow": ow, "ih": s.ih - (s.oh - oh) * s.sh,
                 "iw": s.iw - (s.ow - ow) * s.sw, "oc": min(s.oc, bn),
                 "ic": min(s.ic, (blocks if s.kh * s.kw == 1 else parts) * bk)}     # 1x1: two K blocks at least
    changes = tuple(f"{d} {getattr(s, d)} -> {v}" for d, v in sizes.items() if getattr(s, d) != v)
    return Reduction(replace(s, **sizes), changes)


def build_tma_gemm(problem, config, target) -> Kernel:
    """The kernel IR of a GEMM ``problem`` under ``schedule = "tma"`` or ``"tma_ws_cooperative"``;
    :class:`BuildError` names the knob the schedule cannot honour."""
    g = _TmaGemm(problem, config, target)
    return g.ws_kernel() if config.schedule == "tma_ws_cooperative" else g.kernel()


class _TmaGemm:
    """What both schedules share: the checks, the arguments, the shared-memory stages and barriers, one
    stage's copies, one K block's MMAs, the accumulators and the epilogue."""

    def __init__(self, problem, config, target):
        if target.isa != "ptx":
            raise BuildError(f"schedule={config.schedule} is an sm_90 schedule, not one of {target.name}",
                             knob="schedule")
        types = problem.types
        if types.src.scalar not in INPUTS or types.wei != types.src or types.dst.scalar not in (Scalar.F32, *INPUTS):
            raise BuildError(f"schedule={config.schedule} takes f16 or bf16 inputs and an f32, f16 or bf16 "
                             f"destination, got {types}", knob="schedule")
        if any(not isinstance(p, EltwisePostOp) or p.alg != "relu" for p in problem.post_ops):
            raise BuildError(f"schedule={config.schedule} has relu as its only post-op yet", knob="post_ops")
        if config.cluster.product() != 1:
            raise BuildError("clusters larger than one group are not generated yet", knob="cluster")
        self.problem, self.config, self.target, self.types = problem, config, target, types
        self.args = tuple(KernelArg(name, var(name, u64), getattr(types, name),
                                    tensor_layout(problem, name, getattr(types, name)), problem.tensor_dims(name),
                                    "output" if name == "dst" else "input") for name in ("src", "wei", "dst"))
        wei_strides = _strides(self.args[1])
        kw_outer = wei_strides.get("kw", 0) > wei_strides.get("kh", 0)     # OWHI weights (axcb), not OHWI
        self.bm, self.bn, self.bk = bm, bn, bk = tma_tile(problem, config)
        self.gather = _Im2colRows(problem, bk, wei_strides) if _gathered(problem) else None
        if self.gather:
            if config.schedule != "tma_ws_cooperative":
                raise BuildError(f"a convolution of {problem.shape.ic}-channel pixels (not whole 16-byte TMA "
                                 "boxes) is gathered by a producer warpgroup: schedule=tma_ws_cooperative",
                                 knob="schedule")
            (self.M, self.N, self.K), strides, self.b_major = self.gather.view(problem)
        else:
            (self.M, self.N, self.K), strides, self.b_major = _gemm_view(problem, config.schedule, kw_outer)
        N, K = self.N, self.K
        conv_pixels = problem.op == "conv" and not _dense_rows(problem) and not self.gather
        self.pixels = _PixelTiles(problem, bm, kw_outer) if conv_pixels else None
        self.stages = stages = config.stages
        if bm % 64 or not 64 <= bm <= 256 or bn % 64 or not 64 <= bn <= 256:
            raise BuildError(f"tile m{bm}n{bn}: M a multiple of 64 up to 256 (a warpgroup per 64 rows), N a "
                             "multiple of 64 up to 256", knob="tile")
        channels = problem.shape.ic if self.pixels else K     # each K block one tap's channels
        if N % bn or (channels % bk and not self.gather):
            raise BuildError(f"tile n{bn}k{bk} must divide the problem's n{N} and {'ic' if self.pixels else 'k'}"
                             f"{channels} (no tails in N and K yet; M may have one)", knob="tile")
        self.esize = types.src.size
        self.a_stage, self.b_stage = bm * ROW, (bn // 64) * bk * ROW if self.b_major == "n" else bn * ROW
        # gathered: B (all of K, small) stays in shared memory, staged once; stages hold A only
        self.b_size = K // bk * self.b_stage if self.gather else stages * self.b_stage
        self.tma_store = (config.epilogue or "direct") == "tma"
        # a chunk's buffer is its index % e_bufs, the same in every tile: so e_bufs divides the chunks of a tile
        chunks = bn * types.dst.size // ROW
        self.e_bufs = EPILOGUE_BUFS if chunks % EPILOGUE_BUFS == 0 else 1
        self.e_size = WARPGROUP * (bm // 64) * self.e_bufs * EPILOGUE_ROWS * ROW if self.tma_store else 0
        self.smem = stages * self.a_stage + self.b_size + self.e_size + 2 * stages * 8
        if self.smem > target.slm.per_group:
            raise BuildError(f"{stages} stages of m{bm}n{bn}k{bk}{' and the TMA epilogue' if self.e_size else ''} "
                             f"need {self.smem} bytes of shared memory, {target.name} has {target.slm.per_group}",
                             knob="stages")
        for arg in self.args:
            if arg.layout.size_bytes() != arg.dtype.size * _count(arg.dims) or _strides(arg) != strides[arg.name]:
                raise BuildError(f"schedule={config.schedule} reads dense {_LAYOUTS[problem.op][arg.name]} tensors; "
                                 f"{arg.name} is {arg.layout.blocks_str([n for n, _ in arg.dims])}",
                                 knob=f"{arg.name}_layout")
        self.src, self.wei, self.dst = (a.var for a in self.args)
        self.a_s, self.b_s, self.e_s, self.bars, self.acc = (var(n, u64) for n in ("a_s", "b_s", "e_s", "bars", "acc"))
        self.k_iters = K // bk
        self.tiles_m = self.pixels.tiles if self.pixels else -(-self.M // bm)
        self.splits = config.splits or 1
        if self.splits > 1:
            if config.schedule != "tma_ws_cooperative" or self.gather or self.k_iters % self.splits:
                raise BuildError(f"splits={self.splits}: split K runs on schedule=tma_ws_cooperative (not gathered), "
                                 f"the parts dividing the {self.k_iters} K blocks", knob="splits")
            dst = self.args[2]
            self.scratch = KernelArg("dst_partial", var("dst_partial", u64), f32,
                                     Layout(f32, dst.layout.dims, dst.layout.blocks), dst.dims, "scratch",
                                     zero_init=True)       # C's layout with f32 elements
            slabs = self.tiles_m * (N // bn) * WARPGROUP * (bm // 64)
            self.counters = KernelArg("arrivals", var("arrivals", u64), u32, vector_layout(slabs, u32),
                                      (("slab", slabs),), "scratch", zero_init=True)
            self.args += (self.scratch, self.counters)
        self.full_count = WARPGROUP if self.gather else 1    # gathered: each producer warp arrives
        self.acc_rows = bn // 2         # f32 accumulator registers per lane: 16 rows x BN / 32 lanes

    def full(self, stage):
        """The byte of stage ``stage``'s "full" barrier (its copies landed)."""
        return stage * 8

    def empty(self, stage):
        """The byte of stage ``stage``'s "empty" barrier (its MMAs are done: it may be refilled)."""
        return (self.stages + stage) * 8

    def load(self, stage, j, mt, n0):
        """Stage ``stage`` filled with K block ``j`` of A (for M tile ``mt``) and B, counted on its full
        barrier."""
        t, bk, bar, esize = self.types, self.bk, self.full(stage), self.esize
        M, N, K = self.M, self.N, self.K
        if self.gather:             # this warp's rows of the stage, then its arrival
            return seq(self.gather.fill_a(self.src, self.a_s, stage * self.a_stage, j, mt, self.bm, self.M),
                       _call(Fence("async"), []), _call(MbarrierExpectTx(0), [self.bars, bar]))
        if self.pixels:             # the tap's pixels: a box of the input, shifted by the tap
            a_box = self.pixels.load(t.src, j, mt)
        else:
            a_box = (TensorLoad(t.src, (bk, self.bm), (K, M), (K * esize,)), (j * bk, mt * self.bm))
        calls = [_call(MbarrierExpectTx(self.a_stage + self.b_stage), [self.bars, bar]),
                 _copy(a_box, self.src, self.a_s, stage * self.a_stage, self.bars, bar)]
        if self.b_major == "k":         # B's rows are N, each of K: boxes like A's
            calls.append(_copy((TensorLoad(t.wei, (bk, self.bn), (K, N), (K * esize,)), (j * bk, n0)), self.wei,
                               self.b_s, stage * self.b_stage, self.bars, bar))
        else:                           # B's rows are K, each of N: one box per 64 columns
            calls += [_copy((TensorLoad(t.wei, (64, bk), (N, K), (N * esize,)), (n0 + b * 64, j * bk)), self.wei,
                            self.b_s, stage * self.b_stage + b * bk * ROW, self.bars, bar)
                      for b in range(self.bn // 64)]
        return seq(*calls)

    def mma(self, stage, wg, kt=None):
        """Warpgroup ``wg``'s MMAs over the K block in stage ``stage`` (K block ``kt`` of B when B is
        staged once): back to back behind one fence."""
        kk, bk = var("kk"), self.bk
        b_step = kk * 16 * (self.esize if self.b_major == "k" else ROW)
        b_block = kt if self.gather else stage
        return For.make(kk, 0, bk // 16, _call(
            Wgmma(self.bn, self.types.src, self.types.wei, f32, bk * ROW, self.b_major),
            [self.acc, 0, self.a_s, stage * self.a_stage + wg * 64 * ROW + kk * 16 * self.esize, self.b_s,
             b_block * self.b_stage + b_step]), unroll=bk // 16)

    def epilogue(self, mt, n0, wg, rank):
        """The post-ops on the accumulators, then C stored (:func:`_epilogue`)."""
        ops = [_call(Eltwise(p.alg, self.acc_rows * 32, p.alpha, p.beta), [self.acc, 0])
               for p in self.problem.post_ops]
        if self.tma_store:
            return seq(*ops, self.tma_epilogue(mt, n0, wg, rank))
        rows = self.pixels.rows(mt) if self.pixels else _GemmRows(self.M, self.bm, mt)
        return seq(*ops, _epilogue(self.dst, self.types.dst, self.acc, self.acc_rows, self.N, rows, n0, wg, rank))

    def tma_epilogue(self, mt, n0, wg, rank):
        """CUTLASS's TMA epilogue, per warp: its 16 rows of C, 128 bytes of columns (a chunk) at a time,
        written into one of its ``e_bufs`` SLM buffers (:data:`EPILOGUE_BUFS`, or 1 for an odd number of
        chunks) through the 128-byte swizzle (conflict-free: a lane's row ``l / 4`` picks the 16-byte chunk),
        then stored by a ``tensor_store`` of C as an ``N x M`` tensor, which writes nothing past M (a
        convolution's box of pixels: of the output as ``oc x ow x oh x mb``, nothing outside it written).
        Before a buffer is written again, the store that read it is waited for (:class:`TensorStoreWait`):
        the stores drain while the warp goes on, into the next tile's main loop. Accumulator register ``16 c + q`` (f32 C) or pair ``16 c + q`` (16-bit C, converted side by
        side into one word) is the word of chunk ``c`` that lane ``l`` writes at row ``l / 4 + 8 h``, column
        ``8 j + 2 (l % 4) + e``."""
        t, size = self.types.dst, self.types.dst.size
        cw = ROW // size                                # C's columns of a chunk
        lane = Ramp.make(const(0), 1, 32)
        c, q, word = var("e_chunk"), var("e_word"), var("e_packed", u64)
        warp_buf = (wg * WARPGROUP + rank) * (self.e_bufs * EPILOGUE_ROWS * ROW)
        buf = warp_buf + (c % self.e_bufs) * (EPILOGUE_ROWS * ROW)
        if size == 2:       # q = 2 j + h: the pair of columns 8 j + 2 (l % 4) + {0, 1}
            j, h, e = q // 2, q % 2, 0
        else:               # q = 4 j + 2 h + e: one column
            j, h, e = q // 4, (q // 2) % 2, q % 2
        # The word's byte in its row is (8 j + e) size + (l % 4) 2 size, two parts of disjoint bits 2-6, and
        # the 128-byte swizzle XORs the row's l / 4 into bits 4-6 (its row, l / 4 x 128, lies above): so
        # the lane's part, swizzle and row included, is one value per lane, and a word XORs its constant in
        lane_at = (lane // 4) * ROW + (((lane % 4) * (2 * size)) ^ ((lane // 4) * 16))
        at = Broadcast.make(buf + h * (8 * ROW), 32) + (Broadcast.make((j * 8 + e) * size, 32) ^ lane_at)

        def store(src, offset):
            return _call(Send(SendOp.STORE, SendKind.SCATTERED, "slm", u32, 32),
                         [self.e_s, at, src, offset, Broadcast.make(const(True), 32)])
        if size == 2:
            fill = Alloc.make(word, ROW, MemKind.GRF, seq(*(Store.make(word, half * size, Cast.make(
                t.with_lanes(32), Load.make(f32.with_lanes(32), self.acc, ((c * 16 + q) * 2 + half) * ROW)), stride=4)
                for half in (0, 1)), store(word, 0)))
        else:
            fill = store(self.acc, (c * 16 + q) * ROW)
        fill = For.make(q, 0, 16, fill)
        base = wg * 64 + rank * EPILOGUE_ROWS           # the warp's first row of the tile
        if self.pixels:     # its 16 rows: a box of the output's pixels, whose SLM rows run as the tile's
            box, corner = self.pixels.store(t, self.N, mt, base, EPILOGUE_ROWS)
        else:               # C as an N x M tensor: rows past M are not written
            box, corner = TensorStore(t, (cw, EPILOGUE_ROWS), (self.N, self.M), (self.N * size,)), \
                [mt * self.bm + wg * 64 + rank * EPILOGUE_ROWS]
        corner = [n0 + c * cw, *corner]
        return For.make(c, 0, self.bn // cw, seq(
            _call(TensorStoreWait(self.e_bufs - 1), []), fill, _call(Fence("async"), []),
            _call(box, [self.dst, *corner, *[0] * (TENSOR_RANK - len(corner)), self.e_s, buf])))

    def split_epilogue(self, tile, mt, n0, wg, rank):
        """Split K's finish, per warp (its 16 rows of a tile are a slab no other warp of its part touches):
        add the partial accumulators into the f32 scratch, count the part on the slab's counter, and the
        last part to arrive loads the sum, runs the epilogue and leaves its slab of the scratch and its
        counter zero for the next launch (self-resetting, as ``split_k.py``'s finish)."""
        rows = self.pixels.rows(mt) if self.pixels else _GemmRows(self.M, self.bm, mt)

        def partial(op):
            return _epilogue(self.scratch.var, f32, self.acc, self.acc_rows, self.N, rows, n0, wg, rank, op,
                             f"acc_{op.value}")
        arrived = var("arrived", u64)
        slab = (tile * (self.bm // 64) + wg) * WARPGROUP + rank

        def counter(op):
            return _call(Send(op, SendKind.BLOCK, "global", u32, 1),
                         [self.counters.var, slab * 4, arrived, 0, BoolImm.make(True)])
        fence = _call(Fence("global"), [])
        finish = seq(fence, partial(SendOp.LOAD), self.epilogue(mt, n0, wg, rank), self.zero_acc("acc_reset"),
                     partial(SendOp.STORE), Store.make(arrived, 0, const(0, u32)), counter(SendOp.STORE))
        return Alloc.make(arrived, ROW, MemKind.GRF, seq(
            partial(SendOp.ATOMIC_ADD), fence, Store.make(arrived, 0, const(1, u32)),
            counter(SendOp.ATOMIC_FETCH_ADD),
            If.make(Load.make(u32, arrived, 0).eq(self.splits - 1), finish)))

    def epilogue_drained(self):
        """The end of a thread that issued TMA stores: none may still read its SLM."""
        return [_call(TensorStoreWait(0), [])] if self.tma_store else []

    def zero_acc(self, name: str = "acc_row"):
        row = var(name)
        return For.make(row, 0, self.acc_rows, Store.make(self.acc, row * ROW, Broadcast.make(const(0.0, f32), 32)))

    def init_barriers(self, empty_count: int | None):
        """Warp 0 initializes the full barriers (one arrival: the expect-tx) and, with ``empty_count``, the
        empty ones; then every thread waits for that (a barrier)."""
        i = var("bar")
        inits = [_call(MbarrierInit(self.full_count), [self.bars, self.full(i)])]
        if empty_count:
            inits.append(_call(MbarrierInit(empty_count), [self.bars, self.empty(i)]))
        weights = []
        if self.gather:             # every warp stages some of B's rows, for the async proxy to read
            warps = WARPGROUP * (self.bm // 64 + 1)
            weights = [self.gather.zero(self.b_s, self.b_size, warps),
                       self.gather.fill_b(self.wei, self.b_s, self.N, warps), _call(Fence("async"), [])]
        return seq(If.make(var("thread_id0").eq(0), For.make(i, 0, self.stages, seq(*inits))),
                   *weights, _call(Barrier(), []))

    def allocate(self, body):
        body = Alloc.make(self.acc, self.acc_rows * ROW, MemKind.GRF, body)
        for buf, size in ((self.bars, 2 * self.stages * 8), (self.e_s, self.e_size), (self.b_s, self.b_size),
                          (self.a_s, self.stages * self.a_stage)):
            if size:
                body = Alloc.make(buf, size, MemKind.SLM, body)
        return body

    def kernel(self) -> Kernel:
        """``KernelTma``: every warp waits for each stage, the consumer warpgroups multiply it, and warp 0
        refills the stage the previous K block used once a barrier says every MMA reading it is done."""
        tid, n0, mt, wg, rank = var("thread_id0"), var("n0"), var("mt"), var("wg"), var("rank")
        kt, s, s_next, first = var("kt"), var("s"), var("s_next"), var("first")
        stages, k_iters = self.stages, self.k_iters
        producer = tid.eq(0)
        prologue = If.make(producer, For.make(first, 0, min(stages, k_iters), self.load(first, first, mt, n0)))
        refill = If.make(land(producer, kt.ge(1), (kt + (stages - 1)).lt(k_iters)),
                         Let.make(s_next, (kt + (stages - 1)) % stages, self.load(s_next, kt + (stages - 1), mt, n0)))
        main = For.make(kt, 0, k_iters, seq(
            Let.make(s, kt % stages, seq(_call(MbarrierWait(), [self.bars, self.full(s), (kt // stages) % 2]),
                                         self.mma(s, wg))),
            _call(WgmmaWait(1), []), _call(Barrier(), []), refill))
        body = seq(Group.make("init", seq(self.zero_acc(), self.init_barriers(None))),
                   Group.make("prologue", prologue), Group.make("k_loop", main), _call(WgmmaWait(0), []),
                   Group.make("epilogue", seq(self.epilogue(mt, n0, wg, rank), *self.epilogue_drained())))
        body = Let.make(n0, var("group_id0") * self.bn, Let.make(mt, var("group_id1"), Let.make(
            wg, tid // WARPGROUP, Let.make(rank, tid % WARPGROUP, self.allocate(body)))))
        return Kernel(Group.make("kernel", body), self.args, (self.N // self.bn, self.tiles_m, 1),
                      (WARPGROUP * self.bm // 64, 1, 1), 32, self.target.name, self.target.registers.reg_bytes,
                      self.smem, self.problem, self.config, self.config.regs, self.config.fma)

    def ws_kernel(self) -> Kernel:
        """``KernelTmaWarpSpecializedCooperative`` with a persistent tile scheduler: warpgroup 0 produces
        (one warp issues the copies, after waiting for each stage's empty barrier; registers given back
        with ``setmaxnreg``), the others consume (wait for the full barrier, multiply, arrive on the
        empty one, store C). ``min(tiles, SMs)`` groups walk the tiles ``group_id0, + groups, ...`` in
        bands of ``band`` M tiles, so that groups running together share A and B in L2."""
        tid, gid = var("thread_id0"), var("group_id0")
        tiles_m, tiles_n = self.tiles_m, self.N // self.bn
        tiles, splits = tiles_m * tiles_n, self.splits
        units = tiles * splits          # a tile's parts of K are adjacent units: they run at the same time
        groups = min(units, self.target.device.cores)
        band = self.config.swizzle or next(b for b in (8, 4, 2, 1) if tiles_m % b == 0)
        if tiles_m % band:
            raise BuildError(f"swizzle={band} must divide the {tiles_m} M tiles", knob="swizzle")
        consumers = self.bm // 64
        stages, k_iters = self.stages, self.k_iters // splits      # K blocks of a unit
        def role(name):
            """The loop variables of one role (each branch binds its own: no variable is bound twice)."""
            return (var(f"{name}_{n}") for n in ("it", "tile", "mt", "n0", "kt", "g", "s", "unit", "part", "j"))

        def per_tile(names, body):
            """``body`` for each of this group's units (a tile and a part of its K), ``mt`` its M tile,
            ``n0`` its first column, ``it`` its index here."""
            it, tile, mt, n0, unit, part = *names[:4], names[7], names[8]
            within = tile % (band * tiles_n)
            m_tile = (tile // (band * tiles_n)) * band + within % band
            body = Let.make(mt, m_tile, Let.make(n0, (within // band) * self.bn, body))
            if splits > 1:
                body = Let.make(tile, unit // splits, Let.make(part, unit % splits, body))
            else:
                unit = tile
            return For.make(it, 0, -(-units // groups), Let.make(unit, it * groups + gid, If.make(
                unit.lt(units), body)))

        def k_block(names, body):
            """``body`` for each K block of the unit, ``g`` its index over the group's units, ``s`` its stage,
            ``j`` the K block."""
            it, kt, g, s, part, j = names[0], *names[4:7], names[8], names[9]
            body = Let.make(j, part * k_iters + kt, body) if splits > 1 else body
            return For.make(kt, 0, k_iters, Let.make(g, it * k_iters + kt, Let.make(s, g % stages, body)))

        p = tuple(role("p"))
        produce = per_tile(p, k_block(p, seq(
            _call(MbarrierWait(), [self.bars, self.empty(p[6]), (p[5] // stages + 1) % 2]),
            self.load(p[6], p[9] if splits > 1 else p[4], p[2], p[3]))))
        c = tuple(role("c"))
        it, tile, mt, n0, kt, g, s = c[:7]
        wg, rank, last = var("wg"), var("rank"), var("c_last")

        def release(block):      # the MMAs of K block ``block`` are done: its stage may be refilled
            return _call(MbarrierExpectTx(0), [self.bars, self.empty(block % stages)])
        consume = per_tile(c, seq(self.zero_acc(), k_block(c, seq(
            _call(MbarrierWait(), [self.bars, self.full(s), (g // stages) % 2]),
            self.mma(s, wg, c[9] if splits > 1 else kt), _call(WgmmaWait(1), []),
            If.make(kt.ge(1), release(g + (stages - 1))))),
            _call(WgmmaWait(0), []),
            Let.make(last, it * k_iters + (k_iters - 1), release(last)),
            self.split_epilogue(tile, mt, n0, wg, rank) if splits > 1 else self.epilogue(mt, n0, wg, rank)))
        producer_regs = GATHER_REGS if self.gather else PRODUCER_REGS
        # setmaxnreg.inc takes only what the CTA's warps gave back: the registers of the launch (its cap per
        # thread at entry, PtxLowering's), not the SM's, bound what the consumers may take
        threads = 128 * (consumers + 1)
        launched = (min(255, SM_REGISTERS // threads) & ~7) * threads
        consumer_regs = min(CONSUMER_REGS, (launched - 128 * producer_regs) // (128 * consumers) & ~7)
        body = seq(Group.make("init", self.init_barriers(WARPGROUP * consumers)), If.make(
            tid.lt(WARPGROUP),
            seq(_call(SetMaxNreg(producer_regs), []),
                Group.make("producer", produce if self.gather else If.make(tid.eq(0), produce))),
            seq(_call(SetMaxNreg(consumer_regs), []), Group.make("consumer", Let.make(
                wg, tid // WARPGROUP - 1, Let.make(rank, tid % WARPGROUP, seq(consume, *self.epilogue_drained())))))))
        return Kernel(Group.make("kernel", self.allocate(body)), self.args, (groups, 1, 1),
                      (WARPGROUP * (consumers + 1), 1, 1), 32, self.target.name, self.target.registers.reg_bytes,
                      self.smem, self.problem, self.config, self.config.regs, self.config.fma)


def _copy(box, mem, slm, slm_offset, bars, bar):
    """The ``tensor_load`` of ``box`` (a :class:`TensorLoad` and its corner) into ``slm + slm_offset``."""
    f, corner = box
    return _call(f, [mem, *corner, *[0] * (TENSOR_RANK - len(corner)), slm, slm_offset, bars, bar])


class _GemmRows:
    """A GEMM's M tile ``mt``: tile row ``r`` is C's row ``mt * BM + r``; past ``M`` (a tail, which TMA
    read as zeros) it is not stored."""

    def __init__(self, M: int, bm: int, mt):
        self.M, self.bm, self.mt = M, bm, mt

    def at(self, base):
        """C's row of tile row ``base`` (a multiple of 8; a lane's 8 rows follow it) and the mask of the
        lanes' rows ``base + lane / 4`` to store (None: all)."""
        row = self.mt * self.bm + base
        lanes = Broadcast.make(row, 32) + Ramp.make(const(0), 1, 32) // 4
        return row, lanes.lt(Broadcast.make(const(self.M), 32)) if self.M % self.bm else None


class _PixelTiles:
    """A convolution's M tiles as boxes of output pixels: ``bw x bh`` pixels of ``bn`` images (powers of
    two, ``bw >= 8``, ``bw * bh * bn = BM``), chosen to pad the output's ``ow x oh x mb`` least; tile row
    ``r`` is pixel ``(r % bw, r / bw % bh, r / (bw bh))`` of the box. The input is read as a tensor of
    ``(ic, ceil(iw / sw), ceil(ih / sh), mb)`` whose W and H strides are the stride's multiple of the
    pixel's and the row's (a strided 1x1 convolution's subsample is the view itself); K block ``j`` is
    tap ``j / (ic / BK)`` (in the weights' order: ``kh`` outer for OHWI, ``kw`` for OWHI) and its channels,
    the box at the output tile's corner shifted by ``(kw - pw, kh - ph)``, where the tensor's zero fill
    outside it is the padding."""

    def __init__(self, problem, bm: int, kw_outer: bool = False):
        s = problem.shape
        self.s, self.bm, self.kw_outer = s, bm, kw_outer

        def padded(box):
            bw, bh, bn = box
            return -(-s.ow // bw) * bw * -(-s.oh // bh) * bh * -(-s.mb // bn) * bn
        boxes = [(bw, bh, bm // (bw * bh)) for bw in (8, 16, 32, 64, 128, 256) for bh in (1, 2, 4, 8, 16, 32, 64)
                 if bm % (bw * bh) == 0]
        self.box = bw, bh, bn = min(boxes, key=lambda b: (padded(b), -b[0], -b[1]))   # then the widest, tallest
        self.tw, self.th = -(-s.ow // bw), -(-s.oh // bh)
        self.tiles = self.tw * self.th * -(-s.mb // bn)
        size = problem.types.src.size
        self.dims = (s.ic, -(-s.iw // s.sw), -(-s.ih // s.sh), s.mb)
        self.strides = (s.sw * s.ic * size, s.sh * s.iw * s.ic * size, s.ih * s.iw * s.ic * size)

    def corner(self, mt):
        """The output pixel ``(ow, oh, mb)`` at tile ``mt``'s corner."""
        bw, bh, bn = self.box
        return (mt % self.tw) * bw, (mt // self.tw) % self.th * bh, mt // (self.tw * self.th) * bn

    def load(self, t, j, mt):
        """The box of K block ``j`` of tile ``mt``: a :class:`TensorLoad` and its corner."""
        s, bk = self.s, ROW // t.size
        per_tap = s.ic // bk
        ow0, oh0, n0 = self.corner(mt)
        tap = j // per_tap
        kh, kw = (tap % s.kh, tap // s.kh) if self.kw_outer else (tap // s.kw, tap % s.kw)
        corner = ((j % per_tap) * bk, ow0 + kw - s.pw, oh0 + kh - s.ph, n0)
        return TensorLoad(t, (bk, *self.box), self.dims, self.strides), corner

    def rows(self, mt):
        return _PixelRows(self, mt)

    def store(self, t, N: int, mt, base, rows: int):
        """The ``tensor_store`` of tile ``mt``'s rows ``base .. base + rows`` (``rows`` a power of two, ``base``
        a multiple) into the ``N``-channel NHWC output, and its corner past the channel: those rows are a
        box of pixels (a line's ``min(bw, rows)``, then lines, then images) in the tile's row order, and the
        tensor store leaves the pixels outside the output unwritten."""
        s, (bw, bh, images) = self.s, self.box
        w = min(bw, rows)
        h = min(bh, rows // w)
        ow0, oh0, n0 = self.corner(mt)
        size = t.size
        box = TensorStore(t, (ROW // size, w, h, rows // (w * h)), (N, s.ow, s.oh, s.mb),
                          (N * size, s.ow * N * size, s.oh * s.ow * N * size))
        return box, [ow0 + base % bw, oh0 + (base // bw) % bh, n0 + base // (bw * bh)]


class _PixelRows:
    """C's rows of a tile of :class:`_PixelTiles`: the NHWC pixel of each tile row, stored where it is
    inside the output."""

    def __init__(self, tiles: _PixelTiles, mt):
        self.t, self.mt = tiles, mt

    def at(self, base):
        """As :meth:`_GemmRows.at`; ``bw >= 8`` keeps a lane's 8 rows on one line of pixels."""
        s, (bw, bh, images) = self.t.s, self.t.box
        ow0, oh0, n0 = self.t.corner(self.mt)
        n, oh, ow = n0 + base // (bw * bh), oh0 + (base // bw) % bh, ow0 + base % bw
        checks = []
        if s.ow % bw:
            lanes = Broadcast.make(ow, 32) + Ramp.make(const(0), 1, 32) // 4
            checks.append(lanes.lt(Broadcast.make(const(s.ow), 32)))
        scalar = [c for c, tail in ((oh.lt(s.oh), s.oh % bh), (n.lt(s.mb), s.mb % images)) if tail]
        if scalar:
            checks.append(Broadcast.make(land(*scalar) if len(scalar) > 1 else scalar[0], 32))
        return (n * s.oh + oh) * s.ow + ow, (land(*checks) if len(checks) > 1 else checks[0]) if checks else None


def _epilogue(dst, out_type, acc, acc_rows: int, N: int, rows, n0, wg, rank, op: SendOp = SendOp.STORE,
              name: str = "acc_pair"):
    """Each warp's 16 rows of C: register pair ``(i, i + 1)`` (``i = 2 p``) holds, in lane ``l``, tile row
    ``l / 4 + 8 * (p % 2)`` and columns ``8 * (p / 2) + 2 * (l % 4)`` and the next one. An f32 C is
    stored a register at a time; a 16-bit C converts the pair side by side into one word per lane
    (``packed``) and stores that. ``rows`` (:class:`_GemmRows`, :class:`_PixelRows`) says which row of C
    each tile row is and which are stored. An f32 ``dst`` may take another ``op`` (split K's scratch:
    added into, loaded back; ``name`` its loop's variable, each loop its own)."""
    pair = var(name)
    lane = Ramp.make(const(0), 1, 32)
    size = out_type.size
    row, inside = rows.at(wg * 64 + rank * 16 + (pair % 2) * 8)
    mask = inside if inside is not None else Broadcast.make(const(True), 32)
    pattern = (lane // 4) * (N * size) + (lane % 4) * (2 * size)

    def at(half):
        return Broadcast.make((row * N + n0 + (pair // 2) * 8 + half) * size, 32) + pattern
    if size == 4:
        stores = seq(*(_call(Send(op, SendKind.SCATTERED, "global", f32, 32),
                                     [dst, at(half), acc, (pair * 2 + half) * ROW, mask]) for half in (0, 1)))
    else:
        packed = var("packed", u64)
        halves = [Store.make(packed, half * size, Cast.make(out_type.with_lanes(32), Load.make(
            f32.with_lanes(32), acc, (pair * 2 + half) * ROW)), stride=4) for half in (0, 1)]
        stores = Alloc.make(packed, ROW, MemKind.GRF, seq(*halves, _call(
            Send(SendOp.STORE, SendKind.SCATTERED, "global", u32, 32), [dst, at(0), packed, 0, mask])))
    # over pairs, not over even registers: a loop of step 1 keeps its index's range exact for the verifier
    return For.make(pair, 0, acc_rows // 2, stores)


def _count(dims) -> int:
    n = 1
    for _, size in dims:
        n *= size
    return n


_LAYOUTS = {"gemm": {"src": "M x K", "wei": "K x N", "dst": "M x N"},
            "conv": {"src": "NHWC (axb)", "wei": "OWHI (axcb) or OHWI (acdb)", "dst": "NHWC (axb)"}}


def _gemm_view(problem, schedule: str, kw_outer: bool = False):
    """``(M, N, K)``, the element strides each tensor's dims must have (dims of size 1 left out), and how
    B's rows run (``"n"``: K rows of N, a GEMM's; ``"k"``: N rows of K, a convolution's OHWI weights, or
    OWHI with ``kw_outer``).
    A convolution is an implicit GEMM where NHWC pixels are A's rows and K runs over the taps, each a
    block of input channels (:class:`_PixelTiles`)."""
    if problem.op == "gemm":
        s = problem.shape
        if s.batch and any(b != 1 for b in s.batch):
            raise BuildError(f"schedule={schedule} has no batch dims yet", knob="schedule")
        M, N, K = s.m, s.n, s.k
        strides = {"src": {"m": K, "k": 1}, "wei": {"k": N, "n": 1}, "dst": {"m": N, "n": 1}}
        return (M, N, K), _sized(problem, strides), "n"
    s = problem.shape
    if (problem.prop != "fwd" or s.g != 1 or (s.id, s.od, s.kd) != (1, 1, 1) or (s.dh, s.dw) != (0, 0)
            or any(st != 1 and (k, p) != (1, 0) for st, k, p in ((s.sh, s.kh, s.ph), (s.sw, s.kw, s.pw)))):
        raise BuildError(f"schedule={schedule} generates forward 2D convolutions without groups or dilation, "
                         "of stride 1 (any kernel and padding) or strided 1x1 without padding (an implicit "
                         "GEMM whose A rows are NHWC pixels) yet; others: schedule=classic", knob="schedule")
    hw = s.ih * s.iw
    strides = {"src": {"mb": hw * s.ic, "ih": s.iw * s.ic, "iw": s.ic, "ic": 1},
               "wei": {"oc": s.kh * s.kw * s.ic, "kh": s.ic if kw_outer else s.kw * s.ic,
                       "kw": s.kh * s.ic if kw_outer else s.ic, "ic": 1},
               "dst": {"mb": s.oh * s.ow * s.oc, "oh": s.ow * s.oc, "ow": s.oc, "oc": 1}}
    return (s.mb * s.oh * s.ow, s.oc, s.kh * s.kw * s.ic), _sized(problem, strides), "k"


def _gathered(problem) -> bool:
    """Whether a convolution's pixels are no whole 16-byte TMA box row (conv1's 3 f16 channels): its A
    is then gathered by the producer warps (:class:`_Im2colRows`)."""
    s = problem.shape
    return problem.op == "conv" and s.ic * problem.types.src.size % 16 != 0


class _Im2colRows:
    """A convolution's implicit GEMM gathered by generic loads: A's row ``m`` is output pixel ``m`` (NHWC
    order) and K block ``j`` holds kernel rows ``kh = j * per + r`` (``r < per``), each the ``kw x ic``
    contiguous 16-bit elements (a *run*) of one input row, at column ``starts[r]`` (conv1: runs of 21 at
    columns 1, 22, 43 of 64, K = 147 in 3 blocks of 64). B's row ``oc`` holds the weights in the same
    order; the columns no run covers are zero in both.

    Each producer thread fills whole rows of a stage (lane ``l`` of warp ``w``: row ``32 w + l``, then
    ``+ 128``): per run, the aligned 32-bit words that hold it (from the even element at or before its
    first), each one load masked to the input row (zeros outside: the padding, and for kernel rows past
    ``KH`` or pixels past ``M``); then the row's 128 bytes assembled from those words in registers (a
    word as it is, or two halves of neighbours shifted together) and stored as eight 16-byte chunks into
    the 128-byte swizzle ``wgmma`` reads (chunk ``c`` of row ``l`` at chunk ``c ^ l % 8``). Runs start
    at columns of their first element's parity (the same for every pixel: ``ic * iw`` and ``ic * sw``
    even), so that most words need no shift."""

    def __init__(self, problem, bk: int, wei_strides: dict):
        s = problem.shape
        if problem.prop != "fwd" or s.g != 1 or (s.id, s.od, s.kd) != (1, 1, 1) or (s.dh, s.dw) != (0, 0):
            raise BuildError("a gathered convolution is forward 2D, without groups or dilation", knob="schedule")
        self.s, self.bk, self.size = s, bk, problem.types.src.size
        self.run = s.kw * s.ic
        if self.run > 32:
            raise BuildError(f"a kernel row of kw{s.kw} x ic{s.ic} elements must fit one gather of 32 lanes",
                             knob="schedule")
        # the parity of a run's first element in the input, one for every pixel when the steps between pixels
        # (ic * sw elements) and rows (ic * iw) are even: input rows are then whole 32-bit words
        if (s.ic * s.sw) % 2 or (s.ic * s.iw) % 2:
            raise BuildError(f"a gathered convolution reads input rows as 32-bit words: ic{s.ic} x iw{s.iw} and "
                             f"ic{s.ic} x sw{s.sw} must be even", knob="schedule")
        self.parity = first = (-s.pw * s.ic) % 2
        self.per = (bk - first) // self.run
        self.starts = [first + r * self.run for r in range(self.per)]
        self.words = self.run // 2 + 1        # 32-bit words over a run, from the even element before it
        self.blocks = -(-s.kh // self.per)
        self.wei_strides = {d: wei_strides.get(d, 0) for d in ("oc", "kh", "kw", "ic")}

    def view(self, problem):
        """``(M, N, K)``, the dense strides of the tensors, B's rows (``"k"``: N rows of K)."""
        s = self.s
        strides = {"src": {"mb": s.ih * s.iw * s.ic, "ih": s.iw * s.ic, "iw": s.ic, "ic": 1},
                   "wei": self.wei_strides,
                   "dst": {"mb": s.oh * s.ow * s.oc, "oh": s.ow * s.oc, "ow": s.oc, "oc": 1}}
        return (s.mb * s.oh * s.ow, s.oc, self.blocks * self.bk), _sized(problem, strides), "k"

    def _word(self, words, q: int):
        """Word ``q`` of an A row (columns ``2q``, ``2q + 1``) from the loaded words of its runs: element
        ``e`` of run ``r`` is half ``(e + parity) % 2`` of word ``(e + parity) / 2`` of that run."""
        halves = []
        for col in (2 * q, 2 * q + 1):
            r = next((r for r, c in enumerate(self.starts) if c <= col < c + self.run), None)
            h = None if r is None else col - self.starts[r] + self.parity
            halves.append(None if h is None else (r * self.words + h // 2, h % 2))
        (lo, hi) = halves

        def w(k):
            return Load.make(u32.with_lanes(32), words, k * ROW)
        if lo is not None and hi is not None and lo == (hi[0], 0) and hi[1] == 1:
            return w(lo[0])             # the word as it lies
        parts = []
        if lo is not None:
            parts.append(w(lo[0]) >> 16 if lo[1] else w(lo[0]) & 0xFFFF)
        if hi is not None:
            parts.append(w(hi[0]) << 16 if hi[1] == 0 else w(hi[0]) & 0xFFFF0000)
        if not parts:
            return Broadcast.make(const(0, u32), 32)
        return parts[0] | parts[1] if len(parts) == 2 else parts[0]

    def fill_a(self, src, slm, offset, j, mt, bm: int, M: int):
        """This producer thread's rows of K block ``j`` of M tile ``mt`` (its lane's, every 128th). The
        lane's values are kept in register rows (``g_lane``: its pixel, then per run its first word's byte
        in the input and in the input row, past the row where the run is all zeros), so that each word's
        load is an immediate offset from one address and one unsigned compare."""
        s, size, threads = self.s, self.size, 32 * WARPGROUP
        i, words, chunk, lane_vals = var("g_pass"), var("g_words", u64), var("g_chunk", u64), var("g_lane", u64)
        lane = Ramp.make(const(0), 1, 32)
        row = Broadcast.make(i * threads + var("thread_id0") * 32, 32) + lane
        m = Broadcast.make(mt * bm, 32) + row

        def kept(k):                # register row k of the lane's values
            return Load.make(s32.with_lanes(32), lane_vals, k * ROW)
        ow, oh, n = kept(0), kept(1), kept(2)
        row_bytes = s.iw * s.ic * size
        far = 1 << 30               # a first word's byte no word of the row has
        # the first word's byte in its input row: the run's first element less the parity (an even element)
        at = ((ow * s.sw - s.pw) * s.ic - self.parity) * size
        lets = [Store.make(lane_vals, 0, m % s.ow), Store.make(lane_vals, ROW, (m // s.ow) % s.oh),
                Store.make(lane_vals, 2 * ROW, m // (s.ow * s.oh))]
        loads = []
        for r in range(self.per):
            kh = j * self.per + r
            ih = oh * s.sh + Broadcast.make(kh - s.ph, 32)
            inside = land(m.lt(M), ih.ge(0), ih.lt(s.ih), Broadcast.make(kh.lt(s.kh), 32),
                          *([row.lt(bm)] if bm % threads else []))
            lets += [Store.make(lane_vals, (3 + 2 * r) * ROW, (n * s.ih + ih) * row_bytes + at),
                     Store.make(lane_vals, (4 + 2 * r) * ROW, iif(inside, at, Broadcast.make(const(far), 32)))]
            for k in range(self.words):
                reg = (r * self.words + k) * ROW
                mask = Cast.make(u32.with_lanes(32), kept(4 + 2 * r) + 4 * k).lt(row_bytes)
                loads += [Store.make(words, reg, Broadcast.make(const(0, u32), 32)),
                          _call(Send(SendOp.LOAD, SendKind.SCATTERED, "global", u32, 32),
                                [src, kept(3 + 2 * r) + 4 * k, words, reg, mask])]
        stores = []
        slm_row = Broadcast.make(as_expr(offset), 32) + row * ROW
        for c in range(ROW // 16):
            stores += [Store.make(chunk, v * ROW, self._word(words, 4 * c + v)) for v in range(4)]
            stores.append(_call(Send(SendOp.STORE, SendKind.SCATTERED, "slm", u32, 128, vec=4),
                                [slm, slm_row + ((lane % 8) ^ c) * 16, chunk, 0,
                                 row.lt(bm) if bm % threads else Broadcast.make(const(True), 32)]))
        body = seq(*lets, *loads, *stores)
        for buf, rows in ((chunk, 4), (words, self.per * self.words), (lane_vals, 3 + 2 * self.per)):
            body = Alloc.make(buf, rows * ROW, MemKind.GRF, body)
        passes = -(-bm // threads)
        return For.make(i, 0, passes, body, unroll=passes)

    def fill_b(self, wei, slm, N: int, warps: int):
        """B's rows (each K block's ``oc``), ``warps`` warps each taking every ``warps``-th row: per kernel
        row one masked 32-lane gather of its run (lane ``e`` its element) and one ``st.shared`` of it."""
        s, st, size = self.s, self.wei_strides, self.size
        i, rows, o, j = var("w_row"), self.blocks * N, var("w_oc"), var("w_block")
        row = i * warps + var("thread_id0")
        e = Ramp.make(const(0), 1, 32)
        in_run = e.lt(self.run)
        runs = []
        for r in range(self.per):
            kh = j * self.per + r
            gaddr = (Broadcast.make(o * st["oc"] + kh * st["kh"], 32) + (e // s.ic) * st["kw"]
                     + (e % s.ic) * st["ic"]) * size
            slm_at = Broadcast.make(row * ROW, 32) + (((e + self.starts[r]) * size) ^ ((row % 8) * 16))
            reg = var(f"g_b{r}", u64)
            runs.append(If.make(kh.lt(s.kh), Alloc.make(reg, 32 * size, MemKind.GRF, seq(
                Store.make(reg, 0, Broadcast.make(const(0, u16), 32)),
                _call(Send(SendOp.LOAD, SendKind.SCATTERED, "global", u16, 32), [wei, gaddr, reg, 0, in_run]),
                _call(Send(SendOp.STORE, SendKind.SCATTERED, "slm", u16, 32), [slm, slm_at, reg, 0, in_run])))))
        return For.make(i, 0, -(-rows // warps), If.make(row.lt(rows), Let.make(j, row // N, Let.make(
            o, row % N, seq(*runs)))))

    def zero(self, slm, size: int, warps: int):
        """Every word of ``slm``'s ``size`` bytes zero, ``warps`` warps each taking every ``warps``-th line."""
        i, lane = var(f"z_{slm.name}"), Ramp.make(const(0), 1, 32)
        at = (i * warps + var("thread_id0")) * ROW
        reg = var(f"z_{slm.name}_reg", u64)
        lines = size // ROW
        return Alloc.make(reg, ROW, MemKind.GRF, seq(
            Store.make(reg, 0, Broadcast.make(const(0, u32), 32)),
            For.make(i, 0, -(-lines // warps), If.make((i * warps + var("thread_id0")).lt(lines), _call(
                Send(SendOp.STORE, SendKind.SCATTERED, "slm", u32, 32),
                [slm, Broadcast.make(at, 32) + lane * 4, reg, 0, Broadcast.make(const(True), 32)])))))


def _dense_rows(problem) -> bool:
    """Whether a convolution's A rows are its input's NHWC pixels as they lie (1x1, stride 1, no padding):
    an M tile is then a run of rows, as a GEMM's."""
    s = problem.shape
    return (s.kh, s.kw, s.sh, s.sw, s.ph, s.pw) == (1, 1, 1, 1, 0, 0)


def _sized(problem, strides: dict) -> dict:
    """``strides`` without the dims of size 1 (their stride is free)."""
    return {t: {d: v for d, v in by_dim.items() if dict(problem.tensor_dims(t)).get(d, 1) > 1}
            for t, by_dim in strides.items()}


def _strides(arg: KernelArg) -> dict[str, int]:
    """The element stride of each dim of size > 1 of ``arg``'s layout."""
    import numpy as np

    sizes = [s for _, s in arg.dims]
    idx = np.zeros((len(sizes) + 1, len(sizes)), dtype=np.int64)
    for d in range(len(sizes)):
        idx[d + 1, d] = 1
    offs = arg.layout.offsets_of(idx)
    return {name: int(offs[d + 1] - offs[0]) for d, (name, size) in enumerate(arg.dims) if size > 1}
