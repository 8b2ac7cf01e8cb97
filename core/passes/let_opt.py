"""Let optimization: inline trivial lets, merge redundant ones, drop unused ones.

- *trivial*: a let whose value is a variable or an immediate is substituted
  into its body (it names nothing a register would hold);
- *redundant*: a let whose value equals the value of a let already in scope
  reuses that let's variable, when the value reads no memory (expressions
  are pure, and with kernel-unique names equal text means equal value);
- *unused*: a let whose variable is read nowhere is dropped, and dropping it
  may leave the variables its value read unused in turn.

Every step is linear in the size of the tree and iterative. Variable names
are unique in a kernel (``docs/ir-semantics.md``); where a builder reused a
name, the unused-let count is per name, which only keeps more lets.
"""
from __future__ import annotations

from typing import Any, Mapping

from ..ir.expr import Expr, Var
from ..ir.node import Node
from ..ir.stmt import Let, Stmt
from ..ir.visitor import IRMutator, substitute
from .opcount import is_trivial
from .tree import distinct_nodes, has_load, own_exprs


class _Drop(IRMutator):
    def __init__(self, dead: set[str]):
        self.dead = dead

    def mutate_Let(self, old: Let, new: Let):
        return new.body if old.var.name in self.dead else new


def remove_unused_lets(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` without unused lets; the same object when every let is used."""
    reads: dict[str, int] = {}  # variable name -> statements reading it
    lets: dict[str, list[Let]] = {}
    for s in distinct_nodes(ir):
        if not isinstance(s, Stmt):
            continue
        if isinstance(s, Let):
            lets.setdefault(s.var.name, []).append(s)
        for name in _reads(s):
            reads[name] = reads.get(name, 0) + 1
    work = [name for name in lets if not reads.get(name)]
    dead: set[str] = set()
    while work:
        name = work.pop()
        if name in dead:
            continue
        dead.add(name)
        for let in lets[name]:
            for used in _reads(let):
                reads[used] -= 1
                if not reads[used] and used in lets:
                    work.append(used)
    return _Drop(dead).mutate(ir) if dead else ir


def _reads(s: Stmt) -> set[str]:
    return {n.name for e in own_exprs(s) for n in distinct_nodes(e) if isinstance(n, Var)}


def inline_lets(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` with trivial lets substituted and redundant lets merged into the earlier one."""
    if not isinstance(ir, Stmt):
        return ir
    env: dict[Var, Expr] = {}  # variable -> what replaces it
    bound: dict[Expr, Var] = {}  # pure value -> the variable in scope holding it
    out: list[Node] = []
    # Frames: ("enter", stmt, sink), ("leave", stmt, sink, exprs, results), ("forget", var, value)
    stack: list[tuple] = [("enter", ir, out)]
    while stack:
        frame = stack.pop()
        if frame[0] == "forget":
            env.pop(frame[1], None)
            if frame[2] is not None:
                del bound[frame[2]]
            continue
        if frame[0] == "leave":
            _, s, sink, exprs, results = frame
            it = iter(results)
            sink.append(s.with_children([next(it) if e is None else e for e in exprs]))
            continue
        _, s, sink = frame
        if isinstance(s, Let):
            value = substitute(s.value, env) if env else s.value
            pure = not has_load(value)
            same = value if is_trivial(value) else (bound.get(value) if pure else None)
            if same is not None:
                env[s.var] = same
                stack.append(("forget", s.var, None))
                stack.append(("enter", s.body, sink))
                continue
            key = value if pure and value not in bound else None
            if key is not None:
                bound[key] = s.var
            stack.append(("forget", s.var, key))
            exprs = [s.var, value, None]
        else:
            exprs = [None if isinstance(k, Stmt) else (substitute(k, env) if env else k) for k in s.children()]
        results: list[Node] = []
        stack.append(("leave", s, sink, exprs, results))
        stack.extend(("enter", k, results) for k in reversed([k for k in s.children() if isinstance(k, Stmt)]))
    return out[0]


def optimize_lets(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """Trivial and redundant lets inlined, then unused lets removed; the same object when none apply."""
    return remove_unused_lets(inline_lets(ir))
