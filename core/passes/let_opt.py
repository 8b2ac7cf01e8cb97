"""Let optimization: inline trivial lets, merge redundant ones, drop unused ones.

- *trivial*: a let whose value is a variable or an immediate is substituted
  into its body (it names nothing a register would hold);
- *redundant*: a let whose value equals the value of a let already in scope
  reuses that let's variable, when the value reads no memory (expressions
  are pure, and with kernel-unique names equal text means equal value);
- *unused*: a let whose variable is read nowhere is dropped, and dropping it
  may leave the variables its value read unused in turn;
- *unread registers*: a register buffer that only stores write (a message
  header whose sends the simplifier dropped as never enabled) goes with its
  stores, and the lets only they read.

Every step is linear in the size of the tree and iterative. Variable names
are unique in a kernel (``docs/ir-semantics.md``); where a builder reused a
name, the unused-let count is per name, which only keeps more lets.
"""
from __future__ import annotations

from typing import Any, Mapping

from ..ir.expr import Expr, Var
from ..ir.node import Node
from ..ir.stmt import Alloc, Let, MemKind, Stmt, Store, empty
from ..ir.visitor import IRMutator, substitute
from .opcount import is_trivial
from .tree import distinct_nodes, has_load, read_names, var_names


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
        for name in read_names(s):
            reads[name] = reads.get(name, 0) + 1
    work = [name for name in lets if not reads.get(name)]
    dead: set[str] = set()
    while work:
        name = work.pop()
        if name in dead:
            continue
        dead.add(name)
        for let in lets[name]:
            for used in read_names(let):
                reads[used] -= 1
                if not reads[used] and used in lets:
                    work.append(used)
    return _Drop(dead).mutate(ir) if dead else ir


class _DropRegisters(IRMutator):
    def __init__(self, dead: set[str]):
        self.dead = dead

    def mutate_Store(self, old: Store, new: Store):
        return empty() if old.buf.name in self.dead else new

    def mutate_Alloc(self, old: Alloc, new: Alloc):
        return new.body if old.buf.name in self.dead else new


def remove_unread_registers(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` without the register buffers nothing reads (only stores write them), their stores and the
    lets left unused; the same object when every register buffer is read."""
    registers: set[str] = set()
    reads: set[str] = set()
    for s in distinct_nodes(ir):
        if isinstance(s, Alloc):
            if s.kind is MemKind.GRF:
                registers.add(s.buf.name)
        elif isinstance(s, Store):
            reads |= var_names(*(e for e in (s.offset, s.value, s.mask) if e is not None))
        elif isinstance(s, Stmt):
            reads |= read_names(s)
    dead = registers - reads
    return remove_unused_lets(_DropRegisters(dead).mutate(ir)) if dead else ir


def inline_lets(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` with trivial lets substituted and redundant lets merged into the earlier one."""
    return _Inline().mutate(ir) if isinstance(ir, Stmt) else ir


class _Inline(IRMutator):
    """Decides each let as the walk enters it (its value with the substitutions of the lets around it);
    its body is walked under that decision, which the let's ``mutate_`` hook closes again."""

    memoize = False  # what replaces a variable depends on the lets around the occurrence

    def __init__(self):
        self.env: dict[Var, Expr] = {}  # variable -> what replaces it
        self.bound: dict[Expr, Var] = {}  # pure value -> the variable in scope holding it
        self.open: list[tuple[Var, Expr | None, bool]] = []  # per open let: variable, its key in bound, dropped
        self.binder: Var | None = None  # the variable of the let entered last

    def pre_Expr(self, e: Expr) -> Expr:
        if self.binder is not None:  # the first node after a let is its variable: a binder, no use to replace
            binder, self.binder = self.binder, None
            if e is binder:
                return e
        return substitute(e, self.env) if self.env else e

    def pre_Let(self, s: Let) -> None:
        self.binder = s.var
        value = substitute(s.value, self.env) if self.env else s.value
        pure = not has_load(value)
        same = value if is_trivial(value) else (self.bound.get(value) if pure else None)
        if same is not None:  # trivial or redundant: the body reads ``same`` instead
            self.env[s.var] = same
            self.open.append((s.var, None, True))
            return None
        key = value if pure and value not in self.bound else None
        if key is not None:
            self.bound[key] = s.var
        self.open.append((s.var, key, False))
        return None

    def mutate_Let(self, old: Let, new: Let) -> Stmt:
        var, key, dropped = self.open.pop()
        self.env.pop(var, None)
        if key is not None:
            del self.bound[key]
        return new.body if dropped else new


def optimize_lets(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """Trivial and redundant lets inlined, then unused lets removed; the same object when none apply."""
    return remove_unused_lets(inline_lets(ir))
