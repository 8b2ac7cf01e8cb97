"""Peephole fusion of integer arithmetic into three-operand instructions.

``(a + b) + c`` becomes ``add3(a, b, c)`` and ``a + b * c`` (either operand
order) becomes ``mad(a, b, c)``, on targets that have the instruction
(``Target.fused_int_ops``). A fusion applies only when the inner operation has the type
of the outer one: then both forms compute the exact sum modulo ``2**bits``
and agree bit for bit, while a narrower inner operation would have wrapped
where the fused one does not. Float arithmetic is left alone (address
arithmetic is what this pass is for).
"""
from __future__ import annotations

from typing import Any, Mapping

from ..ir.expr import Binary, Op, Ternary
from ..ir.node import Node
from ..ir.visitor import IRMutator
from ..targets import TARGETS

_FUSIONS = {"add3": Op.ADD3, "mad": Op.MAD}


class _Fuse(IRMutator):
    def __init__(self, ops: frozenset[Op]):
        self.ops = ops

    def mutate_Binary(self, old: Binary, new: Binary):
        if new.op is not Op.ADD or not new.type.is_int:
            return new
        for inner, other in ((new.a, new.b), (new.b, new.a)):
            if not isinstance(inner, Binary) or inner.type != new.type:
                continue
            if inner.op is Op.ADD and Op.ADD3 in self.ops:
                return Ternary.make(Op.ADD3, inner.a, inner.b, other, origin=new.origin)
            if inner.op is Op.MUL and Op.MAD in self.ops:
                return Ternary.make(Op.MAD, other, inner.a, inner.b, origin=new.origin)
        return new


def fuse_arith(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` with add+add fused to ``add3`` and mul+add to ``mad`` where ``options["target"]`` has them."""
    name = (options or {}).get("target")
    if name not in TARGETS:
        return ir
    ops = frozenset(_FUSIONS[op] for op in TARGETS[name].fused_int_ops.ops)
    if not ops:
        return ir
    return _Fuse(ops).mutate(ir)
