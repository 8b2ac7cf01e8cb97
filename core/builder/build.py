"""``build_kernel``: problem + resolved config + target -> kernel IR skeleton (seed 000's builder).

The kernel, top to bottom::

    kernel {
      lets: grid and thread indices unpacked, tile origins          (loop_nest)
      alloc: C accumulator, A/B operand tiles, SLM stages            (fma, slm)
      init_c { c_acc = 0 [; bias_acc = 0] }
      k_loop { for K loops: [SLM stage, barriers]; loads [+ reorders] [+ bias sums]; FMA calls }
      [k_slices { partial C tiles of the group's K slices added through SLM }]  (k_slices)
      epilogue { [partial sums into f32 scratch, count; if last:] convert, post-ops, convert, stores
                 [; bias store] }                                  (split_k, epilogue, bias_grad)
    }

The bracketed bias steps are bwd_w's bias gradient (``bias_grad``).
"""
from __future__ import annotations

from dataclasses import dataclass
from math import inf, prod
from typing import TYPE_CHECKING, NamedTuple

from kdd.core.config.budget import estimate_budget
from kdd.core.config.decompress import Decompress
from kdd.core.config.defaults import resolve_config
from kdd.core.config.kernel_config import KernelConfig
from kdd.core.config.knobs import TMA_SCHEDULES
from kdd.core.config.operands import operands
from kdd.core.config.tiling import derive_tiling, mad_over_batch
from kdd.core.ir import operators
from kdd.core.ir.expr import Expr, Var, var
from kdd.core.ir.funcs import Barrier, Reorder, SendKind, SendOp
from kdd.core.ir.names import Names
from kdd.core.ir.stmt import Alloc, For, FuncCall, Group, If, Let, MemKind, Stmt, seq
from kdd.core.ir.types import Type, u64
from kdd.core.layout.layout import Layout
from kdd.core.layout.view import View
from kdd.core.layout.view_conv import conv_views
from kdd.core.layout.view_gemm import gemm_views
from kdd.core.problem.post_ops import Bias, Sum, post_op_arg_name
from kdd.core.targets import Target, get_target

from . import arith
from .elementwise import fill
from .epilogue import Epilogue, EpilogueContext, PostOpArg
from .errors import BuildError
from .fma import make_fma
from .k_slices import ORIGIN as K_SLICES_ORIGIN
from .k_slices import k_slices
from .kernel import Kernel, KernelArg
from .lanes import flat_lanes, lanes_attrs
from .layouts import fma_blocking, tensor_layout, vector_layout
from .loads import (MessageRules, TransferPlan, contiguous_role, inner_last, load_block2d, memory_ordered,
                    MessagePlan, plan_block2d, plan_messages, real_rows, transfer, unit_stride_dim, unread_dims,
                    vector_gather, whole_dims)
from .loop_nest import GROUP_IDS, THREAD_IDS, LoopNest, build_loop_nest
from .loops import nest
from .origin import Origin
from .slm import SLM_BLOCK_GRAIN, SlmStage, read_tile, slm_barrier, stage, subtile_chunks
from .split_k import ORIGIN as ORIGIN_SPLIT_K
from .split_k import SplitFinish, needs_finish
from .tile import MatrixDim, RegTensor, TileAccess, row_major

if TYPE_CHECKING:  # loaded by the problems that have them: bwd_w's bias gradient, weight decompression
    from .bias_grad import BiasGradient
    from .decompress import Decompressor

# Matrix dims of each operand, by GEMM role of the view dims flattened into them.
ROLES = {"A": ("b", "m", "k"), "B": ("b", "k", "n"), "C": ("b", "m", "n")}


def build_kernel(problem, config: KernelConfig | None, target: Target | str) -> Kernel:
    """The kernel IR of ``problem`` under ``config`` (unset knobs resolved by the defaults) on ``target``.

    Raises :class:`BuildError` when the config asks for something the
    builder cannot generate; the message names the knob.
    """
    target = get_target(target) if isinstance(target, str) else target
    config = config or KernelConfig()
    if not config.is_complete:
        config = resolve_config(problem, target, config)
    if config.schedule in TMA_SCHEDULES:
        from .hopper import build_tma_gemm      # noqa: PLC0415 - its schedule's module, when asked for
        return build_tma_gemm(problem, config, target)
    return _Builder(problem, config, target).build()


@dataclass(frozen=True)
class _Operand:
    """A GEMM operand: its view, global buffer, and matrix roles per thread and per group."""

    view: View
    mem: Var
    roles: tuple[MatrixDim, MatrixDim, MatrixDim]
    group_roles: tuple[MatrixDim, MatrixDim, MatrixDim]


