"""Fresh variable names for passes, and renaming of the variables a statement binds.

IR variables compare by name and type, and names are unique in a kernel, so
every variable a pass introduces (a CSE temporary, a hoisted sum, a message
header, an unrolled copy's let) gets a name no other variable of the kernel has.
"""
from __future__ import annotations

from ..ir.expr import Var
from ..ir.node import Node
from ..ir.stmt import Stmt
from ..ir.types import Type
from ..ir.visitor import substitute
from .tree import binder, distinct_nodes, var_names


class NameSource:
    """Hands out names unused in one kernel: ``base``, ``base_1``, ``base_2``...

    The kernel's names are collected on the first request: most pass runs
    change nothing and never pay for the walk.
    """

    def __init__(self, ir: Node):
        self._ir = ir
        self._used: set[str] | None = None

    def fresh(self, base: str, type: Type) -> Var:
        if self._used is None:
            self._used = var_names(self._ir)
        name, k = base, 0
        while name in self._used:
            k += 1
            name = f"{base}_{k}"
        self._used.add(name)
        return Var.make(type, name)


def bound_vars(s: Stmt) -> list[Var]:
    """Variables bound by ``let``, ``for`` and ``alloc`` statements inside ``s`` (``s`` included)."""
    out = []
    for node in distinct_nodes(s):
        v = binder(node)
        if v is not None:
            out.append(v)
    return out


def rename_bound(s: Stmt, names: NameSource, mapping: dict | None = None) -> Stmt:
    """``s`` with every variable bound inside it renamed to a fresh name.

    ``mapping`` adds substitutions for free variables (an unrolled copy maps
    the loop variable to ``k + j*step``). A copy of a statement made this way
    can sit next to the original without two binders sharing a name.
    """
    subst = dict(mapping or {})
    for v in bound_vars(s):
        if v not in subst:
            subst[v] = names.fresh(v.name, v.type)
    return substitute(s, subst)
