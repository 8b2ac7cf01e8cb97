"""Fresh variable names for passes, and renaming of the variables a statement binds.

IR variables compare by name and type, and names are unique in a kernel, so
every variable a pass introduces (a CSE temporary, a hoisted sum, a message
header, an unrolled copy's let) gets a name no other variable of the kernel has.
"""
from __future__ import annotations

from typing import Iterable, Mapping

from ..ir.expr import Expr, Var
from ..ir.names import Names
from ..ir.node import Node
from ..ir.simplify.engine import fold_immediates
from ..ir.stmt import Stmt
from ..ir.visitor import post_order, statements
from .tree import binder


def bound_vars(s: Stmt) -> list[Var]:
    """Variables bound by ``let``, ``for`` and ``alloc`` statements inside ``s`` (``s`` included)."""
    return [v for v in map(binder, statements(s)) if v is not None]  # no expression binds a variable


def rename_bound(s: Stmt, names: Names, mapping: dict | None = None) -> Stmt:
    """``s`` with every variable bound inside it renamed to a fresh name.

    ``mapping`` adds substitutions for free variables (an unrolled copy maps
    the loop variable to ``k + j*step``). A copy of a statement made this way
    can sit next to the original without two binders sharing a name.
    """
    mapping = mapping or {}
    return Copies(s, mapping).copy(mapping, names)


class Copies:
    """Many copies of one statement, each with some free variables replaced (``rename_bound`` for each).

    The nodes that mention a variable a copy may replace (one of ``replaced`` or
    a variable bound inside the statement) are found once, children before
    parents, with where each one's rebuilt children come from; every copy then
    rebuilds only those, in that order, and shares the rest with the original,
    instead of walking the whole statement per copy (unrolling makes up to 64
    copies). A rebuilt operation whose operands all became immediates is folded
    on the spot (``(8 % 2) * 32`` is ``0`` in the copy where ``k`` is 8), so the
    copies are no bigger than they need to be when the simplifier meets them.
    """

    def __init__(self, s: Stmt, replaced: Iterable[Var]):
        self.stmt = s
        self.bound = bound_vars(s)
        keys = set(replaced) | set(self.bound)
        touched: dict[int, bool] = {}
        # (node, None) for a variable; else (node, per child its position in the plan or -1 when it is
        # shared as is, whether the node is an expression)
        self._plan: list[tuple[Node, tuple[int, ...] | None, bool]] = []
        at: dict[int, int] = {}
        for node in post_order(s, done=touched):
            if isinstance(node, Var):
                hit = touched[id(node)] = node in keys
                if hit:
                    at[id(node)] = len(self._plan)
                    self._plan.append((node, None, True))
                continue
            slots = tuple(at.get(id(k), -1) for k in node._children_of(node))
            hit = touched[id(node)] = any(i >= 0 for i in slots)
            if hit:
                at[id(node)] = len(self._plan)
                self._plan.append((node, slots, isinstance(node, Expr)))
        self._root_touched = id(s) in at

    def renaming(self, names: Names, after: Mapping[Var, Var] | None = None) -> dict[Var, Var]:
        """A fresh variable for each variable bound inside the statement (asked in program order),
        named after the variable ``after`` maps it to where it does (a copy of a copy: the names the
        statement's variables got in that copy), else after itself."""
        out: dict[Var, Var] = {}
        for v in self.bound:
            if v not in out:
                out[v] = names.fresh((after.get(v, v) if after else v).name, v.type)
        return out

    def copy(self, mapping: Mapping[Var, Expr], names: Names | None = None) -> Stmt:
        """The statement with ``mapping`` applied (keys among ``replaced`` and the bound variables) and,
        with ``names``, every other variable bound inside it renamed to a fresh name."""
        if not self._root_touched:
            return self.stmt
        subst = dict(mapping)
        if names is not None:
            for v in self.bound:
                if v not in subst:
                    subst[v] = names.fresh(v.name, v.type)
        # Values of their variables' types (every caller's but a Python number's) keep every copied
        # node's type: the copies are stored as they are, not built again through the checks.
        same_types = all(isinstance(e, Expr) and e.type == v.type for v, e in subst.items())
        built: list[Node] = []
        for node, slots, is_expr in self._plan:
            if slots is None:
                built.append(subst.get(node, node))
                continue
            kids = [built[i] if i >= 0 else k for i, k in zip(slots, node._children_of(node))]
            new = node.with_same_typed_children(kids) if same_types else node.with_children(kids)
            built.append(fold_immediates(new) if is_expr and new is not node else new)
        return built[-1]
