"""Common subexpression elimination within the target's register budget.

An expression that occurs at least twice, costs integer operations
(``opcount.int_ops``) and reads no memory is computed once into a new
``let`` placed at the innermost statement that contains every occurrence
(for a sequence: around the children that hold them), and every occurrence
becomes the variable. Placement never leaves a loop the occurrences are in,
so nothing is computed more often than before.

Candidates are taken largest first; naming one lowers the counts of the
subexpressions inside it (its other occurrences are gone), so a piece that
only ever occurs inside a named expression is not named again.

Registers: each new variable lives across its uses, so it costs the bytes of
its type (``registers.RegisterModel``). The budget is what the target leaves
free: ``(regs - reserved) * reg_bytes`` minus the peak the kernel already
needs (``registers.estimate_registers``); ``regs`` is the config's per-thread
register count (``options["regs"]``, default the target's smallest mode). A
candidate that does not fit is skipped and recorded: ``plan_cse`` returns the
report with what was named and what was skipped, and why.
"""
from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping
from weakref import WeakKeyDictionary

from ..ir.expr import Binary, Expr, Op, Var
from ..ir.node import Node
from ..ir.printer import expr_to_text
from ..ir.stmt import Let, Seq, Stmt, Store, seq
from ..ir.visitor import IRMutator, IRVisitor, Substitute, post_order, statements
from .forms import Forms
from ..ir.names import Names
from .opcount import is_int_op
from .options import target_of
from .registers import RegisterModel, estimate_registers
from .send_headers import header_of
from .tree import binder, child_stmts, own_exprs, unshare_statements


# Rounds of naming at most, while a round leaves lets that copy a name (each merges one level more).
_ROUNDS = 4


@dataclass(frozen=True)
class Named:
    """An expression CSE computes once: the variable, the expression, its uses and register bytes."""

    var: str
    expr: str
    uses: int
    bytes: int


@dataclass(frozen=True)
class Skipped:
    """A repeated expression left in place, with the reason."""

    expr: str
    uses: int
    bytes: int
    reason: str


@dataclass(frozen=True)
class CseReport:
    """What CSE named and what it left unnamed, and the register budget it kept to."""

    named: tuple[Named, ...]
    skipped: tuple[Skipped, ...]
    budget_bytes: int | None  # None: no target, no register limit

    def to_dict(self) -> dict:
        return {"budget_bytes": self.budget_bytes,
                "named": [vars(n) for n in self.named], "skipped": [vars(s) for s in self.skipped]}


def register_budget(ir: Stmt, options: Mapping[str, Any]) -> tuple[RegisterModel | None, int | None]:
    """The register model and the free register bytes for new values (None: no target given)."""
    target = target_of(options)
    if target is None:
        return None, None
    model = RegisterModel.of(target)
    regs = options.get("regs") or target.registers.min_regs
    total = (regs - target.registers.reserved) * model.reg_bytes
    return model, total - _peak_bytes(ir, model)


# The peak of each IR under each model, kept while the IR lives: a pass that changes nothing hands the
# next one the same object, whose budget (an interval sweep of the whole kernel) is then not swept again.
_PEAKS: "WeakKeyDictionary[Stmt, dict[RegisterModel, int]]" = WeakKeyDictionary()


def _peak_bytes(ir: Stmt, model: RegisterModel) -> int:
    peaks = _PEAKS.get(ir)
    if peaks is None:
        peaks = _PEAKS[ir] = {}
    peak = peaks.get(model)
    if peak is None:
        peak = peaks[model] = estimate_registers(ir, model).peak_bytes
    return peak


