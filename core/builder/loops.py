"""Small helpers to emit loop nests whose trip count-1 levels disappear."""
from __future__ import annotations

from typing import Callable, Sequence

from kdd.core.ir.expr import Expr
from kdd.core.ir.names import Names
from kdd.core.ir.stmt import For, Stmt

from . import arith
from .origin import Origin


def nest(names: Names, levels: Sequence[tuple[str, int]], body: Callable[..., Stmt], origin: Origin,
         unroll: Sequence[int] | None = None) -> Stmt:
    """``for`` loops over ``levels`` (``(name, count)``, outermost first) around ``body(*indices)``.

    A level with count 1 emits no loop: its index is the constant 0.
    """
    indices: list[Expr] = []
    made = []
    for k, (base, count) in enumerate(levels):
        if count > 1:
            v = names.fresh(base)
            made.append((v, count, unroll[k] if unroll else 1))
            indices.append(v)
        else:
            indices.append(arith.const(0))
    stmt = body(*indices)
    for v, count, u in reversed(made):
        stmt = For.make(v, 0, count, stmt, unroll=min(u, count) if u > 1 else 1, origin=origin)
    return stmt
