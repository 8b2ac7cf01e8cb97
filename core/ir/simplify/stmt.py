"""Statement-level simplification: every expression under the facts of its scope, plus control flow.

Scopes and their facts (``facts.py``):

- ``for (v = init; v < bound; v += step)``: inside the body
  ``lo(init) <= v <= hi(bound) - 1`` and ``v == init (mod step)`` (when the
  increment past ``hi(bound) - 1`` cannot wrap). A loop that provably runs
  zero times (``hi(bound) <= lo(init)``) or whose body simplifies to nothing
  is removed.
- ``if (c)``: the then-branch learns ``c``, the else-branch ``!c``: a
  comparison of a variable with any expression bounds the variable
  (``x < e`` gives ``x <= hi(e) - 1``), ``&&`` in the then-branch and ``||``
  in the else-branch give both sides, a bool variable becomes a constant. A
  decided condition keeps only its branch (``if (true)`` disappears), a
  branch whose facts contradict each other is unreachable and dropped, an
  empty then-branch swaps with the else-branch under ``!c``, an ``if`` with
  nothing left disappears.
- ``let v = e``: the *let propagation policy*. The value is simplified first,
  then it is substituted into the body and the let dropped when it is

  1. a constant or a plain variable, or
  2. not used at all, or
  3. used exactly once, outside any loop nested in the let's body (so it is
     not recomputed per iteration), and free of loads (a store between the
     let and the use could change what a load reads).

  Otherwise the let is kept and ``v`` takes the bounds and alignment of its
  value in the body; a kept let whose variable no longer occurs in the
  simplified body is dropped. A kept ``v = u + c`` with ``u`` aligned to a
  multiple ``m`` that ``c`` is not (an offset inside an aligned block: a
  message's rows of a thread's tile, ``oc0 + 8``; ``_inside_block``) is also
  recorded as such (``Facts.offset``): comparisons and multiples of ``v`` read
  it as ``u + c`` (the simplifier's ``lf``), so ``v < 640`` of every message of
  the tile becomes ``u < 640`` (one flag) and ``v * 32`` is ``u * 32 + 8 * 32``
  (its constant an address's immediate), while ``v`` read as itself (the base
  of a ramp, of a chain of headers) stays the let.

Also: a store with a false mask is dropped and a true mask removed; a
memory message (``send``) whose mask is false for every element is dropped
(it moves nothing and leaves its registers as they were: an unrolled copy
of a tile's padding rows);
sequences lose empty statements and a one-statement sequence becomes that
statement; an ``alloc`` with an empty body goes. Labelled groups stay even
when empty (they name the kernel's structure). Unchanged statements come back
as the same objects.

The walk is iterative: each statement kind is a generator that yields the
children it needs simplified (between children it opens and closes scopes,
which ``IRMutator`` has no hook for), driven by an explicit stack, so a
10,000-deep let chain is fine.
"""
from __future__ import annotations

from math import gcd
from typing import Any, Generator, Mapping

from ..expr import Binary, BoolImm, Expr, FloatImm, IntImm, Op, Unary, Var, common_type
from ..funcs import Send, never_enabled
from ..stmt import Alloc, For, FuncCall, Group, If, Let, Seq, Stmt, Store, empty
from .bounds import Info
from .engine import Simplifier
from .facts import Facts
from .rules_cmp import MIRROR
from ..visitor import IRVisitor, post_order

_NEGATED = {Op.LT: Op.GE, Op.LE: Op.GT, Op.GT: Op.LE, Op.GE: Op.LT, Op.EQ: Op.NE, Op.NE: Op.EQ}
_Step = Generator[Stmt, Stmt, Stmt]


MAX_ROUNDS = 4


