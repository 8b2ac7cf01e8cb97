"""Split K into a destination atomics cannot finish: an f32 reduction buffer and the last arrival's epilogue.

When ``loop`` leaves part of K to the kernel grid, every thread group along
the split K dims computes a partial C tile. Where the destination holds the
accumulator type and nothing follows the sum, the groups add their partials
into the zeroed destination with atomics (:mod:`.epilogue`). Otherwise (an
f16/bf16 destination, post-ops, or bwd_w's bias gradient into an f16/bf16
bias) the sum must be complete, in the accumulator type, before it is
converted and post-processed. oneDNN reduces into an f32 scratch buffer and
finishes in a second kernel; kdd's kernel finishes it itself, as a
"last arrival" reduction does:

    atomic add C into scratch          (zeroed f32 copy of the destination, same layout)
    [atomic add the bias sums into bias scratch]
    fence (global)                     (the adds are visible before the count is)
    arrived = atomic fetch-add 1 into counters[tile]   (zeroed, one u32 per thread tile)
    if arrived == parts - 1:           (every other part has added and counted)
        fence (global); C = load scratch; [bias sums = load bias scratch]
        epilogue: convert, post-ops, convert, store   (as without split K)
        store zeros into scratch[tile]; counters[tile] = 0   (ready for the next launch)

``tile`` numbers the thread's C tile: the group's position along the grid
axes without the split K dims, and the thread in its group. Each of the
``parts`` groups that share a tile counts once; the one that sees
``parts - 1`` runs the epilogue. The scratch buffers and the counters are
kernel arguments with role ``scratch`` and ``zero_init``: the runtime zeroes
them once, and the last arrival leaves its tile of both zeroed again, so a
second launch on the same buffers is as correct as the first (a benchmark's
repeated launches, a framework reusing its workspace). Nothing else reads a
tile's scratch after its last arrival, and no group of the same launch adds
to it again, so the reset needs no further fence.
"""
from __future__ import annotations

from math import prod

from kdd.core.ir import operators
from kdd.core.ir.expr import BoolImm, Expr, Load, var
from kdd.core.ir.funcs import Fence, Send, SendKind, SendOp
from kdd.core.ir.names import Names
from kdd.core.ir.stmt import FuncCall, If, Stmt, seq
from kdd.core.ir.types import Type, s32, u32, u64
from kdd.core.layout.layout import Layout
from kdd.core.layout.view import View

from . import arith
from .elementwise import fill
from .kernel import KernelArg
from .layouts import vector_layout
from .loads import MessageRules, transfer
from .loop_nest import GROUP_IDS
from .origin import Origin
from .tile import RegTensor, TileAccess, row_major

ORIGIN = Origin("split_k.finish", "loop")
COUNTERS = "arrivals"


def needs_finish(split_k: bool, acc: Type, dst: Type, post_ops, bias_type: Type | None = None) -> bool:
    """Whether a split reduction must be completed in the accumulator type before the epilogue."""
    return split_k and (dst != acc or bool(post_ops) or (bias_type is not None and bias_type != acc))


def scratch_view(view: View, name: str, dtype: Type) -> View:
    """``view`` over a same-shaped buffer ``name`` of ``dtype`` (same blocks, wider elements)."""
    layout = Layout(dtype, view.layout.dims, view.layout.blocks)
    return View(name, name, view.dims, view.tensor_dims, view.mapping, view.masks, layout)


class SplitFinish:
    """The finishing protocol of one kernel (module docstring): its kernel arguments and statements."""

    def __init__(self, tiling, thread_linear: Expr, names: Names, simd: int, rules: MessageRules):
        self.names, self.simd, self.rules = names, simd, rules
        self.parts = prod(d.grid for d in tiling.role("k"))
        gx, gy, gz = tiling.kernel_grid
        threads = tiling.threads_per_group
        # K dims are the fastest of grid axis Z (loop_nest packs B dims before K dims).
        z = arith.div(var(GROUP_IDS[2], s32), self.parts)
        group = operators.add(var(GROUP_IDS[0], s32),
                          operators.mul(operators.add(var(GROUP_IDS[1], s32), operators.mul(z, gy)), gx))
        self.tile = operators.add(operators.mul(group, threads), thread_linear)
        tiles = gx * gy * (gz // self.parts) * threads
        counters = names.fresh(COUNTERS, u64)
        self.counters = KernelArg(counters.name, counters, u32, vector_layout(tiles, u32),
                                  (("tile", tiles),), "scratch", zero_init=True)
        self.arrived = RegTensor(names.fresh("arrived", u64), row_major(u32, (1, 1, 1)), 0)
        self.args: list[KernelArg] = [self.counters]
        self._partials: list[tuple[TileAccess, RegTensor, Expr | None]] = []

    def scratch(self, access: TileAccess, reg: RegTensor, guard: Expr | None = None) -> None:
        """Sum ``reg`` (a tile of ``access``'s tensor; only where ``guard`` holds) across the parts in a
        zeroed scratch copy of that tensor in ``reg``'s type; ``reg`` holds the whole sum in the
        finishing branch."""
        name = self.names.fresh(f"{access.view.tensor}_partial", u64).name
        view = scratch_view(access.view, name, reg.dtype)
        self.args.append(KernelArg(name, var(name, u64), reg.dtype, view.layout, view.tensor_dims, "scratch",
                                   zero_init=True))
        self._partials.append((TileAccess(view, var(name, u64), "global", access.roles, access.starts,
                                          access.bounded, access.facts, access.base), reg, guard))

    def wrap(self, epilogue: Stmt) -> Stmt:
        """The partial sums added, counted, and ``epilogue`` run by the last part to arrive."""
        names = self.names

        def each(op: SendOp) -> list[Stmt]:
            out = []
            for acc, reg, guard in self._partials:
                send = transfer(op, acc, reg, self.rules, names, ORIGIN)
                out.append(send if guard is None else If.make(guard, send, origin=ORIGIN))
            return out
        adds, loads = each(SendOp.ATOMIC_ADD), each(SendOp.LOAD)
        fence = FuncCall.make(Fence("global"), origin=ORIGIN)
        last = Load.make(u32, self.arrived.buf, arith.const(0)).eq(self.parts - 1)
        zeros = [fill(reg, 0, names, self.simd, ORIGIN) for _, reg, _ in self._partials]
        reset = seq(*zeros, *each(SendOp.STORE), fill(self.arrived, 0, names, self.simd, ORIGIN),
                    self._counter(SendOp.STORE))
        return seq(*adds, fence, fill(self.arrived, 1, names, self.simd, ORIGIN), self._counter(SendOp.ATOMIC_FETCH_ADD),
                   If.make(last, seq(fence, *loads, epilogue, reset), origin=ORIGIN))

    def _counter(self, op: SendOp) -> Stmt:
        """``op`` between this thread's arrival counter and the one-element register ``arrived``."""
        return FuncCall.make(Send(op, SendKind.BLOCK, "global", u32, 1),
                             [self.counters.var, operators.mul(self.tile, u32.size), self.arrived.buf,
                              arith.const(0), BoolImm.make(True)], origin=ORIGIN)
