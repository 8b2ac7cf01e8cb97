"""Loop-invariant hoisting: compute once before a loop what every iteration computes alike.

For each ``for`` loop, inner loops first:

1. ``let`` statements anywhere in the body whose value reads no memory and no
   variable bound inside the loop (the loop variable, or a let, loop or
   buffer of the body that stays) move in front of the loop, in program
   order, so a hoisted let may use an earlier hoisted one;
2. in what is left, every integer sum (a maximal linear form, see
   ``simplify/linear.py``) is split into its loop-invariant terms and the
   rest: ``k*64 + i*4096 + j*512 + 3`` in loop ``k`` becomes
   ``k*64 + k_inv + 3`` with ``k_inv = i*4096 + j*512`` computed before the
   loop. The split is made only when it leaves fewer operations in the loop
   and, for a loop of known trip count, the operations it saves over all
   iterations exceed those of computing the invariant once;
   constants stay in place (they become immediates). Equal invariant sums in
   one loop share one variable;
3. the invariant terms of a send's scalar mask (a conjunction: the padding
   condition of the iteration's pixel, the same for every message of a
   message loop, beside a message's own tail test) are computed once before
   the loop into ``<k>_mask``: the loop's unrolled copies then test one value
   (and their own terms) instead of each recomputing the comparisons.

Linear forms are exact modulo ``2**bits``, so reassociating a sum never
changes its value. Expressions are pure and total, so computing a value
before a loop that might not run is harmless; a loop known to run zero
times, and everything inside it, is left alone (hoisting would only add work).
"""
from __future__ import annotations

from typing import Any, Mapping

from ..ir.expr import Binary, BoolImm, Expr, Op, Unary, Var
from ..ir.funcs import Send
from ..ir.node import Node
from ..ir.stmt import For, FuncCall, Let, Stmt
from ..ir.visitor import IRMutator
from .forms import Forms
from .naming import NameSource
from .opcount import int_ops
from .tree import DropLets, binder, child_stmts, distinct_nodes, expr_vars, has_load, own_exprs, trip_count


def _is_linear(e: Node) -> bool:
    if not isinstance(e, Expr) or not e.type.is_int or e.type.lanes != 1:
        return False
    if isinstance(e, Binary):
        return e.op in (Op.ADD, Op.SUB, Op.MUL)
    return isinstance(e, Unary) and e.op is Op.NEG


def maximal_sums(roots) -> set[int]:
    """Ids of the linear nodes under ``roots`` whose parent is not a linear node of the same type."""
    inner: set[int] = set()
    candidates: set[int] = set()
    for root in roots:
        for n in distinct_nodes(root):
            if not _is_linear(n):
                continue
            candidates.add(id(n))
            for k in n.children():
                if k.type == n.type:
                    inner.add(id(k))
    return candidates - inner


class _SplitSums(IRMutator):
    """Rewrites the maximal sums of one loop body into variant terms plus a hoisted variable."""

    def __init__(self, maximal: set[int], inner: set[str], forms: Forms, names: NameSource,
                 prefix: str, trips: int | None):
        self.maximal, self.inner, self.forms = maximal, inner, forms
        self.names, self.prefix, self.trips = names, prefix, trips
        self.lifted: dict[Expr, Expr] = {}  # invariant sum -> its variable

    def _invariant(self, e: Expr) -> bool:
        return not has_load(e) and not any(v.name in self.inner for v in expr_vars(e))

    def mutate_Expr(self, old: Expr, new: Expr):
        if id(old) not in self.maximal:
            return new
        lf = self.forms.of(new)
        keep = {t: c for t, c in lf.terms if not self._invariant(t)}
        moved = {t: c for t, c in lf.terms if t not in keep}
        if not moved:
            return new
        invariant = self.forms.build(lf.type, moved, 0)
        if int_ops(invariant) == 0:
            return new  # a bare variable: nothing to compute ahead
        var = self.lifted.get(invariant)
        # Price the split with a stand-in variable (a variable costs nothing, whatever its name) so
        # that a split not made takes no name from the kernel.
        priced = var if var is not None else Var.make(lf.type, self.prefix)
        saved = int_ops(new) - int_ops(self.forms.build(lf.type, {**keep, priced: 1}, lf.const))  # per iteration
        if saved <= 0:
            return new
        if var is None and self.trips is not None and int_ops(invariant) >= saved * self.trips:
            return new  # computing it ahead costs more than the few iterations save
        if var is None:
            var = self.lifted[invariant] = self.names.fresh(self.prefix, lf.type)
        return self.forms.build(lf.type, {**keep, var: 1}, lf.const)


