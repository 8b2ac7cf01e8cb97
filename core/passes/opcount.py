"""Counting the integer (address) arithmetic an expression costs.

An *integer operation* is one instruction of index or address arithmetic: a
binary arithmetic operator, a negation or bit inversion, an ``add3``/``mad``,
or a conversion between integer types of different sizes (one of the same
size is a retype), whose result is an integer. Comparisons,
logic and float arithmetic are not address arithmetic and are not counted.
Counts are per occurrence, as code generation evaluates a tree: an operand
object shared twice inside one expression costs twice unless CSE named it.
"""
from __future__ import annotations

from ..ir.expr import (Binary, BoolImm, Cast, Expr, FloatImm, IntImm, Op, Ternary, Unary, Var)
from ..ir.node import Node
from ..ir.visitor import post_order

_ARITH = frozenset({Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.MOD, Op.DIV_UP, Op.MIN, Op.MAX, Op.SHL,
                    Op.SHR, Op.BIT_AND, Op.BIT_OR, Op.BIT_XOR, Op.NEG, Op.BIT_NOT, Op.ADD3, Op.MAD})


def is_int_op(e: Node) -> bool:
    """Whether ``e`` itself (not counting operands) is one integer operation."""
    if not isinstance(e, Expr) or not e.type.is_int:
        return False
    if isinstance(e, (Binary, Unary)):
        return e.op in _ARITH
    if isinstance(e, Ternary):
        return e.op is not Op.IIF
    if isinstance(e, Cast):
        return e.a.type.is_int and not is_retype(e)
    return False


def is_retype(e: Cast) -> bool:
    """A conversion that only reinterprets a register (same type, or integers of one size without
    saturation: ``s32 -> u32``): the code generator emits no instruction for it."""
    a, t = e.a.type, e.type
    return a.scalar is t.scalar or (a.is_int and t.is_int and a.scalar.size == t.scalar.size and not e.saturate)


def int_ops(e: Node, totals: dict[int, int] | None = None) -> int:
    """Integer operations evaluating ``e`` costs, counting each occurrence (iterative).

    ``totals`` (node id -> its count) may be shared by the calls on expressions that share subtrees (an
    unrolled loop's copies): each distinct object is counted once over them all. The caller keeps those
    expressions alive while it uses the dict (an id is an object's only while the object lives)."""
    if totals is None:
        totals = {}  # per distinct object: a shared subtree is counted once, weighed per use
    for node in post_order(e, done=totals):
        totals[id(node)] = int(is_int_op(node)) + sum(totals[id(k)] for k in node._children_of(node))
    return totals[id(e)]


def is_trivial(e: Expr) -> bool:
    """A variable or an immediate: nothing to compute, nothing worth naming."""
    return isinstance(e, (Var, IntImm, FloatImm, BoolImm))
