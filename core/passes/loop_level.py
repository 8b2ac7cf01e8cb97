"""What one iteration of a loop computes at its own level, and what that costs.

The *level* of a loop body is everything the body evaluates itself: values
of lets, offsets, values and masks of stores, call arguments, branch
conditions (both sides of an ``if`` count, as in ``metrics``), and the bounds
of nested loops, but not the bodies of nested loops (those run their own
trip counts; hoisting has already moved out of them what depends only on the
outer loop). Strength reduction prices a rewrite of the level by its
integer operations (``opcount.int_ops``) before and after, counting a let
only while something still reads its variable: a rewrite that leaves a let
unread saves that let's operations too (``let-opt`` removes it later).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ..ir.expr import Expr, Var
from ..ir.stmt import For, Let, Stmt
from .opcount import int_ops
from ..ir.visitor import IRVisitor
from .tree import ReplaceNodes, distinct_nodes, expr_vars, own_exprs


@dataclass(frozen=True)
class LevelExpr:
    """One expression of the level, in program order; ``let`` is the variable it binds, if any."""

    expr: Expr
    let: Var | None = None


class _Level(IRVisitor):
    """The expressions of one loop body in program order; the names nested loops read."""

    statements_only = True

    def __init__(self):
        self.entries: list[LevelExpr] = []
        self.nested: set[str] = set()

    def visit_Stmt(self, s: Stmt) -> bool:
        if isinstance(s, Let):
            self.entries.append(LevelExpr(s.value, s.var))
        else:
            self.entries.extend(LevelExpr(e) for e in own_exprs(s))
        if isinstance(s, For):  # a nested loop is a level of its own
            self.nested.update(n.name for n in distinct_nodes(s.body) if isinstance(n, Var))
            return False
        return True


class LoopLevel:
    """The level of one loop body: its expressions in program order, what each costs and reads, and
    which lets are read (by the level or by nested loops).

    Pricing a rewrite is local: only the expressions holding a replaced node are rewritten, and
    lets that lose their last reader are dropped by reference counting, so pricing many small
    candidate rewrites of a long body stays cheap. Replacements are assumed to read no let that
    the replaced expressions did not read (they read new variables: induction variables, counters).
    """

    def __init__(self, body: Stmt):
        level = _Level()
        level.visit(body)
        entries, nested = level.entries, level.nested
        self.entries: tuple[LevelExpr, ...] = tuple(entries)
        counted: dict[int, int] = {}  # the entries' expressions share subtrees: each counted once
        self._ops = [int_ops(x.expr, counted) for x in entries]
        self._reads = [frozenset(v.name for v in expr_vars(x.expr)) for x in entries]
        self._let_at = {x.let.name: i for i, x in enumerate(entries) if x.let is not None}
        self._holders: dict[int, list[int]] = {}
        for i, x in enumerate(entries):
            for n in distinct_nodes(x.expr):
                self._holders.setdefault(id(n), []).append(i)
        # Nested loops count as one reader that never goes away.
        self._readers: dict[str, int] = {name: 1 for name in nested}
        self._live = [x.let is None for x in entries]
        for i in (i for i, x in enumerate(entries) if x.let is None):
            self._read(i)
        # A let's value reads only variables bound before it: walking backwards settles liveness.
        for i in reversed(range(len(entries))):
            if entries[i].let is not None and self._readers.get(entries[i].let.name, 0):
                self._live[i] = True
                self._read(i)
        self._base = sum(c for c, live in zip(self._ops, self._live) if live)
        # An expression rewritten by the same replacements costs the same each time it is priced: a
        # greedy search pricing a growing set prices the set's earlier members' expressions again.
        self._rewritten: dict[tuple, tuple[int, frozenset[str], tuple]] = {}

    def _read(self, i: int) -> None:
        for name in self._reads[i]:
            self._readers[name] = self._readers.get(name, 0) + 1

    def exprs(self) -> list[Expr]:
        return [x.expr for x in self.entries]

    def unread_lets(self) -> set[str]:
        """Names of the level's lets that nothing reads."""
        return {x.let.name for x, live in zip(self.entries, self._live) if not live}

    def cost(self, replace: Mapping[int, Expr] | None = None) -> int:
        """Integer operations of the level with the expressions ``replace`` names (by id) replaced;
        lets nothing reads any more cost nothing."""
        return self._base + self._delta(replace) if replace else self._base

    def _rewrite(self, i: int, replace: dict[int, Expr]) -> tuple[int, frozenset[str]]:
        """The integer operations and variables read of entry ``i`` with ``replace`` (the replacements of
        nodes it holds) applied."""
        memo = (i, *sorted((key, id(e)) for key, e in replace.items()))
        hit = self._rewritten.get(memo)
        if hit is None:
            e = ReplaceNodes(replace).mutate(self.entries[i].expr)
            # the replacements are kept with the figures: their ids in the memo key stay theirs
            hit = self._rewritten[memo] = (int_ops(e), frozenset(v.name for v in expr_vars(e)), tuple(replace.values()))
        return hit[0], hit[1]

    def _delta(self, replace: Mapping[int, Expr]) -> int:
        keys_at: dict[int, list[int]] = {}
        for key in replace:
            for i in self._holders.get(key, ()):
                if self._live[i]:
                    keys_at.setdefault(i, []).append(key)
        affected = sorted(keys_at)
        new_ops: dict[int, int] = {}
        new_reads: dict[int, frozenset[str]] = {}
        for i in affected:
            new_ops[i], new_reads[i] = self._rewrite(i, {key: replace[key] for key in keys_at[i]})
        readers: dict[str, int] = {}  # counts that changed
        dying: list[str] = []

        def drop(names) -> None:
            for name in names:
                readers[name] = readers.get(name, self._readers.get(name, 0)) - 1
                if readers[name] == 0:
                    dying.append(name)

        delta = 0
        for i in affected:
            delta += new_ops[i] - self._ops[i]
            drop(self._reads[i] - new_reads[i])
        while dying:
            i = self._let_at.get(dying.pop())
            if i is not None and self._live[i]:
                delta -= new_ops.get(i, self._ops[i])
                drop(new_reads.get(i, self._reads[i]))
        return delta