class _Layout(IRVisitor):
    """Pre-order numbering of a statement tree: index, subtree end, parent, children's indices."""

    statements_only = True

    def __init__(self, root: Stmt):
        self.pre: dict[int, int] = {}
        self.end: dict[int, int] = {}
        self.parent: dict[int, Stmt] = {}
        self.order: list[Stmt] = []
        self.visit(root)

    def visit_Stmt(self, s: Stmt) -> None:
        self.pre[id(s)] = len(self.order)
        self.order.append(s)
        for k in child_stmts(s):
            self.parent[id(k)] = s

    def leave_Stmt(self, s: Stmt) -> None:
        self.end[id(s)] = len(self.order) - 1

    def common_ancestor(self, first_pre: int, last_pre: int) -> tuple[Stmt, tuple[int, int] | None]:
        """The innermost statement containing the statements numbered ``first_pre`` to ``last_pre``
        (pre-order); for a sequence, the range of its children that holds them too."""
        first = a = self.order[first_pre]
        while self.end[id(a)] < last_pre:
            a = self.parent[id(a)]
        if not isinstance(a, Seq) or a is first:
            return a, None
        starts = [self.pre[id(k)] for k in a.stmts]
        return a, (bisect_right(starts, first_pre) - 1, bisect_right(starts, last_pre) - 1)


def _weighted_nodes(root: Node) -> list[tuple[Node, int]]:
    """Distinct nodes under ``root`` with how many times each occurs, parents before children (``root`` first)."""
    weight: dict[int, int] = {id(root): 1}
    out = []
    for node in reversed(list(post_order(root))):  # each node after every node above it
        w = weight.get(id(node), 0)
        out.append((node, w))
        for k in node._children_of(node):
            weight[id(k)] = weight.get(id(k), 0) + w
    return out


@dataclass(frozen=True)
class _Choice:
    """A candidate expression, the statement it would be named at and what naming it costs."""

    expr: Expr
    where: Stmt
    span: tuple[int, int] | None  # child range when ``where`` is a sequence
    uses: int
    bytes: int


def _occurrences(layout: _Layout) -> tuple[list[Expr], dict[int, int], dict[int, int], dict[int, int]]:
    """Every distinct expression object the statements evaluate, parents before children, with how
    many times it occurs in the whole tree and the first and last statement (pre-order number) whose
    own expressions contain it.

    Counted once per object over the whole DAG: the copies of an unrolled loop share most of their
    subtrees (each object occurs three to four times), so this costs the distinct nodes, not the
    occurrences, and not one walk per statement."""
    weight: dict[int, int] = {}
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    post: list[Expr] = []
    for pre, s in enumerate(layout.order):
        for root in own_exprs(s):
            key = id(root)
            if key in weight:
                weight[key] += 1
                first[key] = min(first[key], pre)  # statements come in pre-order: ``first`` holds
                last[key] = pre
                continue
            weight[key], first[key], last[key] = 1, pre, pre
            stack: list[tuple[Expr, bool]] = [(root, False)]
            while stack:
                node, ready = stack.pop()
                if ready:
                    post.append(node)
                    continue
                if id(node) in first and node is not root:
                    continue
                if node is not root:
                    weight[id(node)], first[id(node)], last[id(node)] = 0, pre, pre
                stack.append((node, True))
                stack.extend((k, False) for k in node._children_of(node) if id(k) not in first)
    post.reverse()  # a topological order of the DAG: every node before its children
    for node in post:
        key = id(node)
        w, lo, hi = weight[key], first[key], last[key]
        for k in node._children_of(node):
            kid = id(k)
            weight[kid] += w
            if lo < first[kid]:
                first[kid] = lo
            if hi > last[kid]:
                last[kid] = hi
    return post, weight, first, last