class _Tiles(NamedTuple):
    """The FMA of a thread and its register tiles: the thread tile's batch extent and M, N, K padded to the
    FMA's unit, the sub-tiles of A (``ms`` rows each) or B (``ns`` columns), A's contiguous role."""

    fma: object
    bt: int
    mp: int
    np_: int
    kp: int
    ms: int
    ns: int
    sub_a: int
    sub_b: int
    a_inner: int
    c_reg: RegTensor
    a_reg: RegTensor
    b_reg: RegTensor


class _Builder:
    def __init__(self, problem, config: KernelConfig, target: Target):
        self.problem, self.config, self.target = problem, config, target
        self.tiling = derive_tiling(problem, config)
        self.ops = operands(problem, config)
        self.names = Names(GROUP_IDS + THREAD_IDS + ("src", "wei", "dst"))
        self.reg_bytes = target.registers.reg_bytes
        self.per_lane = target.lanes.fixed is not None
        self.rules = MessageRules(config.simd, target.max_message_bytes,
                                  fill_lanes=0 if self.per_lane else max(config.simd, target.lanes.alu),
                                  vectors=target.messages.vectors,
                                  vector_lanes=0 if self.per_lane else self.reg_bytes // 4,
                                  vector_max_lanes=min(target.messages.scattered_lanes,
                                                       max(config.simd, target.lanes.alu)),
                                  merged_runs=not self.per_lane)
        self.types = {name: getattr(problem.types, name) for name in ("src", "wei", "dst")}
        blocking = fma_blocking(config.fma, target, problem)
        self.layouts = {name: tensor_layout(problem, name, t, blocking) for name, t in self.types.items()}
        self.transposed_n = 0  # the thread tile's N where dpas takes its transposed form (``_transposed``)
        self.bounded = frozenset(d.name for d in self.tiling.dims if d.padded > d.size)
        self.allocs: list[tuple[RegTensor, Origin]] = []

    # -- helpers ---------------------------------------------------------------------------------
    def _roles(self, which: str, group: bool, a_view) -> tuple[MatrixDim, MatrixDim, MatrixDim]:
        def extent(d):
            return d.iter * d.tg if group else d.iter
        return tuple(MatrixDim(tuple((d.name, extent(d)) for d in self._role_dims(r, a_view))) for r in ROLES[which])

    def _role_dims(self, role: str, a_view):
        """The tiling's dims of GEMM role ``role``, inner last. K's order is the kernel's own (A and B
        flatten it alike): the dim A's memory walks with unit stride goes innermost where the thread tile
        holds several K dims (``ic8kw4``: a pixel's 8 channels, one run of 16 bytes, rather than 4 taps
        of one channel 512 bytes apart), and that dim has no padding (``ic3`` padded to 4 masks its
        channels one by one either way)."""
        dims = self.tiling.role(role)
        if role == "m" and self._staged("A"):
            return self._threads_outer_m(dims, a_view)
        if role != "k" or sum(d.iter > 1 for d in dims) < 2:
            return dims
        unit = [d for d in dims if d.iter > 1 and d.padded == d.size and unit_stride_dim(a_view, d.name) is not None]
        return dims if not unit else tuple(d for d in dims if d is not unit[0]) + (unit[0],)

    def _threads_outer_m(self, dims, a_view):
        """M's dims with those the group's threads split outermost, where A is staged in SLM and no M dim
        walks A's memory with unit stride: the order ``slm._threads_outer`` gives the group tile, so that
        the thread tiles lie one after another in the group's M (``mb2 ow8`` under 4 threads along
        ``ow``: ``ow`` then ``mb``) and SLM can hold them FMA-ready (``slm._fma_ready``), each read
        with whole-register block messages."""
        if any(unit_stride_dim(a_view, d.name) is not None for d in dims if d.iter * d.tg > 1):
            return dims
        return tuple(d for d in dims if d.tg > 1) + tuple(d for d in dims if d.tg == 1)

    def _grf(self, nbytes: int) -> int:
        return max(self.reg_bytes, -(-nbytes // self.reg_bytes) * self.reg_bytes)

    def _lanes(self, reg: RegTensor) -> tuple:
        return lanes_attrs(reg, self.reg_bytes) if self.per_lane else ()

    def _access(self, op: _Operand, starts: dict, base=(0, 0, 0)) -> TileAccess:
        return TileAccess(op.view, op.mem, "global", op.roles, {d.name: starts[d.name] for d in op.view.dims},
                          self.bounded, self.nest.facts, base)

    # -- the kernel ----------------------------------------------------------------------------
    def build(self) -> Kernel:
        p, cfg, t, names = self.problem, self.config, self.tiling, self.names
        self.nest = build_loop_nest(t, names, cfg.unroll)
        operand = self._operands()
        self.transposed_n = self._transposed(operand)
        if self.transposed_n:  # B's memory packed as the transposed form reads it, where B is ``any`` weights
            blocking = fma_blocking(cfg.fma, self.target, p, transposed=True)
            self.layouts = {name: tensor_layout(p, name, dt, blocking) for name, dt in self.types.items()}
            operand = self._operands()

        tiles = self._tiles(operand)
        fma, bt, mp, np_, kp, ms, ns, sub_a, sub_b, a_inner, c_reg, a_reg, b_reg = tiles

        # FMA-ready SLM tiles hold the FMA's operand type; an operand fma_type converts is staged as stored
        whole = {"A": fma.a_layout(bt, mp, kp, a_inner == 2), "B": fma.b_layout(bt, kp, np_)}
        fma_ready = {} if self.per_lane or self.ops.converted else {
            "A": subtile_chunks(whole["A"], a_reg.layout, 1, sub_a),
            "B": subtile_chunks(whole["B"], b_reg.layout, 2, sub_b)}
        # Sub-tiles side by side (not the whole tile's own chunks) are taken only where memory holds them so:
        # any other copy would reorder them through a pack buffer of the staged size, more registers than
        # the sub-tile's staging buffer of the dense tile.
        side_by_side = {w for w, parts in (("A", sub_a), ("B", sub_b))
                        if parts > 1 and fma_ready.get(w) is not None and fma_ready[w] is not whole[w]}
        stages = self._stages(operand, fma_ready, side_by_side)
        a_load = self._loader(operand["A"], stages.get("A"), a_reg, 1, ms if sub_a > 1 else 0)
        self.decompressor = self._decompressor(operand["B"], b_reg, kp, sub_b, stages)
        if self.decompressor is not None:
            raw_load = self._loader(operand["B"], None, self.decompressor.raw, 2, 0, self.decompressor.raw_source,
                                    self.decompressor.raw_rules(self.rules))
            b_load = lambda s: self.decompressor.statements(raw_load(s))  # noqa: E731
        else:
            b_load = self._loader(operand["B"], stages.get("B"), b_reg, 2, ns if sub_b > 1 else 0)
        biases = [op for op in p.post_ops if isinstance(op, Bias)] if p.prop == "bwd_w" else []
        c_post_ops = () if biases else p.post_ops  # bwd_w's bias is an output of the reduction, not a post-op
        finish = SplitFinish(t, self.nest.thread_linear, names, cfg.simd, self.rules) \
            if needs_finish(t.split_k, self.ops.acc, self.ops.c, c_post_ops, biases[0].dt if biases else None) \
            else None
        atomic_out = t.split_k and finish is None  # partial sums added straight into the outputs
        grad = self._bias_gradient(operand["B"], b_reg, np_, atomic_out)
        if grad is not None:
            b_load = grad.after(b_load)
            self.allocs += grad.allocs
        compute = self._compute(tiles, a_load, b_load, stages)
        k_loop = Group.make("k_loop", self._reduction(compute), origin=Origin("loop_nest.reduction", "loop"))
        slices = self._k_slices(c_reg, grad)

        epi, init, epilogue = self._epilogue(operand["C"], c_reg, stages, c_post_ops, grad, finish, atomic_out)

        if slices is None:
            body = seq(init, k_loop, epilogue)
        else:
            body = seq(init, k_loop, Group.make("k_slices", slices.reduce, origin=K_SLICES_ORIGIN),
                       If.make(slices.first, epilogue, origin=K_SLICES_ORIGIN))
        body = self._allocated(body, tiles, stages, slices)
        args = self._args(epi.args, atomic_out) + ((grad.arg,) if grad else ()) + \
            (tuple(finish.args) if finish else ())
        return Kernel(body, args, t.kernel_grid, t.tg_grid, cfg.simd, self.target.name, self.reg_bytes,
                      sum(s.slm_bytes for s in stages.values()) + (slices.slm_bytes if slices else 0), p, cfg,
                      cfg.regs, cfg.fma)

    def _operands(self) -> dict[str, _Operand]:
        p = self.problem
        views = conv_views(p, self.layouts) if p.op == "conv" else gemm_views(p, self.layouts)
        return {w: _Operand(v, var(v.tensor, u64), self._roles(w, False, views[0]), self._roles(w, True, views[0]))
                for w, v in zip("ABC", views)}

    def _transposed(self, operand: dict) -> int:
        """The thread tile's N where ``dpas`` takes its transposed form (``fma.DpasKind.transposed``: M in
        the lanes, A the VNNI operand), else 0. Taken where A comes straight from global memory (not
        staged in SLM, no 2D block loads on the target) in block messages of short rows (an ``axb``
        pixel's 16 channels: one 32-byte message a row and K block), and vector gathers whose lanes walk
        those rows fill the transposed A in fewer messages: each moves ``simd`` rows, one address a
        lane, instead of one message (and one header) a row (oneDNN's send plans gather rows so too)."""
        cfg, t = self.config, self.tiling
        if cfg.fma != "dpas" or self.per_lane or self.target.messages.block2d is not None \
                or self._staged("A") or cfg.decompress is not None \
                or (cfg.subtiles is not None and (cfg.subtiles.a, cfg.subtiles.b) != (1, 1)) \
                or self.ops.converted or prod(d.iter for d in t.role("b")) > 1:
            return 0
        if self._staged("B") and any(d.tg > 1 for d in t.role("k")):
            return 0  # threads reading their K slices of a staged B: the transposed B's rows of K split
        m_thr, n_thr, k_thr = (prod(d.iter for d in t.role(r)) for r in "mnk")
        plain = make_fma(cfg.fma, self.target, cfg.simd, self.ops.a, self.ops.b, self.ops.acc, m_thr)
        flipped = make_fma(cfg.fma, self.target, cfg.simd, self.ops.a, self.ops.b, self.ops.acc, m_thr,
                           transposed_n=n_thr)
        padded = [(_up(m_thr, f.unit[0]), _up(n_thr, f.unit[1]), _up(k_thr, f.unit[2])) for f in (plain, flipped)]
        if padded[0] != padded[1]:  # the same tile either way: the same registers, the same padding
            return 0
        mp, _, kp = padded[0]
        probe = self._access(operand["A"], self.nest.thread_start)
        a_reg = RegTensor(var("a", u64), plain.a_layout(1, mp, kp, True), 0, ROLES["A"])
        plan = plan_messages(probe, a_reg, self.rules)
        if plan.kind is not SendKind.BLOCK:
            return 0
        t_reg = RegTensor(var("a", u64), flipped.a_layout(1, mp, kp, True), 0, ROLES["A"])
        staging = memory_ordered(probe, t_reg, self.rules, var("a_ld", u64))
        gather = None if staging is None else vector_gather(probe, staging, t_reg, self.rules)
        return n_thr if gather is not None and gather.count < plan.count else 0

    def _tiles(self, operand: dict) -> _Tiles:
        """The FMA and the register tiles of C, A and B it multiplies (the thread tile padded to its unit),
        with the sub-tiling of A or B (``subtiles``)."""
        cfg, t, names = self.config, self.tiling, self.names
        bt, m_thr, n_thr, k_thr = (prod(d.iter for d in t.role(r)) for r in "bmnk")
        fma = make_fma(cfg.fma, self.target, cfg.simd, self.ops.a, self.ops.b, self.ops.acc, m_thr,
                       mad_over_batch(cfg.fma, cfg.simd, t), self.transposed_n)
        sub_a, sub_b = (cfg.subtiles.a, cfg.subtiles.b) if cfg.subtiles else (1, 1)
        if sub_a > 1 and sub_b > 1:
            raise BuildError("subtiles: split A or B, not both", knob="subtiles")
        if (sub_a > 1 or sub_b > 1) and bt > 1:
            raise BuildError("subtiles need a thread tile without batch dims (iter over g or b0 is 1)",
                             knob="subtiles")
        um, un, uk = fma.unit
        mp, np_, kp = _up(m_thr, um * sub_a), _up(n_thr, un * sub_b), _up(k_thr, uk)
        ms, ns = mp // sub_a, np_ // sub_b
        a_inner = contiguous_role(operand["A"].view, operand["A"].roles)
        c_reg = RegTensor(names.fresh("c_acc", u64), fma.c_layout(bt, mp, np_), 0, ROLES["C"])
        a_buf = names.fresh("a", u64)
        a_reg = RegTensor(a_buf, self._a_layout(operand["A"], fma.a_layouts(bt, ms, kp, a_inner == 2), a_buf),
                          0, ROLES["A"])
        b_reg = RegTensor(names.fresh("b", u64), fma.b_layout(bt, kp, ns), 0, ROLES["B"])
        return _Tiles(fma, bt, mp, np_, kp, ms, ns, sub_a, sub_b, a_inner, c_reg, a_reg, b_reg)

    def _compute(self, tiles: _Tiles, a_load, b_load, stages: dict) -> Stmt:
        """One reduction step: the SLM stages' copies and barriers, the loads, the FMA calls (per
        sub-tile of A or B)."""
        names, fma, a_reg, b_reg, c_reg = self.names, tiles.fma, tiles.a_reg, tiles.b_reg, tiles.c_reg
        fma_origin = Origin(f"fma.{fma.name}", "fma")
        sub_origin = Origin("fma.subtiles", "subtiles")
        zero = arith.const(0)
        if tiles.sub_a > 1:
            compute = seq(b_load(zero), nest(names, [("a_sub", tiles.sub_a)], lambda s: seq(
                a_load(s), fma.emit(a_reg, b_reg, c_reg.rows(1, s, tiles.ms), names, fma_origin)), sub_origin))
        elif tiles.sub_b > 1:
            compute = seq(a_load(zero), nest(names, [("b_sub", tiles.sub_b)], lambda s: seq(
                b_load(s), fma.emit(a_reg, b_reg, c_reg.rows(2, s, tiles.ns), names, fma_origin)), sub_origin))
        else:
            compute = seq(a_load(zero), b_load(zero), fma.emit(a_reg, b_reg, c_reg, names, fma_origin))
        if stages:
            barrier = Origin("slm.barrier", "slm")
            compute = seq(*(s.load for s in stages.values()), FuncCall.make(Barrier(), origin=barrier),
                          *(s.store for s in stages.values()), slm_barrier(barrier), compute)
        return compute

    def _k_slices(self, c_reg: RegTensor, grad):
        """The K slices of the group's threads summed through SLM (``tg`` over K dims), or None."""
        # Two registers per piece: the receive buffer is live beside the whole C tile.
        slices = k_slices(c_reg, self.tiling, self.names, self.config.simd, 2 * self.reg_bytes)
        if slices is not None:
            if grad is not None:
                raise BuildError("tg splits K across the threads of a group, and the bias gradient of bwd_w "
                                 "is not summed across them; drop the bias or tg over K dims", knob="tg")
            self.allocs.append((slices.part, Origin("k_slices.part", "tg")))
        return slices

    def _epilogue(self, c_op: _Operand, c_reg: RegTensor, stages: dict, c_post_ops, grad, finish, atomic_out):
        """The epilogue builder, the ``init_c`` group (C and the zero-filled stages cleared) and the
        ``epilogue`` group (post-ops and stores, through split K's finish)."""
        names, cfg = self.names, self.config
        ctx = EpilogueContext(c_reg, self._access(c_op, self.nest.thread_start), self.ops.c, self.rules, names,
                              not self.per_lane,
                              cfg.simd, self.reg_bytes, self._lanes, atomic_out)
        epi = Epilogue(ctx, lambda op, k, dt: self._rhs_view(op, k, dt, c_op.view))
        init_c = fill(c_reg, 0, names, cfg.simd, Origin("init_c", "iter"))
        for which, st in stages.items():
            if st.zeros is not None:
                lanes = self.rules.fill_lanes or self.rules.simd
                init_c = seq(init_c, st.zeros.clear(names, lanes, Origin(f"slm.{which.lower()}", "slm")))
        finished = epi.build(c_post_ops)
        if grad is not None:
            finished = seq(finished, grad.store())
            init_c = seq(init_c, grad.init())
        if finish is not None:
            finish.scratch(ctx.access, c_reg)
            if grad is not None:
                finish.scratch(grad.access, grad.acc, grad.owner)
            finished = finish.wrap(finished)
            self.allocs.append((finish.arrived, ORIGIN_SPLIT_K))
        epilogue = Group.make("epilogue", finished, origin=Origin("epilogue", "post_ops"))
        init = Group.make("init_c", init_c, origin=Origin("init_c", "iter"))
        return epi, init, epilogue

    def _allocated(self, body: Stmt, tiles: _Tiles, stages: dict, slices) -> Stmt:
        """``body`` inside the allocations of every buffer it uses and the loop nest's lets, as the
        ``kernel`` group."""
        for reg, origin in reversed(self.allocs):
            body = Alloc.make(reg.buf, self._grf(reg.bytes), MemKind.GRF, body, self._lanes(reg), origin=origin)
        for which, st in reversed(list(stages.items())):
            origin = Origin(f"slm.{which.lower()}", "slm")
            words = flat_lanes(self._grf(st.staging_bytes), self.reg_bytes) if self.per_lane else ()
            body = Alloc.make(st.staging, self._grf(st.staging_bytes), MemKind.GRF, body, words, origin=origin)
            if st.pack is not None:
                body = Alloc.make(st.pack, self._grf(st.staging_bytes), MemKind.GRF, body, words, origin=origin)
            if st.zeros is not None:
                body = Alloc.make(st.zeros.buf, self._grf(st.zeros.bytes), MemKind.GRF, body,
                                  flat_lanes(self._grf(st.zeros.bytes), self.reg_bytes) if self.per_lane else (),
                                  origin=origin)
            body = Alloc.make(st.slm, st.slm_bytes, MemKind.SLM, body, origin=origin)
        if slices is not None:
            body = Alloc.make(slices.slm, slices.slm_bytes, MemKind.SLM, body, origin=K_SLICES_ORIGIN)
        for reg, step in ((tiles.b_reg, "fma.b_tile"), (tiles.a_reg, "fma.a_tile"), (tiles.c_reg, "fma.c_tile")):
            body = Alloc.make(reg.buf, self._grf(reg.bytes), MemKind.GRF, body, self._lanes(reg),
                              origin=Origin(step, "iter"))
        for b in reversed(self.nest.bindings):
            body = Let.make(b.var, b.value, body, origin=b.origin)
        return Group.make("kernel", operators.fold(body), origin=Origin("build"))

    # -- pieces ----------------------------------------------------------------------------------
    def _staged(self, which: str) -> bool:
        """Whether the ``slm`` knob stages operand ``which`` ("A" or "B") in shared memory."""
        slm = self.config.slm
        return slm is not None and slm.applies_to(which)

    def _a_layout(self, op: _Operand, layouts: tuple[Layout, ...], buf) -> Layout:
        """A's register layout: of the orders of its blocks the FMA reads alike (``layouts``, its own
        first), the one the fewest 2D block loads fill from global memory (the first where none is fewer:
        A staged in SLM, no 2D block loads on the target, a tile they cannot load)."""
        limits = self.target.messages.block2d
        if len(layouts) == 1 or limits is None or self._staged("A"):
            return layouts[0]
        probe = self._access(op, self.nest.thread_start)

        def messages(layout: Layout) -> float:
            plan = plan_block2d(probe, RegTensor(buf, layout, 0, ROLES["A"]), limits, self.reg_bytes)
            return inf if plan is None else plan.count
        return min(layouts, key=messages)  # the first of the fewest

    def _stages(self, operand: dict, fma_layouts: dict, direct_only: set) -> dict[str, SlmStage]:
        """SLM staging of A and/or B (``slm`` knob), single-buffered; FMA-ready where ``fma_layouts``
        gives the operand's register layout (for the operands in ``direct_only``, only where memory holds
        the FMA-ready order)."""
        out = {}
        # What the config's estimate leaves of its registers (a tight config keeps its zero fills).
        estimate = estimate_budget(self.problem, self.config, self.target).reg_total
        spare = (self.config.regs - estimate) * self.reg_bytes
        for which in "AB":
            if not self._staged(which):
                continue
            op = operand[which]
            group = TileAccess(op.view, op.mem, "global", op.group_roles,
                               {d.name: self.nest.group_start[d.name] for d in op.view.dims}, self.bounded,
                               self.nest.facts)
            out[which] = stage(which.lower(), group, op.roles, self.nest.local_start,
                               contiguous_role(op.view, op.group_roles), self.rules, self.names,
                               self.nest.thread_linear, self.tiling.threads_per_group, fma_layouts.get(which),
                               spare, unread_dims(op.group_roles, ROLES[which]), which in direct_only)
            if out[which].zeros is not None:
                spare -= self._grf(out[which].zeros.bytes)
        return out

    def _loader(self, op: _Operand, staged: SlmStage | None, reg: RegTensor, split_dim: int, part: int,
                through=None, rules: MessageRules | None = None):
        """A function of the subtile index giving the statements that fill ``reg`` (``through``: a function
        of the global access giving the one read instead, e.g. 4-bit weights' bytes; ``rules``: the
        message rules, the kernel's by default).

        Loads straight into the FMA layout when that gives block messages or
        when no other layout would; otherwise loads into a memory-ordered
        layout and reorders (seed 000: "GRF-to-GRF reorders to match FMA layout").
        """
        names, which = self.names, reg.buf.name
        rules = rules or self.rules

        def source(s: Expr) -> TileAccess:
            base = [0, 0, 0]
            if part:
                base[split_dim] = operators.mul(s, part)
            if staged is None:
                acc = self._access(op, self.nest.thread_start, tuple(base))
                return acc if through is None else through(acc)
            acc = staged.access
            return TileAccess(acc.view, acc.mem, acc.space, acc.roles, acc.starts, acc.bounded, acc.facts,
                              tuple(base))

        origin = Origin(f"loads.{which}", "iter")
        # masked-off rows of M or columns of N reach no stored result: no zero fill for them
        unread = unread_dims(op.roles, reg.roles) if through is None and "k" in reg.roles else frozenset()
        # subtile s: the tile's s-th chunk, read with block messages; a chunk that is no whole number of
        # dwords (a u8 subtile of 2 bytes) would read past it, so it takes the general path below
        if staged is not None and staged.tile_offset is not None and reg.bytes % SLM_BLOCK_GRAIN == 0:
            return lambda s: read_tile(staged, reg, rules, names, origin, operators.mul(s, reg.bytes))
        probe = source(arith.const(0))
        if reg.dtype != probe.view.layout.dtype:  # fma_type: moved in its memory type, converted by a reorder
            order = inner_last(contiguous_role(probe.view, probe.roles))
            converting = RegTensor(names.fresh(f"{which}_ld", u64),
                                   row_major(probe.view.layout.dtype, reg.layout.dims, order), 0, reg.roles)
            self.allocs.append((converting, Origin(f"loads.{which}_convert", "fma_type")))
            return lambda s: self._reordered(source(s), converting, reg, origin, rules, unread)
        # 2D block messages land the rows where reg's layout holds them: taken where they are fewer
        # than the 1D messages (and their staging reorder) of the other paths.
        block2d = plan_block2d(probe, reg, self.target.messages.block2d, self.reg_bytes)
        staging, rows = None, None
        plan = plan_messages(probe, reg, rules)
        if block2d is not None and plan.kind is SendKind.BLOCK and block2d.count < plan.count:
            return lambda s: load_block2d(source(s), reg, block2d, names, origin)
        if plan.kind is not SendKind.BLOCK:
            staging = memory_ordered(probe, reg, rules, names.fresh(f"{which}_ld", u64), real=True)
            real = staging is not None and staging.layout.dims != reg.layout.dims  # a short dim's real rows
            if real:
                rows = plan_messages(whole_dims(probe), staging, rules, plain=True)
            gather = None if staging is None or part or real else vector_gather(probe, staging, reg, rules)
            fewest = gather.count if gather is not None else rows.count if rows is not None else (
                plan_messages(probe, staging, rules).count if staging is not None else plan.count)
            if block2d is not None and block2d.count < fewest:
                return lambda s: load_block2d(source(s), reg, block2d, names, origin)
            if gather is not None:  # vector messages land in reg's layout: no staging, no reorder
                return lambda s: transfer(SendOp.LOAD, source(s), staging, rules, names, origin,
                                          TransferPlan(staging=reg.buf, vectors=gather, unread=unread))
            if staging is not None:
                self.allocs.append((staging, Origin(f"loads.{which}_reorder", "fma")))

        if staging is None:
            return lambda s: transfer(SendOp.LOAD, source(s), reg, rules, names, origin, TransferPlan(unread=unread))
        if rows is not None:  # the real rows of a short dim (``whole_dims``)
            return lambda s: self._reordered(whole_dims(source(s)), staging, reg, origin, rules, unread, rows)
        return lambda s: self._reordered(source(s), staging, reg, origin, rules, unread)

    def _reordered(self, source: TileAccess, staging: RegTensor, reg: RegTensor, origin: Origin,
                   rules: MessageRules, unread: frozenset[str], plan: MessagePlan | None = None) -> Stmt:
        """Loads ``source`` into ``staging`` with ``rules`` (``plan``: its messages, where they are not
        ``plan_messages``'s) and reorders it into ``reg``'s rows (converting to its type)."""
        knob = "fma" if staging.dtype == reg.dtype else "fma_type"
        dst = reg if staging.layout.dims == reg.layout.dims else real_rows(reg, staging.layout.dims)
        move = FuncCall.make(Reorder(staging.layout, dst.layout), [staging.buf, 0, reg.buf, 0],
                             origin=Origin(f"reorder.{reg.buf.name}", knob))
        return seq(transfer(SendOp.LOAD, source, staging, rules, self.names, origin,
                            TransferPlan(plan=plan, unread=unread)), move)

    def _decompressor(self, b: _Operand, b_reg: RegTensor, k_tile: int, sub_b: int, stages: dict
                      ) -> Decompressor | None:
        """The weight decompression of B (``[problem] scales``), its buffers allocated; None without it."""
        d = self.problem.decompression
        if d is None:
            return None
        if self.per_lane:
            raise BuildError(f"weight decompression is generated for Xe targets (registers of whole rows, the "
                             f"dpas operand's layout), not {self.target.name}'s per-lane fragments", knob="decompress")
        if "B" in stages or sub_b > 1:
            raise BuildError("decompressed weights are loaded from global memory into whole B tiles: no SLM "
                             "staging of B (slm .a) and no B subtiles", knob="slm" if "B" in stages else "subtiles")
        from .decompress import Decompressor

        choice = self.config.decompress or Decompress("cvt")
        dec = Decompressor(d, choice, b_reg, self._access(b, self.nest.thread_start), k_tile, self.types["wei"],
                           self.rules, self.names)
        self.allocs += [(reg, Origin("decompress", "decompress")) for reg in dec.buffers]
        return dec

    def _reduction(self, body: Stmt) -> Stmt:
        """The reduction loops (``loop`` knob) around ``body``, K tile origins bound inside."""
        nest_: LoopNest = self.nest
        for b in reversed(nest_.k_bindings):
            body = Let.make(b.var, b.value, body, origin=b.origin)
        for lv, count, u in reversed(nest_.k_loops):
            body = For.make(lv, 0, count, body, unroll=min(max(u, 1), count),
                            origin=Origin("loop_nest.reduction", "unroll" if u > 1 else "loop"))
        return body

    def _bias_gradient(self, b: _Operand, b_reg: RegTensor, n_tile: int, atomic: bool) -> BiasGradient | None:
        """The bias gradient of a bwd_w problem with a ``bias`` post-op (``bias_grad``), else None."""
        p = self.problem
        biases = [op for op in p.post_ops if isinstance(op, Bias)]
        if p.prop != "bwd_w" or not biases:
            return None
        if len(biases) > 1:
            raise BuildError(f"post_ops lists {len(biases)} biases; a bwd_w kernel computes one bias gradient",
                             knob="post_ops")
        from .bias_grad import BiasGradient

        m_starts = [self.nest.thread_start[d.name] for d in self.tiling.role("m")]
        return BiasGradient(biases[0], self._access(b, self.nest.thread_start), b_reg, n_tile, m_starts,
                            self.ops.acc, self.names, self.config.simd, self.rules, atomic)

    def _rhs_view(self, op, k: int, dtype: Type, c_view: View) -> tuple[View, PostOpArg | None]:
        """The view over C's dims of post-op ``k``'s right-hand tensor, and its new kernel argument."""
        p = self.problem
        if isinstance(op, Sum):
            return c_view, None
        policy = "per_oc" if isinstance(op, Bias) else op.policy
        name = post_op_arg_name(p.post_ops, k)
        if policy == "per_tensor":
            c_layout = self.layouts[c_view.tensor]
            view = View(name, name, c_view.dims, c_view.tensor_dims, c_view.mapping, c_view.masks,
                        Layout(dtype, c_layout.dims, c_layout.blocks))
        elif policy == "per_oc":
            channel = "oc" if p.op == "conv" else "n"
            j = c_view.tensor_dim_index(channel)
            size = c_view.tensor_dims[j][1]
            view = View(name, name, c_view.dims, ((channel, size),), (c_view.mapping[j],), (None,),
                        vector_layout(size, dtype))
        else:
            view = View(name, name, c_view.dims, (("x", 1),), (arith.const(0),), (None,), vector_layout(1, dtype))
        return view, PostOpArg(name, dtype, view.tensor_dims, view.layout)

    def _args(self, post_args, atomic: bool) -> tuple[KernelArg, ...]:
        p = self.problem
        c_tensor = self.ops.tensors[2]
        reads_c = any(isinstance(op, Sum) for op in p.post_ops)
        out = []
        for name in ("src", "wei", "dst"):
            role = ("inout" if reads_c else "output") if name == c_tensor else "input"
            out.append(KernelArg(name, var(name, u64), self.types[name], self.layouts[name], p.tensor_dims(name),
                                 role, zero_init=name == c_tensor and atomic))
        for a in post_args:
            out.append(KernelArg(a.name, var(a.name, u64), a.dtype, a.layout, a.dims, "input"))
        if self.decompressor is not None:
            out += [arg for arg, _ in self.decompressor.args]
        return tuple(out)


def _up(x: int, unit: int) -> int:
    return -(-x // unit) * unit
