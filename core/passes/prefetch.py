"""Prefetch pipeline: without SLM, fetch the tiles of iteration ``it + P`` into cache during ``it``.

When the config stages nothing through SLM (``options["slm_bufs"] == 0``)
and asks for ``P = options["prefetch_bufs"] >= 1`` iterations of prefetch,
the reduction nest is flattened (``reduction_nest``) and becomes::

    prefetch iterations 0 .. P-1
    for it { if (it + P < total) prefetch iteration it+P; iteration it }

A prefetch of an iteration is its global loads of the buffers in
``options["prefetch_buffers"]`` (A and/or B, as the config's ``.a``/``.b``
say) with the same addresses and masks, as ``send.prefetch`` messages, with
everything else of the iteration (FMAs, reorders, register stores) left out.
A prefetch only warms the cache (``docs/ir-semantics.md``), so the kernel
computes exactly what it did.
"""
from __future__ import annotations

from typing import Any, Mapping

from ..ir.expr import IntImm, Var
from ..ir.funcs import Send, SendOp
from ..ir.node import Node
from ..ir.stmt import Alloc, For, FuncCall, Group, If, Let, Seq, Stmt, Store, empty, seq
from ..ir.types import s32
from ..ir.visitor import IRMutator
from ..ir.names import Names
from .naming import rename_bound
from .reduction_nest import find_reduction_nest
from .tree import replace_node


def _is_empty(s: Stmt) -> bool:
    return isinstance(s, Seq) and not s.stmts


class _PrefetchOnly(IRMutator):
    """An iteration reduced to prefetches of its global loads from ``buffers``."""

    def __init__(self, buffers: frozenset[str]):
        self.buffers = buffers

    def mutate_FuncCall(self, old: FuncCall, new: FuncCall):
        f = new.func
        if isinstance(f, Send) and f.op is SendOp.LOAD and f.space == "global" \
                and isinstance(new.ops.mem, Var) and new.ops.mem.name in self.buffers:
            return new.with_ops(Send(SendOp.PREFETCH, f.kind, f.space, f.type, f.elems, f.vec))
        return empty()

    def mutate_Store(self, old: Store, new: Store):
        return empty()

    def mutate_For(self, old: For, new: For):
        return empty() if _is_empty(new.body) else new

    def mutate_Let(self, old: Let, new: Let):
        return empty() if _is_empty(new.body) else new

    def mutate_Alloc(self, old: Alloc, new: Alloc):
        return empty() if _is_empty(new.body) else new

    def mutate_If(self, old: If, new: If):
        if _is_empty(new.then) and (new.else_ is None or _is_empty(new.else_)):
            return empty()
        return new


def prefetch_pipeline(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` with the reduction loop prefetching ``options["prefetch_bufs"]`` iterations ahead."""
    options = options or {}
    ahead = int(options.get("prefetch_bufs") or 0)
    buffers = frozenset(options.get("prefetch_buffers") or ())
    if ahead < 1 or int(options.get("slm_bufs") or 0) > 0 or not buffers:
        return ir
    nest = find_reduction_nest(ir)
    if nest is None:
        return ir
    fetch = _PrefetchOnly(buffers).mutate(nest.body)
    if _is_empty(fetch):
        return ir
    names = Names.of(ir)
    it = names.fresh("k_it", s32)
    total = nest.total

    def fetch_at(i) -> Stmt:
        return rename_bound(fetch, names, nest.digits(i))

    prologue = [fetch_at(IntImm.make(s32, j)) for j in range(min(ahead, total))]
    next_it = it + IntImm.make(s32, ahead)
    body = seq(If.make(next_it.lt(IntImm.make(s32, total)), fetch_at(next_it)), nest.bind(it, nest.body))
    loop = For.make(it, 0, total, body, unroll=min(nest.unroll_factor(), total), origin=nest.loops[0].origin)
    k_loop = Group.make(nest.group.label, seq(*prologue, loop), origin=nest.group.origin)
    return replace_node(ir, nest.group, k_loop)
