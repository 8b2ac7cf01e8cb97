"""Let optimization: drop lets whose variable is never used in their body.

Expressions have no side effects, so an unused binding can go. The pass walks
the tree once bottom-up, carrying the set of variables each subtree uses, so it
is linear in the tree size (deep let chains included).
"""
from __future__ import annotations

from typing import Any, Mapping

from ..ir.expr import Var
from ..ir.node import Node
from ..ir.stmt import Let


def remove_unused_lets(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` without unused lets; the same object when every let is used."""
    used: dict[int, frozenset] = {}  # id(node) -> names of variables the subtree reads
    results: dict[int, Node] = {}
    stack: list[tuple[Node, bool]] = [(ir, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in results:
            continue
        if not ready:
            stack.append((node, True))
            stack.extend((k, False) for k in node.children() if id(k) not in results)
            continue
        if isinstance(node, Var):
            used[id(node)] = frozenset((node.name,))
            results[id(node)] = node
            continue
        if isinstance(node, Let):
            body_uses = used[id(node.body)]
            if node.var.name not in body_uses:
                results[id(node)] = results[id(node.body)]
                used[id(node)] = body_uses
                continue
        kids = list(node.children())
        new = node.with_children([results[id(k)] for k in kids])
        names = frozenset().union(*(used[id(k)] for k in kids)) if kids else frozenset()
        if isinstance(node, Let):
            names = (names - {node.var.name}) | used[id(node.value)]
        results[id(node)] = new
        used[id(node)] = names
    return results[id(ir)]
