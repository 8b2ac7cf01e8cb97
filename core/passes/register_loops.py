"""Marks for full unrolling every loop whose variable chooses a register.

A register is named inside the instruction (an Xe GRF number, a PTX
register), so a loop whose index reaches a register operand's offset (the
register side of a ``send``, the operands of ``mad``/``dpas``/``mma``, a
``reorder``, a load or store of an ``alloc.grf`` buffer) cannot remain a
loop in assembly: the builder's message loops and FMA loops are such loops.
This pass only sets ``for ... [unroll n]`` with ``n`` the trip count on
those loops (and on nothing the config already marked), which changes no
value; the ``unroll`` pass later unrolls them, and ``strength_reduce``
leaves alone what will not stay a loop. Dependence goes through lets: a
variable reaches a register offset when a let built from it does.
"""
from __future__ import annotations

from typing import Any, Mapping

from ..ir.expr import Expr, Load
from ..ir.funcs import Dp4a, Dpas, Eltwise, Mad, Mma, Reduce, Reorder, Send, Send2D
from ..ir.node import Node
from ..ir.stmt import Alloc, For, FuncCall, Let, MemKind, Stmt, Store
from ..ir.visitor import IRMutator
from .tree import distinct_nodes, expr_vars, trip_count

# Operands holding register offsets, per function kind.
_FMA_OFFSETS = ("dst_offset", "src0_offset", "src1_offset", "src2_offset")
_REG_OFFSETS = {Send: ("reg_offset",), Send2D: ("reg_offset",), Mad: _FMA_OFFSETS, Dp4a: _FMA_OFFSETS,
                Dpas: _FMA_OFFSETS,
                Mma: ("d_offset", "a_offset", "b_offset", "c_offset"),
                Reorder: ("src_offset", "dst_offset"), Reduce: ("src_offset", "dst_offset"), Eltwise: ("offset",)}


def _register_offsets(ir: Node, grf: set[str]) -> list[Expr]:
    out: list[Expr] = []
    for n in distinct_nodes(ir):
        if isinstance(n, FuncCall):
            ops = n.ops
            out.extend(getattr(ops, name) for name in _REG_OFFSETS.get(type(n.func), ()))
        elif isinstance(n, (Load, Store)) and n.buf.name in grf:
            out.append(n.offset)
    return out


def register_index_vars(ir: Node) -> set[str]:
    """Names of the variables whose value reaches a register offset (through lets)."""
    grf = {n.buf.name for n in distinct_nodes(ir) if isinstance(n, Alloc) and n.kind is MemKind.GRF}
    reach = {v.name for e in _register_offsets(ir, grf) for v in expr_vars(e)}
    lets = [n for n in distinct_nodes(ir) if isinstance(n, Let)]
    for let in reversed(lets):  # a let's value only reads variables bound before it
        if let.var.name in reach:
            reach |= {v.name for v in expr_vars(let.value)}
    return reach


class _Mark(IRMutator):
    def __init__(self, reach: set[str]):
        self.reach = reach

    def mutate_For(self, old: For, new: For):
        trips = trip_count(new)
        if new.unroll > 1 or trips is None or trips < 2 or new.var.name not in self.reach:
            return new
        return For.make(new.var, new.init, new.bound, new.body, new.step, trips, origin=new.origin)


def mark_register_loops(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` with register-indexed loops marked ``[unroll <trips>]``; the same object when none."""
    if not isinstance(ir, Stmt):
        return ir
    reach = register_index_vars(ir)
    return _Mark(reach).mutate(ir) if reach else ir


def stays_loop(loop: For) -> bool:
    """Whether ``loop`` survives unrolling as a loop (not marked for complete unrolling)."""
    trips = trip_count(loop)
    return trips is None or loop.unroll < trips

