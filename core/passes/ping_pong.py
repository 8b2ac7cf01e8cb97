"""Ping-pong of the raw weight tiles in registers (seed 002's TRY3.1, the ``decompress`` knob's ``.x2``).

The builder loads each iteration's raw weight bytes at the top of the iteration (in a group labelled
:data:`~kdd.core.config.decompress.RAW_LOAD`) and decompresses them right after, so the conversion waits
for the load. With two raw buffers the load runs an iteration ahead::

    raw load of iteration 0 -> slot 0
    for it {
      if it + 1 < total: raw load of iteration it + 1 -> slot (it + 1) % 2
      the iteration, reading its raw tile from slot it % 2
    }

The loop is the innermost one around the load (the flat loop of SLM buffering, when that ran first); the
load is copied with the lets around it in the loop body, at ``it + 1`` (fresh names). The loop is
unrolled by a multiple of 2, so every slot is a constant register offset after the unroll pass.
"""
from __future__ import annotations

from math import lcm
from typing import Any, Mapping

from ..config.decompress import RAW_LOAD
from ..ir.expr import IntImm, Var
from ..ir.funcs import Send
from ..ir.names import Names
from ..ir.node import Node
from ..ir.stmt import Alloc, For, FuncCall, Group, If, Let, Stmt, empty, seq
from ..ir.visitor import IRVisitor
from .buffering import Resize, SlotShift
from .naming import rename_bound
from .tree import distinct_nodes, replace_node


def ping_pong(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` with the raw weight load moved an iteration ahead into a second buffer
    (``options["raw_bufs"] == 2``; unchanged otherwise, or where no loop with constant bounds holds it)."""
    if int((options or {}).get("raw_bufs") or 0) < 2:
        return ir
    groups = [n for n in distinct_nodes(ir) if isinstance(n, Group) and n.label == RAW_LOAD]
    if len(groups) != 1:
        return ir
    load = groups[0]
    loop, lets = _enclosing(ir, load)
    if loop is None or loop.step != 1 or not (isinstance(loop.init, IntImm) and isinstance(loop.bound, IntImm)):
        return ir
    sizes = {a.buf.name: a.size for a in distinct_nodes(ir) if isinstance(a, Alloc)}
    raw = {n.ops.reg.name for n in distinct_nodes(load) if isinstance(n, FuncCall) and isinstance(n.func, Send)
           and isinstance(n.ops.reg, Var) and n.ops.reg.name in sizes}
    names, it = Names.of(ir), loop.var

    def slot(i):  # the raw accesses of iteration i in their slot
        return lambda s: SlotShift({}, {b: (sizes[b], (i - loop.init) % IntImm.make(i.type, 2)) for b in raw}
                                   ).mutate(s)

    def ahead(i):  # iteration i's raw load, with the loop body's lets around it
        stmt = load.body
        for let in reversed(lets):
            stmt = Let.make(let.var, let.value, stmt, origin=let.origin)
        return slot(i)(rename_bound(stmt, names, {it: i}))

    nxt = it + IntImm.make(it.type, 1)
    body = slot(it)(replace_node(loop.body, load, empty()))
    body = seq(If.make(nxt.lt(loop.bound), ahead(nxt)), body)
    trips = loop.bound.value - loop.init.value
    new = For.make(it, loop.init, loop.bound, body, unroll=min(lcm(loop.unroll, 2), max(trips, 1)),
                   origin=loop.origin)
    out = replace_node(ir, loop, seq(ahead(loop.init), new))
    return Resize({b: 2 for b in raw}).mutate(out)


def _enclosing(ir: Node, target: Stmt) -> tuple[For | None, list[Let]]:
    """The innermost loop around ``target`` and the lets between that loop and it (outer first)."""
    finder = _Enclosing(target)
    finder.visit(ir)
    frames = finder.found or []
    loops = [i for i, f in enumerate(frames) if isinstance(f, For)]
    start = loops[-1] + 1 if loops else 0
    return (frames[loops[-1]] if loops else None), [f for f in frames[start:] if isinstance(f, Let)]


class _Enclosing(IRVisitor):
    """The lets and loops around the first occurrence of ``target``, outermost first."""

    statements_only = True

    def __init__(self, target: Stmt):
        self.target, self.frames, self.found = target, [], None

    def visit_Stmt(self, node: Stmt):
        if self.found is not None:
            return False
        if node is self.target:
            self.found = list(self.frames)
            return False
        if isinstance(node, (Let, For)):
            self.frames.append(node)
        return None

    def leave_Stmt(self, node: Stmt) -> None:
        if isinstance(node, (Let, For)) and self.frames and self.frames[-1] is node:
            self.frames.pop()
