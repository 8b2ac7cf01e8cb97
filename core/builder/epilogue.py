"""Epilogue (seed 000): post-ops on the per-thread C tile and the final stores.

C is converted to ``f32`` (``f64`` for an f64 accumulator; a reorder), each post-op is applied in the order
written, and the result is converted to the destination type (a reorder:
round to nearest even, saturate) and stored (atomically added
when the reduction is split across the grid into an accumulator-typed
destination with no post-ops; :mod:`.split_k` finishes the other split
reductions before this epilogue runs). Right-hand sides of post-ops
(bias, binary tensors, the previous destination for ``sum``) are loaded
through views over C's dims into buffers with C's register layout, so every
step is element-wise over the same register order, ``simd`` lanes at a time.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from kdd.core.ir.expr import Expr, FloatImm, max_, min_, var
from kdd.core.ir.funcs import Eltwise as EltwiseFunc
from kdd.core.ir.funcs import SendOp
from kdd.core.ir.names import Names
from kdd.core.ir.stmt import Alloc, FuncCall, MemKind, Stmt, seq
from kdd.core.ir.types import Type, u64
from kdd.core.layout.layout import Layout
from kdd.core.layout.view import View
from kdd.core.problem.data_types import post_op_type
from kdd.core.problem.post_ops import Bias, Binary, Eltwise, Scale, Sum

from .elementwise import convert, elementwise
from .errors import BuildError
from .loads import MessageRules, memory_ordered, plan_messages, transfer
from .origin import Origin
from .tile import RegTensor, TileAccess

_BINARY: dict[str, Callable[[Expr, Expr], Expr]] = {
    "add": lambda a, b: a + b, "mul": lambda a, b: a * b, "sub": lambda a, b: a - b,
    "div": lambda a, b: a / b, "max": max_, "min": min_,
}


@dataclass(frozen=True)
class PostOpArg:
    """A global tensor a post-op reads: its name, type, logical dims and layout."""

    name: str
    dtype: Type
    dims: tuple[tuple[str, int], ...]
    layout: Layout


@dataclass(frozen=True)
class EpilogueContext:
    """What the epilogue needs from the rest of the build."""

    c: RegTensor             # the accumulator
    access: TileAccess       # C's tile in the destination tensor
    dst_type: Type
    rules: MessageRules
    names: Names
    reorder_for_blocks: bool  # the final conversion may change the layout (register-level tiles)
    simd: int
    reg_bytes: int
    alloc_attrs: Callable[[RegTensor], tuple]
    atomic: bool              # partial sums of a split K added atomically into the destination


class Epilogue:
    """Builds the post-op chain and the store; collects the post-op tensors it reads."""

    def __init__(self, ctx: EpilogueContext, rhs_view: Callable[[object, int, Type], tuple[View, PostOpArg | None]]):
        self.ctx = ctx
        self.rhs_view = rhs_view
        self.args: list[PostOpArg] = []
        self._allocs: list[tuple[RegTensor, Origin]] = []
        self.work_type = post_op_type(ctx.c.dtype)

    def build(self, post_ops) -> Stmt:
        ctx = self.ctx
        c = ctx.c
        if ctx.atomic and (post_ops or c.dtype != ctx.dst_type):
            raise BuildError("partial sums are added atomically into the destination, so it must hold the "
                             "accumulator type with no post-ops (split_k.SplitFinish finishes the others)",
                             knob="loop")
        steps: list[Stmt] = []
        work = c
        if post_ops and c.dtype != self.work_type:
            work = self._buffer(f"c_{self.work_type}", self.work_type)
            steps.append(_convert(c, work))
        for k, op in enumerate(post_ops):
            steps.append(self._post_op(k, op, work))
        out = work
        if work.dtype != ctx.dst_type:
            # The conversion is a reorder anyway: into the memory order where that gives block stores.
            out = self._buffer("c_out", ctx.dst_type)
            ordered = memory_ordered(ctx.access, out, ctx.rules, out.buf) if ctx.reorder_for_blocks else None
            if ordered is not None and plan_messages(ctx.access, ordered, ctx.rules).count < \
                    plan_messages(ctx.access, out, ctx.rules).count:
                out = ordered
                self._allocs[-1] = (out, self._allocs[-1][1])
            steps.append(_convert(work, out))
        send = SendOp.ATOMIC_ADD if ctx.atomic else SendOp.STORE
        steps.append(transfer(send, ctx.access, out, ctx.rules, ctx.names,
                              Origin("epilogue.store", "loop" if ctx.atomic else None)))
        stmt = seq(*steps)
        for reg, origin in reversed(self._allocs):
            stmt = Alloc.make(reg.buf, _round(reg.bytes, ctx.reg_bytes), MemKind.GRF, stmt,
                              ctx.alloc_attrs(reg), origin=origin)
        return stmt

    def _buffer(self, name: str, dtype: Type) -> RegTensor:
        reg = self.ctx.c.with_dtype(dtype, self.ctx.names.fresh(name, u64))
        self._allocs.append((reg, Origin(f"epilogue.{name}", "post_ops")))
        return reg

    def _elementwise(self, dst: RegTensor, srcs: list[RegTensor], fn, origin: Origin) -> Stmt:
        """``dst = fn(*srcs)`` over every element, ``simd`` lanes at a time."""
        return elementwise(dst, srcs, fn, self.ctx.names, self.ctx.simd, origin)

    def _load_rhs(self, k: int, op, dtype: Type) -> tuple[RegTensor, Stmt]:
        """The right-hand side of post-op ``k`` loaded in C's register layout."""
        view, arg = self.rhs_view(op, k, dtype)
        if arg is not None:
            self.args.append(arg)
        reg = self._buffer(f"rhs{k}", dtype)
        acc = self.ctx.access
        access = TileAccess(view, var(view.tensor, u64), "global", acc.roles, acc.starts, acc.bounded, acc.facts)
        return reg, transfer(SendOp.LOAD, access, reg, self.ctx.rules, self.ctx.names,
                             Origin(f"epilogue.post_op{k}.load", "post_ops"))

    def _post_op(self, k: int, op, work: RegTensor) -> Stmt:
        origin = Origin(f"epilogue.post_op{k}.{op.canonical()}", "post_ops")
        t = self.work_type
        if isinstance(op, Eltwise):
            return FuncCall.make(EltwiseFunc(op.alg, work.elems, op.alpha, op.beta, t), [work.buf, work.offset],
                                 origin=origin)
        if isinstance(op, Scale):
            return self._elementwise(work, [work], lambda x: x * FloatImm.make(t, op.value), origin)
        if isinstance(op, Sum):
            rhs, load = self._load_rhs(k, op, self.ctx.dst_type)
            scale = FloatImm.make(t, op.scale)
            fn = (lambda x, y: x + y.cast(t)) if op.scale == 1.0 else (lambda x, y: x + y.cast(t) * scale)
        elif isinstance(op, Bias):
            rhs, load = self._load_rhs(k, op, op.dt)
            fn = lambda x, y: x + y.cast(t)  # noqa: E731
        elif isinstance(op, Binary):
            rhs, load = self._load_rhs(k, op, op.dt)
            alg = _BINARY[op.alg]
            fn = lambda x, y: alg(x, y.cast(t))  # noqa: E731
        else:
            raise BuildError(f"post-op {op!r} is not supported", knob="post_ops")
        return seq(load, self._elementwise(work, [work, rhs], fn, origin))


def _convert(src: RegTensor, dst: RegTensor) -> Stmt:
    return convert(src, dst, Origin("epilogue.convert", "post_ops"))


def _round(n: int, unit: int) -> int:
    return max(unit, -(-n // unit) * unit)
