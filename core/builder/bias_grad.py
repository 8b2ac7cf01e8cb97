"""The bias gradient of backward by weights: ``diff_bias`` computed alongside ``diff_weights``.

In bwd_w's GEMM (seed 000) A is src, B is diff_dst and C is diff_wei: K runs
over mb and the output points, N over oc, the batch over g. So
``diff_bias[g * OC/G + oc]`` is the K-sum of B's column ``(g, oc)``, and the
kernel gets it from the B tiles it loads anyway, as oneDNN's bwd_w kernels do:

- after each B (sub)tile load, a ``reduce`` sums the tile over K into a
  ``(b, 1, n)`` vector in the accumulator type, which is added into a
  register accumulator zeroed with C (K tails and padding load as zeros);
  a B narrower than the accumulator (f16, bf16 diff_dst) is converted first,
  element for element, into a copy in the accumulator type (``wide``): the
  sums are exact in f32, and a reduce does not change the type on the way;
- only the threads whose M tile (ic, kd, kh, kw) starts at 0 do this: every
  M tile loads the same B tile, and each diff_dst element must count once;
- after the reduction those threads convert the sums to the bias type and
  store them. When K is split across the grid each group adds its partial
  sums atomically into a zeroed bias when that has the accumulator type;
  otherwise into an f32 scratch that the last group to arrive converts and
  stores (:mod:`.split_k`).
"""
from __future__ import annotations

from typing import Callable

from kdd.core.ir import operators
from kdd.core.ir.expr import Expr, var
from kdd.core.ir.funcs import Reduce, SendOp
from kdd.core.ir.names import Names
from kdd.core.ir.stmt import FuncCall, If, Stmt, seq
from kdd.core.ir.types import Type, u64
from kdd.core.layout.view import DimKind, View
from kdd.core.problem.post_ops import Bias

from . import arith
from .elementwise import convert, elementwise, fill
from .errors import BuildError
from .kernel import KernelArg
from .layouts import vector_layout
from .loads import MessageRules, transfer
from .origin import Origin
from .tile import MatrixDim, RegTensor, TileAccess, row_major

NAME = "bias"
_ROLES = ("b", "k", "n")  # B's matrix roles; the sums keep K as a size-1 dim


def bias_view(b_view: View, dtype: Type) -> View:
    """The bias tensor as a view over the batch and N dims of B (diff_dst): its channel index is
    diff_dst's."""
    j = b_view.tensor_dim_index("oc")
    dims = tuple(d for d in b_view.dims if d.kind in (DimKind.B, DimKind.N))
    size = b_view.tensor_dims[j][1]
    return View(NAME, NAME, dims, (("oc", size),), (b_view.mapping[j],), (None,), vector_layout(size, dtype))


class BiasGradient:
    """Builds the bias gradient of one bwd_w kernel: the accumulation after each B load, the
    zeroing and the final store; collects the registers it needs (``allocs``) and its argument.

    ``b`` is the thread's B tile in diff_dst, ``b_tile`` the register (sub)tile its loads fill,
    ``n_tile`` the thread's padded N extent and ``m_starts`` the origins of its M tile.
    """

    def __init__(self, op: Bias, b: TileAccess, b_tile: RegTensor, n_tile: int, m_starts: list[Expr],
                 acc_type: Type, names: Names, simd: int, rules: MessageRules, atomic: bool):
        if atomic and op.dt != acc_type:
            raise BuildError(f"partial bias sums are added atomically into the bias, so it must hold the "
                             f"accumulator type {acc_type}, not {op.dt} (split_k.SplitFinish finishes the "
                             f"others)", knob="loop")
        self.names, self.simd, self.rules, self.atomic = names, simd, rules, atomic
        bt, _, n_sub = b_tile.layout.dims
        self.b_tile = b_tile
        self.acc = RegTensor(names.fresh("bias_acc", u64), row_major(acc_type, (bt, 1, n_tile)), 0, _ROLES)
        self.part = RegTensor(names.fresh("bias_part", u64), row_major(acc_type, (bt, 1, n_sub)), 0, _ROLES)
        self.out = self.acc if op.dt == acc_type else self.acc.with_dtype(op.dt, names.fresh("bias_out", u64))
        self.wide = None if b_tile.layout.dtype == acc_type else b_tile.with_dtype(acc_type,
                                                                                  names.fresh("bias_wide", u64))
        view = bias_view(b.view, op.dt)
        self.access = TileAccess(view, var(NAME, u64), "global", (b.roles[0], MatrixDim(), b.roles[2]),
                                 {d.name: b.starts[d.name] for d in view.dims}, b.bounded, b.facts)
        # The first M tile owns the bias: its thread starts at 0 along every M dim.
        self.owner = arith.conj(s.eq(0) for s in m_starts if not operators.is_const(s, 0))
        self.arg = KernelArg(NAME, var(NAME, u64), op.dt, view.layout, view.tensor_dims, "output",
                             zero_init=atomic)

    @property
    def allocs(self) -> list[tuple[RegTensor, Origin]]:
        """The registers to allocate around the whole body: they live from ``init`` to ``store``."""
        regs = [self.acc, self.part] + [r for r in (self.out, self.wide) if r is not None and r is not self.acc]
        return [(r, Origin(f"bias_grad.{r.buf.name}", "post_ops")) for r in regs]

    def _owned(self, stmt: Stmt, origin: Origin) -> Stmt:
        return stmt if self.owner is None else If.make(self.owner, stmt, origin=origin)

    def init(self) -> Stmt:
        """The accumulator zeroed."""
        origin = Origin("bias_grad.init", "post_ops")
        return self._owned(fill(self.acc, 0, self.names, self.simd, origin), origin)

    def accumulate(self, s: Expr) -> Stmt:
        """The column sums of the just loaded B (sub)tile ``s`` added into the accumulator."""
        origin = Origin("bias_grad.reduce", "post_ops")
        b, part = self.b_tile, self.part
        n_sub = part.layout.dims[2]
        acc = self.acc if n_sub == self.acc.layout.dims[2] else self.acc.rows(2, s, n_sub)
        widen = [] if self.wide is None else [convert(b, self.wide, origin)]
        src = b if self.wide is None else self.wide
        reduce = FuncCall.make(Reduce(src.layout, part.layout, (1,)), [src.buf, src.offset, part.buf, part.offset],
                               origin=origin)
        add = elementwise(acc, [acc, part], lambda x, y: x + y, self.names, self.simd, origin)
        return self._owned(seq(*widen, reduce, add), origin)

    def after(self, load: Callable[[Expr], Stmt]) -> Callable[[Expr], Stmt]:
        """``load`` (of B subtile ``s``) followed by the accumulation of that subtile."""
        return lambda s: seq(load(s), self.accumulate(s))

    def store(self) -> Stmt:
        """The sums converted to the bias type and stored (added atomically under ``atomic``)."""
        origin = Origin("bias_grad.store", "post_ops")
        steps = [] if self.out is self.acc else [convert(self.acc, self.out, origin)]
        send = SendOp.ATOMIC_ADD if self.atomic else SendOp.STORE
        steps.append(transfer(send, self.access, self.out, self.rules, self.names, origin))
        return self._owned(seq(*steps), origin)
