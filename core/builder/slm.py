"""Single SLM buffering (seed 000): a thread group stages an operand's group tile in SLM.

Per reduction iteration the group tile is loaded from global memory
cooperatively (its messages dealt round-robin to the group's threads, the
last round guarded), written to SLM between two barriers, and every thread
then reads its own tile from SLM. The SLM layout is the group tile as a
dense matrix with the memory-contiguous matrix dim innermost; masked
elements (tails, padding) are stored as zeros, so SLM reads need no masks.
"""
from __future__ import annotations

from dataclasses import dataclass

from kdd.core.ir.expr import BoolImm, Expr, Var
from kdd.core.ir.funcs import Send, SendKind, SendOp
from kdd.core.ir.stmt import For, FuncCall, If, Stmt
from kdd.core.ir.types import u64
from kdd.core.layout.layout import Layout
from kdd.core.layout.view import View, ViewDim

from . import arith
from .loads import MessageRules, plan_messages, transfer
from .names import Names
from .origin import Origin
from .tile import MatrixDim, RegTensor, TileAccess, row_major


@dataclass(frozen=True)
class SlmStage:
    """One staged operand: its SLM and staging buffers and the statements around the barriers."""

    slm: Var
    slm_bytes: int
    staging: Var
    staging_bytes: int
    load: Stmt      # global -> staging registers (before the first barrier)
    store: Stmt     # staging registers -> SLM (between the barriers)
    access: TileAccess  # the thread's own tile, read from SLM


def stage(name: str, group: TileAccess, thread_roles: tuple[MatrixDim, MatrixDim, MatrixDim],
          local_start: dict, inner: int, rules: MessageRules, names: Names,
          thread: Expr, threads: int) -> SlmStage:
    """Stage ``group`` (the group's tile of an operand) in SLM; ``inner`` is the innermost matrix dim."""
    view = group.view
    dtype = view.layout.dtype
    sizes = group.real
    order = (0, 1, 2) if inner == 2 else (0, 2, 1)
    tile = RegTensor(names.fresh(f"{name}_slm", u64), row_major(dtype, sizes, order))
    slm_view = _slm_view(view, group.roles, order, dtype)
    knob = Origin(f"slm.{name}", "slm")
    plan = plan_messages(group, tile, rules)
    staging = names.fresh(f"{name}_g2s", u64)
    load = transfer(SendOp.LOAD, group, tile, rules, names, knob, split=(thread, threads), staging=staging)
    rounds = -(-plan.count // threads)
    store = _store(tile, staging, plan.elems, plan.count, rounds, thread, threads, names, knob)
    access = TileAccess(slm_view, tile.buf, "slm", thread_roles,
                        {d.name: local_start.get(d.name, arith.const(0)) for d in view.dims}, frozenset(), group.facts)
    return SlmStage(tile.buf, tile.bytes, staging, rounds * plan.elems * dtype.size, load, store, access)


def _slm_view(view: View, roles, order, dtype) -> View:
    """The group tile in SLM as a view: identity mapping over the tile dims, no masks."""
    extent = {n: e for r in roles for n, e in r.dims}
    dims = tuple(ViewDim(d.name, extent.get(d.name, 1), d.kind) for d in view.dims)
    names = [d.name for d in dims]
    outer_to_inner = [(names.index(n), e) for k in order for n, e in roles[k].dims if e > 1]
    layout = Layout.dense(dtype, [d.size for d in dims], outer_to_inner)
    return View(f"{view.name}_slm", f"{view.tensor}_slm", dims, tuple((d.name, d.size) for d in dims),
                tuple(d.var for d in dims), (None,) * len(dims), layout)


def _store(tile: RegTensor, staging: Var, elems: int, count: int, rounds: int, thread: Expr,
           threads: int, names: Names, origin: Origin) -> Stmt:
    size = tile.dtype.size
    j = names.fresh(f"{tile.buf.name}_st")
    j_expr = j if rounds > 1 else arith.const(0)
    r = arith.add(arith.mul(j_expr, threads), thread)
    func = Send(SendOp.STORE, SendKind.BLOCK, "slm", tile.dtype, elems)
    body: Stmt = FuncCall.make(func, [tile.buf, arith.mul(r, elems * size), staging,
                                      arith.mul(j_expr, elems * size), BoolImm.make(True)], origin=origin)
    if rounds * threads > count:
        body = If.make(r.lt(count), body, origin=origin)
    if rounds > 1:
        body = For.make(j, 0, rounds, body, origin=origin)
    return body
