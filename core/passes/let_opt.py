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

from ..ir.expr import Expr, IntImm, Load, Var
from ..ir.node import Node
from ..ir.stmt import Alloc, FuncCall, Let, MemKind, Seq, Stmt, Store, empty
from ..ir.visitor import IRMutator, IRVisitor, statements, substitute
from .opcount import is_trivial
from .tree import StatementReads, has_load, var_names


class _Drop(IRMutator):
    def __init__(self, dead: set[str]):
        self.dead = dead

    def mutate_Let(self, old: Let, new: Let):
        return new.body if old.var.name in self.dead else new


def remove_unused_lets(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` without unused lets; the same object when every let is used."""
    reads: dict[str, int] = {}  # variable name -> statements reading it
    lets: dict[str, list[Let]] = {}
    read_names = StatementReads()
    for s in statements(ir) if isinstance(ir, Stmt) else ():
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
    if not isinstance(ir, Stmt):
        return ir
    registers: set[str] = set()
    reads: set[str] = set()
    read = StatementReads()  # the statements of an unrolled kernel share most of their expressions
    for s in statements(ir):
        if isinstance(s, Alloc):
            if s.kind is MemKind.GRF:
                registers.add(s.buf.name)
        elif isinstance(s, Store):
            reads |= var_names(*(e for e in (s.offset, s.value, s.mask) if e is not None))
        else:
            reads |= read(s)
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


def merge_register_copies(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` with each let that copies register-buffer bytes an earlier let in scope copied with no write
    to the buffer between (no store into it, no call naming it) reading the earlier let instead, and so each
    let whose value (reading no memory) is then an earlier one's. An unrolled loop reads its loop-carried
    registers again in each copy (``k_1 = k_reg[0]``, ``k_2 = k_reg[0]``); where no copy between stored
    the register the two are one value, and so are the masks and addresses made of them. Scalars only: a
    vector held from one copy to the next would take registers the copies between need. A let's scope is
    first extended over the statements after it in its sequence (names are kernel-unique: nothing is
    captured), so an earlier copy's let covers the later copies."""
    if not isinstance(ir, Stmt):
        return ir
    grf = {n.buf.name for n in statements(ir) if isinstance(n, Alloc) and n.kind is MemKind.GRF}
    try:
        scoped = _Extend().mutate(ir)
    except RecursionError:      # lets nested past Python's stack (see MAX_NESTED_LETS)
        return ir
    if _let_depth(scoped) > MAX_NESTED_LETS:
        return ir
    walk = _Copies(grf)
    walk.visit(scoped)
    if not walk.renames:
        return ir
    return substitute(_Drop({v.name for v in walk.renames}).mutate(scoped), walk.renames)


# The IR's walks that recurse (mutators, structural equality, the scope extension itself) take a few
# frames per nested statement: where extending the lets' scopes nests more lets than this (a long
# unrolled sequence of them; the examples nest at most 131), or more than the extension's own recursion
# reaches, the pass leaves the kernel as it is rather than hand the later passes a tree deeper than
# Python's stack.
MAX_NESTED_LETS = 200


class _LetDepth(IRVisitor):
    """The most lets nested inside one another (the toolkit's walk keeps no Python stack per level)."""

    statements_only = True

    def __init__(self):
        self.depth = self.deepest = 0

    def visit_Let(self, s: Let):
        self.depth += 1
        self.deepest = max(self.deepest, self.depth)

    def leave_Let(self, s: Let):
        self.depth -= 1


def _let_depth(s: Stmt) -> int:
    walk = _LetDepth()
    walk.visit(s)
    return walk.deepest


class _Extend(IRMutator):
    """Each let that is an element of a sequence takes the elements after it into its innermost body."""

    def mutate_Seq(self, old: Seq, new: Seq):
        stmts = _absorb(new.stmts)
        if len(stmts) == len(new.stmts):
            return new
        return stmts[0] if len(stmts) == 1 else Seq.make(stmts, origin=new.origin)


def _absorb(stmts) -> list[Stmt]:
    """``stmts`` with each let taking the statements after it into its innermost body."""
    out = list(stmts)
    for i in range(len(out) - 2, -1, -1):
        if isinstance(out[i], Let):
            out[i:] = [_append(out[i], out[i + 1:])]
    return out


def _append(s: Stmt, after: list[Stmt]) -> Stmt:
    """``s`` (a let, its body maybe another) with ``after`` run at the end of its innermost let's body (and
    taken into the scope of the lets that body's sequence holds)."""
    lets = []
    while isinstance(s, Let):
        lets.append(s)
        s = s.body
    inner = _absorb([*(s.stmts if isinstance(s, Seq) else (s,)), *after])
    body = inner[0] if len(inner) == 1 else Seq.make(inner)
    for let in reversed(lets):
        body = Let.make(let.var, let.value, body, origin=let.origin)
    return body


class _Copies(IRVisitor):
    """Statements in program order: ``epoch[buffer]`` counts what may have written a register buffer;
    ``scope[key]`` is the let in scope holding a value (key: the buffer bytes it copied at an epoch, or
    its value); ``renames`` maps a later let to the earlier one."""

    statements_only = True

    def __init__(self, grf: set[str]):
        self.grf = grf
        self.renames: dict[Var, Var] = {}
        self.epoch: dict[str, int] = {}
        self.scope: dict = {}
        self.opened: list[tuple] = []

    def _bump(self, name: str) -> None:
        self.epoch[name] = self.epoch.get(name, 0) + 1

    def _writes(self, s: Stmt) -> None:
        for n in statements(s):  # stores and calls are statements: no expression to walk
            if isinstance(n, Store):
                self._bump(n.buf.name)
            elif isinstance(n, FuncCall):
                self.visit_FuncCall(n)

    def visit_Let(self, s: Let):
        v = substitute(s.value, self.renames) if self.renames else s.value
        if v.type.lanes > 1:    # a vector held over the copies between costs registers; a scalar a dword
            key = None
        elif isinstance(v, Load) and v.buf.name in self.grf and isinstance(v.offset, IntImm):
            key = ("copy", v.buf.name, v.offset.value, v.type, self.epoch.get(v.buf.name, 0))
        else:
            key = None if has_load(v) else ("value", v)
        have = self.scope.get(key) if key else None
        if have is not None:
            self.renames[s.var] = have
            key = None
        self.opened.append((key, None if key is None else self.scope.get(key)))
        if key is not None:
            self.scope[key] = s.var

    def leave_Let(self, s: Let):
        key, prev = self.opened.pop()
        if key is not None:
            if prev is None:
                del self.scope[key]
            else:
                self.scope[key] = prev

    def visit_Store(self, s: Store):
        self._bump(s.buf.name)

    def visit_FuncCall(self, s: FuncCall):
        for a in s.args:  # a call may write any buffer it names
            if isinstance(a, Var):
                self._bump(a.name)

    def visit_For(self, s: Stmt):     # a loop's or a branch's other edges: what it writes anywhere differs
        self._writes(s)

    visit_If = leave_For = leave_If = visit_For