def _plan(tree: Stmt, options: Mapping[str, Any],
          report_budget: bool = True) -> tuple[list[_Choice], list[Skipped], int | None, set[str]]:
    """The expressions to name (largest first), those skipped, the register budget (without
    ``report_budget``, None where no expression repeats: nothing is then measured against it) and, where
    some expression is named, the names of the tree's variables (its walks met every one), else none."""
    forms = Forms()
    layout = _Layout(tree)
    nodes, weight, first, last = _occurrences(layout)
    costs: dict[int, bool] = {}  # id -> contains an integer operation
    for node in reversed(nodes):  # children first: cost flags flow up
        costs[id(node)] = (is_int_op(node) or _is_mask_logic(node)
                           or any(costs[id(k)] for k in node._children_of(node)))
    counts: dict[Expr, int] = {}
    spans: dict[Expr, tuple[int, int]] = {}  # first and last statement holding an equal expression
    for node in nodes:
        key = id(node)
        if costs[key] and not forms.reads_memory(node):
            counts[node] = counts.get(node, 0) + weight[key]
            lo, hi = spans.get(node, (first[key], last[key]))
            spans[node] = (min(lo, first[key]), max(hi, last[key]))
    # A value some let holds whole takes no register more once named: that let becomes the name.
    repeated = [e for e, n in counts.items() if n >= 2]
    if not repeated and not report_budget:
        return [], [], None, set()  # the register sweep of the whole kernel, for nothing to weigh
    held = {s.value for s in layout.order if isinstance(s, Let)}
    model, budget = register_budget(tree, options)
    chosen: list[_Choice] = []
    skipped: list[Skipped] = []
    left = budget
    for e in sorted(repeated, key=lambda e: (-forms.size(e), forms.key(e))):
        n = counts[e]
        if n < 2:
            continue
        nbytes = 0 if e in held else model.value_bytes(e.type) if model is not None else e.type.size
        if left is not None and nbytes > left:
            skipped.append(Skipped(expr_to_text(e), n, nbytes, f"register budget: {max(left, 0)} bytes free"))
            continue
        if left is not None:
            left -= nbytes
        where, span = layout.common_ancestor(*spans[e])
        chosen.append(_Choice(e, where, _with_header_store(where, span), n, nbytes))
        for sub, w in _weighted_nodes(e)[1:]:
            if sub in counts:
                counts[sub] -= (n - 1) * w
    if not chosen:
        return chosen, skipped, budget, set()
    # every variable is an expression some statement evaluates or the one a binder binds
    used = {n.name for n in nodes if isinstance(n, Var)} | {v.name for v in map(binder, layout.order) if v is not None}
    return chosen, skipped, budget, used


def _with_header_store(where: Stmt, span: tuple[int, int] | None) -> tuple[int, int] | None:
    """``span`` of ``where``'s children, reaching back over the header store of a lowered send it starts
    at: the let goes in front of the store, so the store stays right before its send (``hoist`` lifts
    such a pair only; the value of a let reads no memory, so no header either)."""
    if span is None or span[0] == 0:
        return span
    kids = where.stmts
    header = header_of(kids[span[0]])
    before = kids[span[0] - 1]
    if header is not None and isinstance(before, Store) and before.buf.name == header:
        return span[0] - 1, span[1]
    return span


def _is_mask_logic(e: Expr) -> bool:
    """A comparison of integers or a boolean ``&&``/``||``: a send's mask, which an SLM store and its
    store of zeros test again after their load, or a counter's wrap test (each an instruction,
    ``loop_stats`` counts them)."""
    if not isinstance(e, Binary) or not e.type.is_bool:
        return False
    return e.op in (Op.AND, Op.OR) or e.a.type.is_int


class _Apply(IRMutator):
    """Replaces named expressions by their variables and inserts the lets."""

    def __init__(self, mapping: dict[Expr, Expr], wraps: dict[int, list], spans: dict[int, list]):
        self.mapping, self.wraps, self.spans = mapping, wraps, spans

    def pre_Expr(self, e: Expr):
        return self.mapping.get(e)

    def mutate_Stmt(self, old: Stmt, new: Stmt):
        for (lo, hi), lets in sorted(self.spans.get(id(old), ()), key=lambda x: -x[0][0]):
            kids = list(new.stmts)
            kids[lo:hi + 1] = [_wrap(lets, seq(*kids[lo:hi + 1]))]
            new = Seq.make(kids, origin=new.origin)
        return _wrap(self.wraps.get(id(old), ()), new)


class _InlineAliases(IRMutator):
    """Lets whose whole value became a new name read that name instead: equal values held by lets
    of different names (an unrolled load's mask and its SLM store's) then read one name, and the next
    CSE finds the expressions over them equal. :class:`_Apply` already read the name for every variable
    no other statement binds (its let is left binding the name to itself), so only the others cost a
    walk of their let's body."""

    def __init__(self, names: set[str]):
        self.names = names
        self.inlined = 0

    def mutate_Let(self, old: Let, new: Let):
        if isinstance(new.value, Var) and new.value.name in self.names:
            self.inlined += 1
            return new.body if new.var == new.value else Substitute({new.var: new.value}).mutate(new.body)
        return new


