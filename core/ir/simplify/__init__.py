"""The simplifier: canonical linear forms, bounds/alignment analysis and per-operator rules.

See ``docs/simplifier.md`` for the canonical order and every rule family.
"""
from __future__ import annotations

from typing import Any, Mapping

from ..expr import Expr
from ..gc_pause import gc_paused
from ..node import Node
from .engine import Simplifier
from .facts import Facts
from .linear import LinearForm, LinearForms, is_int_scalar
from .order import Structure
from .stmt import simplify_stmt

Ranges = Mapping[Any, tuple]


def simplify(node: Node, ranges: Ranges | None = None) -> Node:
    """``node`` (an expression or a statement) simplified; the same object when nothing changes.

    ``ranges`` maps variables (``Var`` objects or names) to inclusive ``(lo, hi)``
    bounds (``None`` for an open end) that hold wherever the variables occur.
    """
    with gc_paused():
        if isinstance(node, Expr):
            return Simplifier(Facts(ranges)).expr(node)
        return simplify_stmt(node, ranges)


def bounds_of(expr: Expr, ranges: Ranges | None = None) -> tuple[int | None, int | None]:
    """Inclusive ``(lo, hi)`` of the values ``expr`` can take (``None`` for an unbounded end).

    Integer expressions are always bounded, at worst by their type (after any
    wrap-around); bools give ``(0, 1)`` unless decided; floats give ``(None, None)``.
    """
    info = Simplifier(Facts(ranges)).info(expr)
    return (None, None) if info is None else (info.lo, info.hi)


def alignment_of(expr: Expr, ranges: Ranges | None = None) -> tuple[int, int]:
    """``(modulus, remainder)``: ``expr == remainder (mod modulus)`` for every value it takes.

    Modulus 0 means the value is exactly ``remainder``; ``(1, 0)`` means nothing is known.
    """
    info = Simplifier(Facts(ranges)).info(expr)
    return (1, 0) if info is None else (info.mod, info.rem)


def linear_form(expr: Expr) -> LinearForm:
    """The canonical linear form of an integer scalar expression (see ``linear.py``)."""
    if not is_int_scalar(expr):
        raise TypeError(f"linear_form needs a scalar integer expression, got type {expr.type}")
    return LinearForms(Structure()).of(expr)


__all__ = ["LinearForm", "alignment_of", "bounds_of", "linear_form", "simplify"]
