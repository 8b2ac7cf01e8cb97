"""Barrier optimization: remove ``barrier`` calls that order no shared-local-memory access.

A barrier is where SLM accesses of one thread become visible to the group
(``docs/ir-semantics.md``), so it is needed only between an SLM access before
it and one after it. The kernel becomes a control-flow graph of its
statements (loops with their back edge, both sides of an ``if``) and two
boolean data-flow problems are solved over it:

1. forward, "an SLM access since the last barrier": a barrier reached only
   with nothing accessed since the previous barrier (or the kernel start)
   orders nothing the previous barrier did not;
2. backward, on what is left, "an SLM access before the next barrier": a
   barrier followed by no access before the next barrier (or the kernel end)
   orders nothing either.

Every path from one SLM access to another that met a barrier still meets one:
the first barrier after an access is never removed by (1), the last one
before an access never by (2). A statement "accesses SLM" when it mentions an
``alloc.slm`` buffer. Split barriers (``barrier_signal``/``barrier_wait``)
are kept and count as accesses, so full barriers next to them stay too.
"""
from __future__ import annotations

from typing import Any, Mapping

from ..ir.expr import Var
from ..ir.funcs import Barrier, BarrierSignal, BarrierWait
from ..ir.stmt import Alloc, For, FuncCall, If, MemKind, Seq, Stmt
from ..ir.visitor import IRMutator, IRVisitor, statements
from .tree import child_stmts, distinct_nodes, own_exprs, trip_count, unshare_statements

_ACCESS, _BARRIER, _NOP = "access", "barrier", "nop"


class _Graph:
    """Statement-level control-flow graph: node kinds, successor and predecessor lists."""

    def __init__(self):
        self.kind: list[str] = []
        self.stmt: list[Stmt | None] = []
        self.succ: list[list[int]] = []

    def node(self, kind: str, stmt: Stmt | None = None) -> int:
        self.kind.append(kind)
        self.stmt.append(stmt)
        self.succ.append([])
        return len(self.kind) - 1

    def edge(self, a: int, b: int) -> None:
        self.succ[a].append(b)

    def preds(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in self.kind]
        for a, bs in enumerate(self.succ):
            for b in bs:
                out[b].append(a)
        return out


def _is_barrier(s: Stmt) -> bool:
    return isinstance(s, FuncCall) and isinstance(s.func, Barrier)


def _build_graph(ir: Stmt, slm: frozenset[str]) -> _Graph:
    """The graph of ``ir`` (a tree: no statement object twice); nothing flows into its entry or out of its exit."""
    build = _Regions(slm)
    build.visit(ir)
    return build.g


class _Regions(IRVisitor):
    """Each statement becomes a region ``(entry, exit)`` of the graph, built bottom-up as the walk
    leaves it (its children's regions are made by then)."""

    statements_only = True

    def __init__(self, slm: frozenset[str]):
        self.slm, self.g = slm, _Graph()
        self.regions: dict[int, tuple[int, int]] = {}

    def touches(self, s: Stmt) -> bool:
        if isinstance(s, FuncCall) and isinstance(s.func, (BarrierSignal, BarrierWait)):
            return True
        return any(isinstance(n, Var) and n.name in self.slm for e in own_exprs(s) for n in distinct_nodes(e))

    def leave_Stmt(self, s: Stmt) -> None:
        g, regions = self.g, self.regions
        head = g.node(_BARRIER if _is_barrier(s) else (_ACCESS if self.touches(s) else _NOP), s)
        if isinstance(s, For):
            b_in, b_out = regions[id(s.body)]
            tail = g.node(_NOP)
            g.edge(head, b_in)
            g.edge(b_out, b_in)  # next iteration
            g.edge(b_out, tail)
            trips = trip_count(s)
            if trips is None or trips == 0:
                g.edge(head, tail)
            regions[id(s)] = (head, tail)
        elif isinstance(s, If):
            tail = g.node(_NOP)
            for branch in (s.then, s.else_):
                if branch is None:
                    g.edge(head, tail)
                else:
                    b_in, b_out = regions[id(branch)]
                    g.edge(head, b_in)
                    g.edge(b_out, tail)
            regions[id(s)] = (head, tail)
        else:  # sequential: let, alloc, group, seq, leaves
            last = head
            for k in child_stmts(s):
                k_in, k_out = regions[id(k)]
                g.edge(last, k_in)
                last = k_out
            regions[id(s)] = (head, last)


def _dirty(g: _Graph, edges: list[list[int]], against: list[list[int]]) -> list[bool]:
    """Per node, whether an access may have happened since the last barrier, flowing along ``edges``.

    The value is the node's *input* state; ``against`` lists each node's
    inputs (the reverse of ``edges``). Monotone booleans: a worklist converges.
    """
    n = len(g.kind)
    state_in = [False] * n

    def out(i: int) -> bool:
        k = g.kind[i]
        return True if k == _ACCESS else (False if k == _BARRIER else state_in[i])

    work = list(range(n))
    while work:
        i = work.pop()
        new = any(out(p) for p in against[i])
        if new and not state_in[i]:
            state_in[i] = True
            work.extend(edges[i])
    return state_in


def _redundant(ir: Stmt, slm: frozenset[str], forward: bool) -> set[int]:
    g = _build_graph(ir, slm)
    preds = g.preds()
    edges, against = (g.succ, preds) if forward else (preds, g.succ)
    state = _dirty(g, edges, against)
    return {id(g.stmt[i]) for i, k in enumerate(g.kind) if k == _BARRIER and not state[i]}


class _Drop(IRMutator):
    def __init__(self, dead: set[int]):
        self.dead = dead

    def pre_Stmt(self, s):
        return Seq.make(()) if id(s) in self.dead else None


def remove_redundant_barriers(ir: Stmt, options: Mapping[str, Any] | None = None) -> Stmt:
    """``ir`` without barriers that order no SLM access; the same object when all are needed."""
    stmts = statements(ir)  # barriers and allocations are statements: no expression walked
    if not any(_is_barrier(n) for n in stmts):
        return ir
    slm = frozenset(n.buf.name for n in stmts if isinstance(n, Alloc) and n.kind is MemKind.SLM)
    tree = unshare_statements(ir)
    out = tree
    for forward in (True, False):
        dead = _redundant(out, slm, forward)
        if dead:
            out = _Drop(dead).mutate(out)
    return ir if out is tree else out
