"""Strength reduction: address sums that grow linearly with a loop variable become induction variables.

In a loop over ``k`` (step ``s``) an integer sum ``a*k + rest + c`` (a linear
form, ``a`` a constant, ``rest`` loop-invariant, ``c`` a constant) costs a
multiply and adds every iteration. Sums sharing ``a`` and ``rest`` share one
*induction variable* ``iv = a*k + rest`` that is set before the loop and
advanced by ``a*s`` at the end of each iteration; each use becomes ``iv + c``.

The IR has no mutable scalars, so an induction variable lives in a one-value
``alloc.grf`` buffer (the register the code generator gives it)::

    alloc.grf k_iv_reg[..]
    k_iv_reg.s32[0] = a*init + rest
    for (k ...) {
      k_iv.s32 = k_iv_reg.s32[0]
      ... uses k_iv + c ...
      k_iv_reg.s32[0] = (k_iv + a*s)
    }

A group is reduced only when that saves operations per iteration (the
increment costs one add, a use with ``c != 0`` one more). Loops that will be
unrolled completely are left alone (``register_loops.stays_loop``): their
copies get constants folded instead. A loop unrolled ``U`` times keeps one
increment per unrolled iteration: the unroll pass recognizes the pattern
(``split_induction``) and gives copy ``j`` the value ``iv + j*a*s``. Sums in
nested loops are left to those loops (hoisting has already moved what they do
not depend on out of them).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..ir.expr import Binary, Expr, IntImm, Load, Op, Var
from ..ir.node import Node
from ..ir.stmt import Alloc, For, Let, MemKind, Seq, Stmt, Store, seq
from ..ir.visitor import IRMutator
from .forms import Forms
from .hoist import maximal_sums
from .naming import NameSource
from .opcount import int_ops
from .register_loops import stays_loop
from .tree import binder, child_stmts, distinct_nodes, expr_vars, has_load, own_exprs


def _level_exprs(loop: For) -> list[Expr]:
    """Expressions evaluated by ``loop``'s body at its own level (nested loops' bounds, not bodies)."""
    out: list[Expr] = []
    stack: list[Stmt] = [loop.body]
    while stack:
        s = stack.pop()
        out.extend(own_exprs(s))
        if not isinstance(s, For):
            stack.extend(child_stmts(s))
    return out


class _Reduce(IRMutator):
    def __init__(self, ir: Node, reg_bytes: int):
        self.root = ir
        self.reg_bytes = reg_bytes
        self.forms = Forms()
        self.names = NameSource(ir)

    def mutate_For(self, old: For, new: For):
        if not stays_loop(new) or split_induction(new.body) is not None:
            return new
        return self.reduce_loop(new)

    def reduce_loop(self, loop: For) -> Stmt:
        k = loop.var
        inner = {k.name} | {v.name for v in (binder(n) for n in distinct_nodes(loop.body)) if v is not None}
        roots = _level_exprs(loop)
        # (type, the sum's loop-dependent part a*k + rest) -> (a, rest, uses as (sum, constant))
        groups: dict[tuple, tuple[int, dict, list[tuple[Expr, int]]]] = {}
        maximal = maximal_sums(roots)
        sums = {id(n): n for r in roots for n in distinct_nodes(r) if id(n) in maximal}
        for e in sums.values():
            lf = self.forms.of(e)
            coef = dict(lf.terms).get(k, 0)
            rest = {t: c for t, c in lf.terms if not t.is_equal(k)}
            if not coef or any(has_load(t) or any(v.name in inner for v in expr_vars(t)) for t in rest):
                continue
            base = self.forms.build(lf.type, {k: coef, **rest}, 0)
            groups.setdefault((lf.type, base), (coef, rest, []))[2].append((e, lf.const))
        replace: dict[int, Expr] = {}
        ivs = []
        for (t, _), (coef, rest, uses) in groups.items():
            distinct = {id(e): (e, c) for e, c in uses}.values()
            after = 1 + sum(1 for _, c in distinct if c)
            if sum(int_ops(e) for e, _ in distinct) <= after:
                continue
            if isinstance(loop.init, IntImm):
                start = self.forms.build(t, rest, coef * loop.init.value)
            else:
                start = self.forms.build(t, {**rest, loop.init: coef}, 0)
            buf = self.names.fresh(f"{k.name}_iv_reg", t)
            iv = self.names.fresh(f"{k.name}_iv", t)
            ivs.append((buf, iv, start, coef * loop.step))
            for e, c in distinct:
                replace[id(e)] = iv + IntImm.make(t, c) if c else iv
        if not ivs:
            return loop
        body = InductionBody(tuple((iv, buf, step) for buf, iv, _, step in ivs), _Uses(replace).mutate(loop.body))
        out: Stmt = For.make(k, loop.init, loop.bound, body.rebuild(body.core), loop.step, loop.unroll,
                             origin=loop.origin)
        out = seq(*(Store.make(buf, 0, init) for buf, _, init, _ in ivs), out)
        for buf, iv, _, _ in reversed(ivs):
            out = Alloc.make(buf, max(self.reg_bytes, iv.type.size), MemKind.GRF, out)
        return out


@dataclass(frozen=True)
class InductionBody:
    """A loop body in strength-reduced form: ``ivs`` as ``(value var, register buffer, step)``
    read at the top, ``core`` in between, each advanced by its step at the end."""

    ivs: tuple[tuple[Var, Var, int], ...]
    core: Stmt

    def rebuild(self, core: Stmt, iterations: int = 1) -> Stmt:
        """A body running ``core`` and advancing every induction variable ``iterations`` steps."""
        body = seq(core, *(Store.make(buf, 0, iv + IntImm.make(iv.type, step * iterations))
                           for iv, buf, step in self.ivs))
        for iv, buf, _ in reversed(self.ivs):
            body = Let.make(iv, Load.make(iv.type, buf, 0), body)
        return body


def split_induction(body: Stmt) -> InductionBody | None:
    """``body`` as induction variables around a core, when it has the form ``reduce_loop`` makes."""
    reads = []
    while isinstance(body, Let) and isinstance(body.value, Load) and isinstance(body.value.offset, IntImm) \
            and body.value.offset.value == 0 and body.value.type == body.var.type:
        reads.append((body.var, body.value.buf))
        body = body.body
    if not reads or not isinstance(body, Seq) or len(body.stmts) <= len(reads):
        return None
    ivs = []
    for (iv, buf), store in zip(reads, body.stmts[-len(reads):]):
        v = store.value if isinstance(store, Store) else None
        if not (store.buf == buf and isinstance(store.offset, IntImm) and store.offset.value == 0
                and isinstance(v, Binary) and v.op is Op.ADD and v.a == iv and isinstance(v.b, IntImm)):
            return None
        ivs.append((iv, buf, v.b.value))
    core = seq(*body.stmts[:-len(reads)])
    if any(isinstance(n, Var) and n.name in {b.name for _, b, _ in ivs} for n in distinct_nodes(core)):
        return None  # the core touches an induction register itself
    return InductionBody(tuple(ivs), core)


class _Uses(IRMutator):
    def __init__(self, replace: dict[int, Expr]):
        self.replace = replace

    def pre_Expr(self, e: Expr):
        return self.replace.get(id(e))


def reduce_strength(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` with loop-linear address sums turned into induction variables; the same object when none."""
    options = options or {}
    reg_bytes = int(options.get("reg_bytes") or 4)
    return _Reduce(ir, reg_bytes).mutate(ir)

