"""Structural helpers the passes share: binders, DAG-aware walks, statement unsharing.

IR is a DAG: a builder may put the same statement object (a ``barrier``
call, say) at several places. Passes that act on *positions* (remove this
barrier, insert a let around that statement) first make every statement
object occur once with :func:`unshare_statements`; expressions stay shared.
"""
from __future__ import annotations

from typing import Callable, Iterator, Mapping

from ..ir.expr import Expr, IntImm, Load, Var
from ..ir.node import Node
from ..ir.stmt import Alloc, For, Let, Stmt
from ..ir.visitor import IRMutator, distinct_nodes, var_names  # noqa: F401 - the passes' names for them


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
    if isinstance(s, Alloc):
        return ()
    return tuple(k for k in s.children() if isinstance(k, Expr))


def child_stmts(s: Stmt) -> tuple[Stmt, ...]:
    return tuple(k for k in s.children() if isinstance(k, Stmt))


def trip_count(loop: For) -> int | None:
    """Iterations of ``loop`` when its bounds are constants, else None."""
    if isinstance(loop.init, IntImm) and isinstance(loop.bound, IntImm):
        span = loop.bound.value - loop.init.value
        return max(0, -(-span // loop.step))
    return None


def has_load(e: Expr) -> bool:
    """Whether evaluating ``e`` reads memory (its value may change between statements)."""
    return any(isinstance(n, Load) for n in distinct_nodes(e))


def expr_vars(e: Expr) -> set[Var]:
    """Variables ``e`` reads (buffers of loads included)."""
    return {n for n in distinct_nodes(e) if isinstance(n, Var)}


def unshare_statements(root: Stmt) -> Stmt:
    """``root`` with every statement object occurring once (expressions stay shared).

    Returns ``root`` itself when it already is a tree of statements.
    """
    seen: set[int] = set()
    shared = False
    for node in _stmt_occurrences(root):
        if id(node) in seen:
            shared = True
            break
        seen.add(id(node))
    if not shared:
        return root
    seen.clear()
    # Rebuild bottom-up; a statement object met again is copied (its children too).
    out: list[Stmt] = []
    stack: list[tuple] = [("enter", root, out)]
    while stack:
        frame = stack.pop()
        node, sink = frame[1], frame[2]
        if frame[0] == "enter":
            results: list[Node] = []
            stack.append(("leave", node, sink, results))
            for k in reversed(list(node.children())):
                if isinstance(k, Stmt):
                    stack.append(("enter", k, results))
                else:
                    stack.append(("keep", k, results))
            continue
        if frame[0] == "keep":
            sink.append(node)
            continue
        kids = frame[3]
        new = node.with_children(kids)
        if new is node and id(node) in seen:
            new = type(node)(*node.field_values(), origin=node.origin)
        seen.add(id(new))
        sink.append(new)
    return out[0]


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


def _stmt_occurrences(root: Stmt) -> Iterator[Stmt]:
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(k for k in node.children() if isinstance(k, Stmt))