def _wrap(lets, body: Stmt) -> Stmt:
    """``body`` inside the ``(rank, var, value)`` lets, lowest rank outermost."""
    for _, var, value in sorted(lets, key=lambda x: x[0], reverse=True):
        body = Let.make(var, value, body)
    return body


def _merge_spans(items: list[tuple[tuple[int, int], tuple]]) -> list[tuple[tuple[int, int], list]]:
    """Overlapping child ranges of one sequence merged into one range holding all their lets."""
    items = sorted(items, key=lambda x: x[0][0])
    merged: list[list] = []
    for (lo, hi), let in items:
        if merged and lo <= merged[-1][0][1]:
            merged[-1][0] = (merged[-1][0][0], max(hi, merged[-1][0][1]))
            merged[-1][1].append(let)
        else:
            merged.append([(lo, hi), [let]])
    return [((lo, hi), lets) for (lo, hi), lets in merged]


def plan_cse(ir: Node, options: Mapping[str, Any] | None = None) -> CseReport:
    """What ``eliminate_common_subexprs`` names and what it skips, without changing ``ir``."""
    return eliminate(ir, options or {})[1]


def eliminate(ir: Node, options: Mapping[str, Any], rounds: int = _ROUNDS,
              report_budget: bool = True) -> tuple[Node, CseReport]:
    """The rewritten IR (the same object when nothing is named) and the report; while naming made
    lets copies of a name (inlined), up to ``rounds`` rounds. The report of a later round (without
    ``report_budget``) leaves out the budget where nothing repeats: the first round's is reported."""
    if not isinstance(ir, Stmt):
        return ir, CseReport((), (), None)
    tree = unshare_statements(ir)
    chosen, skipped, budget, used = _plan(tree, options, report_budget)
    if not chosen:
        return ir, CseReport((), tuple(skipped), budget)
    names = Names(used)
    mapping = {c.expr: names.fresh("cse", c.expr.type) for c in chosen}
    # A let whose whole value is named (an alias, _InlineAliases) and whose variable no other statement
    # binds: the walk that names the expressions reads the name for the variable too, instead of one walk
    # of the let's body per alias.
    stmts = statements(tree)
    bound = Counter(v for v in map(binder, stmts) if v is not None)
    replaced = {**mapping, **{s.var: mapping[s.value] for s in stmts
                              if isinstance(s, Let) and s.value in mapping and bound[s.var] == 1}}
    # Smaller expressions are bound outside larger ones that use them.
    order = {c.expr: rank for rank, c in enumerate(reversed(chosen))}
    wraps: dict[int, list] = {}
    spans: dict[int, list] = {}
    for c in reversed(chosen):
        value = c.expr.with_children([Substitute(replaced).mutate(k) for k in c.expr.children()])
        let = (order[c.expr], mapping[c.expr], value)
        if c.span is None:
            wraps.setdefault(id(c.where), []).append(let)
        else:
            spans.setdefault(id(c.where), []).append((c.span, let))
    spans = {k: _merge_spans(v) for k, v in spans.items()}
    out = _Apply(replaced, wraps, spans).mutate(tree)
    aliases = _InlineAliases({v.name for v in mapping.values()})
    out = aliases.mutate(out)
    named = tuple(Named(mapping[c.expr].name, expr_to_text(c.expr), c.uses, c.bytes) for c in chosen)
    if aliases.inlined and rounds > 1:
        # What was equal only through those lets (two masks over them) is equal now: another round.
        out, more = eliminate(out, options, rounds - 1, report_budget=False)
        return out, CseReport(named + more.named, tuple(skipped) + more.skipped, budget)
    return out, CseReport(named, tuple(skipped), budget)


def eliminate_common_subexprs(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` with repeated expressions computed once, within the register budget."""
    return eliminate(ir, options or {})[0]
