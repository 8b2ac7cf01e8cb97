"""Folding expression constructors, Halide's IROperator style: index arithmetic folded as it is built.

``add``, ``mul``, ``div`` and ``mod`` build integer arithmetic with its trivial
cases folded (:func:`fold_binary`): constants, ``x + 0``, ``x * 1``,
``x * 0``, ``(x * a) * b``, ``(x * a) / b`` and ``(x * a) % b`` where ``b``
divides ``a``; ``x / 1`` and ``x % 1`` as well. The builder writes offsets and
indices the obvious way (a tile's index times a stride that may be one, plus
a start that may be zero) through them, so the skeleton IR, which is printed
and interpreted before any pass runs, reads as a person would write it, with
no folding step of the builder's own; :func:`fold` rebuilds a tree through
the same rules where constants were substituted into it.

``Binary.make`` and the Python operators on expressions fold nothing: the
passes build and rebuild nodes through them, and what a pass emits stays the
pass's own doing (folding in ``+`` would change the IR after buffering,
prefetch and register-loops, before the simplifier runs).
"""
from __future__ import annotations

from .c_arith import c_div, c_mod
from .expr import Binary, Expr, IntImm, Op, as_expr, binary, common_type
from .types import s32
from .visitor import IRMutator

Index = Expr | int

_FOLDS = {
    Op.ADD: lambda a, b: a + b, Op.SUB: lambda a, b: a - b, Op.MUL: lambda a, b: a * b,
    Op.DIV: c_div, Op.MOD: c_mod,
}


def is_const(e: Index, value: int | None = None) -> bool:
    """Whether ``e`` is an integer constant (equal to ``value`` when given)."""
    if isinstance(e, int):
        return value is None or e == value
    return isinstance(e, IntImm) and (value is None or e.value == value)


def value_of(e: Index) -> int:
    """The value of integer constant ``e``."""
    return e if isinstance(e, int) else e.value


def add(*terms: Index) -> Expr:
    """The sum of ``terms``, index arithmetic (terms signed, of 32 bits or more): constants added
    together (an all-constant sum is s32) and written last, zeros dropped, ``x - 5`` for ``x + -5``."""
    total = 0
    rest: list[Expr] = []
    for t in terms:
        if is_const(t):
            total += value_of(t)
        else:
            rest.append(t)
    if not rest:
        return IntImm.make(s32, total)
    out = rest[0]
    for t in rest[1:]:
        out = out + t
    if total > 0:
        out = out + total
    elif total < 0:
        out = out - (-total)
    return out


def mul(a: Index, b: Index) -> Expr:
    """``a * b``, folded (:func:`fold_binary`)."""
    return _make(Op.MUL, a, b)


def div(a: Index, b: Index) -> Expr:
    """``a / b`` (C division), folded (:func:`fold_binary`; also ``x / 1`` is ``x``)."""
    e = _make(Op.DIV, a, b)
    return e.a if _by_one(e, Op.DIV) and e.a.type == e.type else e


def mod(a: Index, b: Index) -> Expr:
    """``a % b`` (C remainder), folded (:func:`fold_binary`; also ``x % 1`` is 0 on s32)."""
    e = _make(Op.MOD, a, b)
    return IntImm.make(s32, 0) if _by_one(e, Op.MOD) and e.type == s32 else e


def _by_one(e: Expr, op: Op) -> bool:
    return e.__class__ is Binary and e.op is op and e.b.__class__ is IntImm and e.b.value == 1


def _make(op: Op, a: Index, b: Index) -> Expr:
    if isinstance(a, int) and isinstance(b, int):
        a = as_expr(a)
    e = binary(op, a, b)
    folded = fold_binary(e.op, e.a, e.b)
    return e if folded is None else folded


def fold_binary(op: Op, a: Expr, b: Expr) -> Expr | None:
    """The trivial value of integer ``a op b`` (``+ - * / %``), or None where it has none.

    s32 constants fold (C division and remainder, wrapped); ``x + 0``, ``x - 0``, ``0 + x``,
    ``x * 1`` and ``1 * x`` are ``x`` where that keeps the result's type; on s32, ``x * 0`` is 0,
    ``(x * a) * b`` is ``x * (a * b)``, and where ``b > 0`` divides ``a``, ``(x * a) / b`` is
    ``x * (a / b)`` and ``(x * a) % b`` is 0 (exact in C's semantics, overflow wrapping alike).
    """
    if op not in _FOLDS or not (a.type.is_int and b.type.is_int):
        return None
    t = common_type(a.type, b.type)
    a_imm, b_imm = a.__class__ is IntImm, b.__class__ is IntImm
    if a_imm and b_imm and t == s32:
        return IntImm.make(s32, _FOLDS[op](a.value, b.value))
    if b_imm and (b.value == 0 and op in (Op.ADD, Op.SUB) or b.value == 1 and op is Op.MUL):
        return a if a.type == t else None
    if a_imm and (a.value == 0 and op is Op.ADD or a.value == 1 and op is Op.MUL):
        return b if b.type == t else None
    if t != s32:
        return None
    if op is Op.MUL and (a_imm and a.value == 0 or b_imm and b.value == 0):
        return IntImm.make(s32, 0)
    if b_imm and b.value > 0 and a.__class__ is Binary and a.op is Op.MUL and a.b.__class__ is IntImm \
            and a.type == s32:
        inner, c = a.a, a.b.value
        if op is Op.MUL:
            return mul(inner, c * b.value)
        if op is Op.DIV and c % b.value == 0:
            return mul(inner, c // b.value)
        if op is Op.MOD and c % b.value == 0:
            return IntImm.make(s32, 0)
    return None


class _Fold(IRMutator):
    def mutate_Binary(self, old: Binary, new: Binary) -> Expr:
        folded = fold_binary(new.op, new.a, new.b)
        return new if folded is None else folded


def fold(e: Expr) -> Expr:
    """``e`` rebuilt through :func:`fold_binary`, bottom-up (a tree constants were substituted into)."""
    return _Fold().mutate(e)