def simplify_stmt(root: Stmt, ranges: Mapping[Any, tuple] | None = None) -> Stmt:
    """``root`` simplified (see the module docstring); the same object when nothing changes.

    A round decides let propagation from the uses in its input; when a kept
    let ends with a single use (the others simplified away) that the policy
    would propagate (outside loops, no loads), another round propagates it (at
    most ``MAX_ROUNDS``). A let left with one use the policy keeps anyway asks
    for no round: that round would only confirm the fixed point, at the price
    of the first. A later round re-simplifies only the expressions that
    mention a *dirty* variable (one it propagates, or whose value or facts it
    changes): the others are the previous round's output under the same
    facts, already at the fixed point.
    """
    dirty = None
    uses_of = VarUses()  # intrinsic to each expression object: shared by the rounds
    for _ in range(MAX_ROUNDS):
        walker = _StmtSimplifier(root, ranges, dirty, uses_of)
        out = walker.run(root)
        if out is root or not walker.unsettled:
            return out
        root, dirty = out, walker.unsettled
    return root


def _is_empty(s: Stmt) -> bool:
    return isinstance(s, Seq) and not s.stmts


class _Binding:
    """Uses of one let's variable inside its body, from the scan of the input."""

    __slots__ = ("count", "in_loop", "loop_depth")

    def __init__(self, loop_depth: int):
        self.count, self.in_loop, self.loop_depth = 0, False, loop_depth


_NO_USES: dict = {}  # the uses of an expression without variables (shared: never mutated)


class VarUses:
    """Occurrences of each variable in expressions, memoised by node identity.

    Unrolled kernels share most expression subtrees between their copies (an
    expression object occurs three to four times on average), so counting
    per distinct object and adding the counts up is cheaper than walking
    every occurrence. The mappings are shared between nodes: never mutate one.
    """

    def __init__(self):
        self._memo: dict[int, tuple[Expr, dict]] = {}  # id -> (node, {var: occurrences})

    def __call__(self, e: Expr) -> Mapping[Var, int]:
        memo = self._memo
        hit = memo.get(id(e))
        if hit is not None:
            return hit[1]
        if isinstance(e, Var):  # the most common miss: no walk to set up
            uses = {e: 1}
            memo[id(e)] = (e, uses)
            return uses
        for node in post_order(e, done=memo):
            if isinstance(node, Var):
                memo[id(node)] = (node, {node: 1})
                continue
            uses, owned = _NO_USES, False
            for k in node._children_of(node):
                more = memo[id(k)][1]
                if not more:
                    continue
                if not uses:
                    uses = more  # borrowed until a second child adds to it
                    continue
                if not owned:
                    uses, owned = dict(uses), True
                for v, n in more.items():
                    uses[v] = uses.get(v, 0) + n
            memo[id(node)] = (node, uses)
        return memo[id(e)][1]


def _scan(root: Stmt, uses_of: VarUses) -> tuple[dict[int, _Binding], frozenset, frozenset]:
    """Per let (by id): its uses; the variables bound once and never used free; those bound twice."""
    scan = _Scan(uses_of)
    scan.visit(root)
    times_bound, free = scan.times_bound, scan.free
    once = frozenset(v for v, n in times_bound.items() if n == 1 and v not in free)
    twice = frozenset(v for v, n in times_bound.items() if n > 1)
    return scan.lets, once, twice


class _Scan(IRVisitor):
    """The walk of :func:`_scan`: a statement's own expressions are counted when it is visited (none of
    them is inside a scope it opens), each use against the binding in scope."""

    statements_only = True

    def __init__(self, uses_of: VarUses):
        self.uses_of = uses_of
        self.lets: dict[int, _Binding] = {}
        self.times_bound: dict[Var, int] = {}
        self.free: set = set()

    def count(self, e: Expr) -> None:
        """The uses in ``e`` (no expression binds a variable: counted at once, per distinct object)."""
        depth = len(self.loops)
        for var, n in self.uses_of(e).items():
            binder = self.scope.get(var)
            if binder is None:
                self.free.add(var)
            elif binder.__class__ is Let:
                binding = self.lets[id(binder)]
                binding.count += n
                binding.in_loop |= depth > binding.loop_depth

    def visit_Stmt(self, node: Stmt) -> None:
        cls = node.__class__
        if cls is Let or cls is For or cls is Alloc:
            var = node.buf if cls is Alloc else node.var
            self.times_bound[var] = self.times_bound.get(var, 0) + 1
            if cls is Let:
                self.lets[id(node)] = _Binding(len(self.loops))
                self.count(node.value)
            elif cls is For:
                self.count(node.init)
                self.count(node.bound)
            return
        for k in node._children_of(node):
            if isinstance(k, Expr):
                self.count(k)


