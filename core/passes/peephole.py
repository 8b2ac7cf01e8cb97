"""Peephole fusion of integer arithmetic into three-operand instructions.

``(a + b) + c`` becomes ``add3(a, b, c)`` and ``a + b * c`` (either operand
order) becomes ``mad(a, b, c)``, on targets that have the instruction
(``Target.fused_int_ops``), and only in a form the target encodes: integer
widths up to ``max_bits`` and immediates only at the operand positions and
widths the target takes (Xe: 16-bit immediates in src0 or src2), trying the
orders that the sum's and the product's commutativity allow. An immediate that
fits nowhere leaves the ``mul``/``add`` alone, whose immediates are 32 bits.

A fusion applies only when the inner operation has the element type of the
outer one (a scalar inner operation adds the same to every lane of a vector
one: a header's ``base + (ic*2 + 768)``): then both forms compute the exact
sum modulo ``2**bits`` and agree bit for bit, while a narrower inner operation
would have wrapped where the fused one does not. Float arithmetic is left alone (address arithmetic is what this
pass is for).
"""
from __future__ import annotations

from typing import Any, Mapping

from ..ir.expr import Binary, Expr, IntImm, Op, Ternary
from ..ir.node import Node
from ..ir.visitor import IRMutator
from ..targets import FusedIntOps
from .options import target_of


def fused_problem(fused: FusedIntOps, e: Ternary) -> str | None:
    """Why the ``add3``/``mad`` ``e`` is not an instruction ``fused`` encodes; None when it is."""
    imms = {i: x.value for i, x in enumerate((e.a, e.b, e.c)) if isinstance(x, IntImm)}
    return fused.problem(e.op.name.lower(), e.type.scalar.bits, imms)


class _Fuse(IRMutator):
    def __init__(self, fused: FusedIntOps):
        self.fused = fused

    def mutate_Binary(self, old: Binary, new: Binary):
        if new.op is not Op.ADD or not new.type.is_int:
            return new
        for inner, other in ((new.a, new.b), (new.b, new.a)):
            if not isinstance(inner, Binary) or inner.type.scalar is not new.type.scalar \
                    or inner.type.lanes not in (1, new.type.lanes):
                continue
            if inner.op is Op.ADD:
                x, y = inner.a, inner.b
                orders = ((x, y, other), (other, y, x), (x, other, y), (y, x, other), (other, x, y), (y, other, x))
                fused = self._encodable(Op.ADD3, orders, new)
            elif inner.op is Op.MUL:
                fused = self._encodable(Op.MAD, ((other, inner.a, inner.b), (other, inner.b, inner.a)), new)
            else:
                continue
            if fused is not None:
                return fused
        return new

    def _encodable(self, op: Op, orders, outer: Binary) -> Expr | None:
        for a, b, c in orders:
            e = Ternary.make(op, a, b, c, origin=outer.origin)
            if fused_problem(self.fused, e) is None:
                return e
        return None


def fuse_arith(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` with add+add fused to ``add3`` and mul+add to ``mad`` where ``options["target"]`` encodes them."""
    target = target_of(options or {})
    if target is None or not target.fused_int_ops.ops:
        return ir
    return _Fuse(target.fused_int_ops).mutate(ir)