class _NameMasks(IRMutator):
    """Names the loop-invariant masks of the sends in one loop body: each distinct one becomes a
    variable computed before the loop (the unrolled copies of a message loop then share it)."""

    def __init__(self, inner: set[str], names: NameSource, prefix: str):
        self.inner, self.names, self.prefix = inner, names, prefix
        self.lifted: dict[Expr, Var] = {}

    def _invariant(self, e: Expr) -> bool:
        return not has_load(e) and not any(v.name in self.inner for v in expr_vars(e))

    def mutate_FuncCall(self, old: FuncCall, new: FuncCall):
        if not isinstance(new.func, Send):
            return new
        mask = new.ops.mask
        if isinstance(mask, (BoolImm, Var)) or mask.type.lanes != 1:
            return new
        terms = _conjuncts(mask)
        fixed = [t for t in terms if self._invariant(t)]
        if not fixed or (len(fixed) == 1 and isinstance(fixed[0], (BoolImm, Var))):
            return new
        value = fixed[0]
        for t in fixed[1:]:
            value = Binary.make(Op.AND, value, t)
        var = self.lifted.get(value)
        if var is None:
            var = self.lifted[value] = self.names.fresh(self.prefix, value.type)
        out: Expr = var
        for t in terms:
            if t not in fixed:
                out = Binary.make(Op.AND, out, t)
        return new.with_ops(mask=out)


def _conjuncts(e: Expr) -> list[Expr]:
    """The terms of a tree of ``&&``, left to right."""
    out, stack = [], [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Binary) and x.op is Op.AND and x.type.lanes == 1:
            stack.extend((x.b, x.a))
        else:
            out.append(x)
    return out


class _Hoist(IRMutator):
    def __init__(self, ir: Node):
        self.root = ir
        self.forms = Forms()
        self.names = NameSource(ir)

    def mutate_For(self, old: For, new: For):
        if trip_count(new) == 0:
            return new  # a loop that never runs: hoisting would make its code run
        return hoist_loop(new, self)


def _running_stmts(body: Stmt) -> list[Stmt]:
    """The statements of ``body`` in program order, less those inside loops known to run zero times
    (moving their work in front of the loop would make it run)."""
    out: list[Stmt] = []
    seen: set[int] = set()
    stack: list[Stmt] = [body]
    while stack:
        s = stack.pop()
        if id(s) in seen:
            continue
        seen.add(id(s))
        out.append(s)
        if not (isinstance(s, For) and trip_count(s) == 0):
            stack.extend(reversed(child_stmts(s)))
    return out


def _invariant_lets(loop: For) -> tuple[list[Let], set[str]]:
    """The lets of ``loop``'s body that can move out, in program order, and the names that stay inside."""
    inner = {loop.var.name}
    for n in distinct_nodes(loop.body):
        v = binder(n)
        if v is not None:
            inner.add(v.name)
    hoisted: list[Let] = []
    for s in _running_stmts(loop.body):
        if isinstance(s, Let) and not has_load(s.value) and not any(v.name in inner for v in expr_vars(s.value)):
            hoisted.append(s)
            inner.discard(s.var.name)
    return hoisted, inner


def hoist_loop(loop: For, ctx: _Hoist) -> Stmt:
    """``loop`` with its invariant lets and sums computed in front of it."""
    hoisted, inner = _invariant_lets(loop)
    moved = {id(s) for s in hoisted}
    body = DropLets(lambda let: id(let) in moved).mutate(loop.body) if hoisted else loop.body
    roots = [e for s in _running_stmts(body) for e in own_exprs(s)]
    split = _SplitSums(maximal_sums(roots), inner, ctx.forms, ctx.names, f"{loop.var.name}_inv",
                       trip_count(loop))
    body = split.mutate(body)
    masks = _NameMasks(inner, ctx.names, f"{loop.var.name}_mask")
    body = masks.mutate(body)
    if body is loop.body:
        return loop
    out: Stmt = For.make(loop.var, loop.init, loop.bound, body, loop.step, loop.unroll, origin=loop.origin)
    for value, var in reversed(masks.lifted.items()):
        out = Let.make(var, value, out)
    for value, var in reversed(split.lifted.items()):
        out = Let.make(var, value, out)
    for s in reversed(hoisted):
        out = Let.make(s.var, s.value, out, origin=s.origin)
    return out


def hoist_invariants(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` with loop-invariant lets and sums hoisted out of every loop; the same object when none."""
    return _Hoist(ir).mutate(ir)
