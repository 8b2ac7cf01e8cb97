"""Structural helpers the passes share: binders, DAG-aware walks, statement unsharing.

IR is a DAG: a builder may put the same statement object (a ``barrier``
call, say) at several places. Passes that act on *positions* (remove this
barrier, insert a let around that statement) first make every statement
object occur once with :func:`unshare_statements`; expressions stay shared.
"""
from __future__ import annotations

from typing import Callable, Mapping

from ..ir.expr import Expr, Load, Var
from ..ir.node import Node
from ..ir.stmt import Alloc, For, Let, Seq, Stmt, trip_count  # noqa: F401 - the passes' name for it
from ..ir.visitor import IRMutator, IRVisitor, distinct_nodes, var_names  # noqa: F401 - the passes' names for them


def binder(s: Node) -> Var | None:
    """The variable a ``let``, ``for`` or ``alloc`` binds for its body, else None."""
    if isinstance(s, (Let, For)):
        return s.var
    if isinstance(s, Alloc):
        return s.buf
    return None


def own_exprs(s: Stmt) -> tuple[Expr, ...]:
    """The expressions a statement evaluates itself (not those of nested statements).

    A ``let`` binds a value, a ``for`` its bounds; the bound variables
    themselves are not uses.
    """
    if isinstance(s, Let):
        return (s.value,)
    if isinstance(s, For):
        return (s.init, s.bound)
    if isinstance(s, (Alloc, Seq)):  # a sequence holds statements only (``Seq.make`` checks)
        return ()
    return tuple([k for k in s._children_of(s) if isinstance(k, Expr)])  # a list first: no generator to resume


def child_stmts(s: Stmt) -> tuple[Stmt, ...]:
    return s._stmts_of(s)


def has_load(e: Expr) -> bool:
    """Whether evaluating ``e`` reads memory (its value may change between statements)."""
    return any(isinstance(n, Load) for n in distinct_nodes(e))


def expr_vars(e: Expr) -> set[Var]:
    """Variables ``e`` reads (buffers of loads included)."""
    return {n for n in distinct_nodes(e) if isinstance(n, Var)}


def read_names(s: Stmt) -> set[str]:
    """Names of the variables statement ``s``'s own expressions read (buffers of loads included)."""
    return var_names(*own_exprs(s))


class StatementReads:
    """:func:`read_names` of the statements of one tree, each expression object walked once: an unrolled
    kernel's statements name about ten times as many expressions as there are distinct ones, most of them
    bare variables. The tree must outlive this (an expression is remembered by its id)."""

    def __init__(self):
        self._names: dict[int, set[str]] = {}  # id of a non-leaf expression -> the names it reads

    def __call__(self, s: Stmt) -> set[str]:
        names: set[str] = set()
        for root in own_exprs(s):
            if root.__class__ is Var:
                names.add(root.name)
            elif root._children_of(root):
                hit = self._names.get(id(root))
                if hit is None:
                    hit = self._names[id(root)] = var_names(root)
                names |= hit
        return names


def unshare_statements(root: Stmt) -> Stmt:
    """``root`` with every statement object occurring once (expressions stay shared).

    Returns ``root`` itself when it already is a tree of statements.
    """
    if not _Sharing().of(root):
        return root
    return _Unshare().mutate(root)


class _Sharing(IRVisitor):
    """Whether a statement object occurs twice in a tree."""

    statements_only = True

    def of(self, root: Stmt) -> bool:
        self.seen: set[int] = set()
        self.shared = False
        self.visit(root)
        return self.shared

    def visit_Stmt(self, s: Stmt) -> bool:
        if self.shared or id(s) in self.seen:
            self.shared = True
            return False
        self.seen.add(id(s))
        return True


class _Unshare(IRMutator):
    """Rebuilds statements bottom-up; a statement object met again is copied (its children too)."""

    memoize = False  # each occurrence is its own statement

    def __init__(self):
        self.seen: set[int] = set()

    def mutate_Stmt(self, old: Stmt, new: Stmt) -> Stmt:
        if new is old and id(old) in self.seen:
            new = type(old)(*old.field_values(), origin=old.origin)
        self.seen.add(id(new))
        return new


class ReplaceNodes(IRMutator):
    """Replaces node objects (by identity, wherever they occur) with the nodes ``replace`` maps their ids to."""

    def __init__(self, replace: Mapping[int, Node]):
        self.replace = replace

    def pre_Node(self, node):
        return self.replace.get(id(node))


def replace_node(root: Node, old: Node, new: Node) -> Node:
    """``root`` with the object ``old`` (identity, wherever it occurs) replaced by ``new``."""
    return ReplaceNodes({id(old): new}).mutate(root)


class DropLets(IRMutator):
    """Removes the lets ``drop`` selects; their bodies stay."""

    def __init__(self, drop: Callable[[Let], bool]):
        self.drop = drop

    def mutate_Let(self, old: Let, new: Let):
        return new.body if self.drop(old) else new