class _StmtSimplifier:
    def __init__(self, root: Stmt, ranges, dirty: set[Var] | None, uses_of: VarUses):
        self.uses_of = uses_of
        self.lets, fresh, self.rebound = _scan(root, uses_of)
        self.facts = Facts(ranges, fresh)
        self.s = Simplifier(self.facts)
        self.live: dict[Var, int] = {}  # occurrences of each variable in the output so far
        self.deepest: dict[Var, int] = {}  # the deepest loop nesting of those occurrences
        self.loop_depth = 0  # loops around the statement being simplified
        self.unsettled: set[Var] = set()  # kept lets left with one use that another round propagates
        # None: simplify every expression; else only those that mention one of these variables
        self.dirty = None if dirty is None else set(dirty)
        self._rebound_memo: dict[int, tuple[Expr, bool]] = {}

    def run(self, root: Stmt) -> Stmt:
        stack: list[_Step] = []
        pending: Stmt | _Step = self._visit(root)
        while True:
            if isinstance(pending, Stmt):
                if not stack:
                    return pending
                step, sent = stack.pop(), pending
            else:
                step, sent = pending, None
            try:
                child = step.send(sent)
            except StopIteration as done:
                pending = done.value
                continue
            stack.append(step)
            pending = self._visit(child)

    def _visit(self, s: Stmt) -> Stmt | _Step:
        handler = _HANDLERS.get(type(s))
        if handler is None:
            raise TypeError(f"cannot simplify statement {type(s).__name__}")
        return handler(self, s)

    # -- expressions ----------------------------------------------------------------------------
    def expr(self, e: Expr) -> Expr:
        if self.dirty is not None and not self._dirty(e):
            return e  # the previous round's output under the same facts
        return self.s.expr(e)

    def _dirty(self, e: Expr) -> bool:
        """In a later round: ``e`` mentions a variable whose value or facts this round changes."""
        return self.dirty is not None and not self.dirty.isdisjoint(self.uses_of(e))

    def emit(self, *exprs: Expr | None) -> None:
        """Count variable uses of expressions that end up in the output."""
        live, deepest, depth = self.live, self.deepest, self.loop_depth
        for e in exprs:
            if e is not None:
                for var, n in self.uses_of(e).items():
                    live[var] = live.get(var, 0) + n
                    if deepest.get(var, -1) < depth:
                        deepest[var] = depth

    # -- statements -----------------------------------------------------------------------------
    def _let(self, st: Let) -> _Step:
        if self._dirty(st.value):
            self.dirty.add(st.var)  # its value, or the facts of its value, change
        value = self.expr(st.value)
        mark = self.facts.mark()
        if self._propagates(st, value):
            if self.dirty is not None:
                self.dirty.add(st.var)
            self.facts.substitute(st.var, value)
            body = yield st.body
            self.facts.restore(mark)
            return body
        self.facts.bind(st.var, self.s.info(value))
        rebound = self.rebound and (st.var in self.rebound or self._mentions_rebound(value))
        if self._inside_block(value) and not rebound:   # a name bound again would read another value
            self.facts.offset(st.var, value.a, value.b.value)
        before = self.live.get(st.var, 0)
        outer_deepest = self.deepest.pop(st.var, -1)
        body = yield st.body
        self.facts.restore(mark)
        uses = self.live.get(st.var, 0) - before
        in_loop = self.deepest.get(st.var, -1) > self.loop_depth
        self.deepest[st.var] = max(outer_deepest, self.deepest.get(st.var, -1))
        if uses == 0:
            return body
        if (uses == 1 and not in_loop and not self.s.structure.reads_memory(value)
                and not (self.rebound and self._mentions_rebound(value))):
            self.unsettled.add(st.var)
        self.emit(value)
        if value is st.value and body is st.body:
            return st
        return Let.make(st.var, value, body, origin=st.origin)

    def _propagates(self, st: Let, value: Expr) -> bool:
        if self.rebound and self._mentions_rebound(value):
            return False  # substituting could capture a variable bound again inside the body
        if isinstance(value, (IntImm, BoolImm, FloatImm, Var)):
            return True
        uses = self.lets[id(st)]
        if uses.count == 0:
            return True
        return uses.count == 1 and not uses.in_loop and not self.s.structure.reads_memory(value)

    def _inside_block(self, e: Expr) -> bool:
        """``u + c`` of a scalar integer ``u`` aligned to a multiple ``m`` that ``c`` is not, without
        overflow: an offset inside an aligned block (see the module docstring). Offsets by whole blocks
        are not (the bases of header chains, ``k + 2048`` read as itself plus 256, 512, ...)."""
        if not (isinstance(e, Binary) and e.op is Op.ADD and isinstance(e.a, Var) and isinstance(e.b, IntImm)
                and e.type.is_int and e.type.lanes == 1):
            return False
        info = self.s.info(e.a)
        return info is not None and info.mod > 1 and e.b.value % info.mod != 0 and self.s.fits(self.s.lf(e))

    def _mentions_rebound(self, e: Expr) -> bool:
        memo = self._rebound_memo
        for node in post_order(e, done=memo):
            memo[id(node)] = (node, (isinstance(node, Var) and node in self.rebound)
                              or any(memo[id(k)][1] for k in node.children()))
        return memo[id(e)][1]

    def _for(self, st: For) -> _Step:
        if self._dirty(st.init) or self._dirty(st.bound):
            self.dirty.add(st.var)
        init, bound = self.expr(st.init), self.expr(st.bound)
        info = None
        if init.type == bound.type == st.var.type:
            first, last = self.s.info(init), self.s.info(bound)
            if last.hi <= first.lo:
                return empty()
            if last.hi - 1 + st.step <= st.var.type.scalar.int_range()[1]:
                info = Info.make(first.lo, last.hi - 1, gcd(st.step, first.mod), first.rem)
        mark = self.facts.mark()
        self.facts.bind(st.var, info)
        self.loop_depth += 1
        body = yield st.body
        self.loop_depth -= 1
        self.facts.restore(mark)
        if _is_empty(body):
            return body
        self.emit(init, bound)
        if init is st.init and bound is st.bound and body is st.body:
            return st
        return For.make(st.var, init, bound, body, st.step, st.unroll, origin=st.origin)

    def _if(self, st: If) -> _Step:
        if self._dirty(st.cond):
            self.dirty.update(self.uses_of(st.cond))  # the branches learn other facts of its variables
        cond = self.expr(st.cond)
        if isinstance(cond, BoolImm):
            branch = st.then if cond.value else st.else_
            if branch is None:
                return empty()
            return (yield branch)
        mark = self.facts.mark()
        then = (yield st.then) if self._learn(cond, True) else empty()
        self.facts.restore(mark)
        else_ = None
        if st.else_ is not None:
            else_ = (yield st.else_) if self._learn(cond, False) else empty()
            self.facts.restore(mark)
            if _is_empty(else_):
                else_ = None
        if _is_empty(then):
            if else_ is None:
                return then
            cond, then, else_ = self.s.unary(Op.NOT, cond), else_, None
        self.emit(cond)
        if cond is st.cond and then is st.then and else_ is st.else_:
            return st
        return If.make(cond, then, else_, origin=st.origin)

    def _learn(self, cond: Expr, truth: bool) -> bool:
        """Refine the facts with ``cond == truth``; False when they become contradictory."""
        todo = [(cond, truth)]
        while todo:
            e, holds = todo.pop()
            if isinstance(e, Unary) and e.op is Op.NOT:
                todo.append((e.a, not holds))
            elif isinstance(e, Binary) and e.op is (Op.AND if holds else Op.OR):
                todo += [(e.a, holds), (e.b, holds)]
            elif isinstance(e, Var) and e.type.is_bool:
                if not self.facts.refine(e, int(holds), int(holds)):
                    return False
            elif isinstance(e, Binary) and e.op.is_compare:
                op = e.op if holds else _NEGATED[e.op]
                if not (self._learn_compare(op, e.a, e.b) and self._learn_compare(MIRROR[op], e.b, e.a)):
                    return False
        return True

    def _learn_compare(self, op: Op, v: Expr, other: Expr) -> bool:
        """Refine variable ``v`` from ``v op other`` (integers, compared in their common type)."""
        t = common_type(v.type, other.type)
        if not (isinstance(v, Var) and t.is_int and v.type.is_int):
            return True
        own, bound = self.s.info(v), self.s.info_in(other, t)
        tlo, thi = t.scalar.int_range()
        if not (tlo <= own.lo and own.hi <= thi):
            return True  # the comparison sees a wrapped copy of v
        lo, hi = {Op.LT: (tlo, bound.hi - 1), Op.LE: (tlo, bound.hi), Op.GT: (bound.lo + 1, thi),
                  Op.GE: (bound.lo, thi), Op.EQ: (bound.lo, bound.hi), Op.NE: (tlo, thi)}[op]
        if op is Op.NE and bound.is_point:
            lo = own.lo + (own.lo == bound.lo)
            hi = own.hi - (own.hi == bound.lo)
        return self.facts.refine(v, lo, hi)

    def _seq(self, st: Seq) -> _Step:
        out: list[Stmt] = []
        changed = False
        for child in st.stmts:
            done = yield child
            changed |= done is not child
            if _is_empty(done):
                changed = True
            else:
                out.append(done)
        if not changed:
            return st
        return out[0] if len(out) == 1 else Seq.make(out, origin=st.origin)

    def _group(self, st: Group) -> _Step:
        body = yield st.body
        return st if body is st.body else Group.make(st.label, body, origin=st.origin)

    def _alloc(self, st: Alloc) -> _Step:
        body = yield st.body
        if _is_empty(body):
            return body
        if body is st.body:
            return st
        return Alloc.make(st.buf, st.size, st.kind, body, st.attrs, origin=st.origin)

    def _store(self, st: Store) -> Stmt:
        mask = None if st.mask is None else self.expr(st.mask)
        if isinstance(mask, BoolImm):
            if not mask.value:
                return empty()
            mask = None
        offset, value = self.expr(st.offset), self.expr(st.value)
        self.emit(st.buf, offset, value, mask)
        if offset is st.offset and value is st.value and mask is st.mask:
            return st
        return Store.make(st.buf, offset, value, st.stride, mask, origin=st.origin)

    def _call(self, st: FuncCall) -> Stmt:
        args = tuple(self.expr(a) for a in st.args)
        if isinstance(st.func, Send) and never_enabled(st.func.operands(args).mask):
            return empty()
        self.emit(*args)
        if all(a is b for a, b in zip(args, st.args)):
            return st
        return FuncCall.make(st.func, args, st.attrs, origin=st.origin)


_HANDLERS = {
    Let: _StmtSimplifier._let, For: _StmtSimplifier._for, If: _StmtSimplifier._if,
    Seq: _StmtSimplifier._seq, Group: _StmtSimplifier._group, Alloc: _StmtSimplifier._alloc,
    Store: _StmtSimplifier._store, FuncCall: _StmtSimplifier._call,
}
