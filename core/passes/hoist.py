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
3. integer *vector* sums (the per-lane headers of scattered messages) are
   split the same way: their addends, seen through ``+ - *constant``,
   ``add3``, ``mad`` by a constant, broadcasts and ramp bases, fall into
   loop-invariant vectors and scalars, computed before the loop into one
   vector ``<k>_inv``, and the rest, whose scalar part (with the constant)
   is built as one scalar sum, the constant an immediate beside it:
   ``(ic0 + base_lane + kw*64) * 2`` in loop
   ``ic`` becomes ``k_inv + ic0*2`` with ``k_inv = base_lane*2 + kw*128``, so
   the loop adds a scalar to a hoisted base instead of recomputing every
   lane's address. A hoisted vector holds registers for the whole loop, so
   vectors are lifted only while the free registers of the kernel
   (``cse.register_budget``) allow. Where only scalars are invariant (the
   lanes vary with a message loop), the scalars and the constant are lifted
   as one scalar sum, which the loop around sees as a sum of its own. Where
   the invariant part is one variable already, the sum is regrouped when
   that costs no more operations, so its scalars are one scalar sum that
   strength reduction carries as one register (``kh*7168 + ic*32``, not two);
4. the invariant terms of a send's mask (a conjunction: the padding
   condition of the iteration's pixel, the same for every message of a
   message loop, beside a message's own tail test; for a scattered message
   the per-lane padding test of its lanes' pixels) are computed once before
   the loop into ``<k>_mask``: the loop's unrolled copies then test one value
   (and their own terms) instead of each recomputing the comparisons. A
   vector mask holds a register over the loop, so it is named only while
   the free registers allow. A bool let of conjuncts (a mask several sends
   read: an SLM store and its store of zeros) is split alike; a mask whose
   invariant conjuncts are those of a hoisted ``&&`` let (in another order:
   an unrolled copy's load mask and its SLM store's) reads that let, and a
   negated variable stays as it is (the code generator negates the flag);
5. a send's header whose value is invariant moves in front of the loop into
   a header register of its own (``_LiftHeaders``), with the sends right
   after it that read the same header.

Linear forms are exact modulo ``2**bits``, so reassociating a sum never
changes its value. Expressions are pure and total, so computing a value
before a loop that might not run is harmless; a loop known to run zero
times, and everything inside it, is left alone (hoisting would only add work).
"""
from __future__ import annotations

from typing import Any, Mapping

from ..ir.expr import Binary, Broadcast, BoolImm, Expr, IntImm, Load, Op, Ramp, Ternary, Unary, Var, land, wrap_int
from ..ir.funcs import Send
from ..ir.node import Node
from ..ir.simplify.stmt import VarUses
from ..ir.stmt import Alloc, For, FuncCall, Let, MemKind, Seq, Stmt, Store, seq
from ..ir.types import Type, s32
from ..ir.visitor import IRMutator, distinct_nodes, statements
from .cse import register_budget
from .forms import Forms
from ..ir.names import Names
from .opcount import int_ops, is_int_op
from .send_headers import ADDR_ATTR, header_of
from .tree import DropLets, binder, child_stmts, distinct_nodes, expr_vars, has_load, own_exprs, trip_count, var_names


def _is_linear(e: Node) -> bool:
    if not isinstance(e, Expr) or not e.type.is_int or e.type.lanes != 1:
        return False
    if isinstance(e, Binary):
        return e.op in (Op.ADD, Op.SUB, Op.MUL)
    return isinstance(e, Unary) and e.op is Op.NEG


def _is_vector_linear(e: Node) -> bool:
    if not isinstance(e, Expr) or not e.type.is_int or e.type.lanes == 1:
        return False
    if isinstance(e, Binary):
        return e.op in (Op.ADD, Op.SUB, Op.MUL)
    if isinstance(e, Ternary):
        return e.op in (Op.ADD3, Op.MAD)
    return isinstance(e, Unary) and e.op is Op.NEG


def maximal_sums(roots, *kinds) -> list[set[int]]:
    """Per predicate of ``kinds`` (each saying which nodes are linear), the ids of the linear nodes under
    ``roots`` whose parent is not a linear node of the same type. One walk of the distinct nodes of all
    the roots together: an unrolled body's expressions share most of their subtrees."""
    inner: list[set[int]] = [set() for _ in kinds]
    candidates: list[set[int]] = [set() for _ in kinds]
    for n in distinct_nodes(*roots):
        kids = n._children_of(n)
        for linear, found, under in zip(kinds, candidates, inner):
            if linear(n):
                found.add(id(n))
                under.update(id(k) for k in kids if k.type == n.type)
    return [found - under for found, under in zip(candidates, inner)]


class _SplitSums(IRMutator):
    """Rewrites the maximal sums of one loop body into variant terms plus a hoisted variable."""

    def __init__(self, maximal: set[int], vectors: set[int], inner: set[str], ctx: "_Hoist", prefix: str,
                 trips: int | None, lets: dict[str, Expr] | None = None):
        self.maximal, self.vectors, self.inner, self.forms = maximal, vectors, inner, ctx.forms
        self.names, self.prefix, self.trips, self.ctx = ctx.names, prefix, trips, ctx
        self.lets = lets or {}  # the body's integer vector lets that stay in it: name -> value
        self.lifted: dict[Expr, Expr] = {}  # invariant sum -> its variable

    def _invariant(self, e: Expr) -> bool:
        return not has_load(e) and not any(v.name in self.inner for v in expr_vars(e))

    def _worth(self, new: Expr, invariant: Expr, build, dry: bool = False,
               vectors_first: bool = False) -> Expr | None:
        """``build(v)`` with ``v`` the variable of ``invariant`` (made now) when that saves operations
        per iteration and, for a loop of known trips, over the loop; None when not. ``dry``: priced
        with a stand-in variable, nothing taken or named. ``vectors_first``: vector operations saved
        count before scalar ones (a header seen through the lanes' row trades vector products for
        scalar ones, which strength reduction then carries as one sum)."""
        var = self.lifted.get(invariant)
        # Price the split with a stand-in variable (a variable costs nothing, whatever its name) so
        # that a split not made takes no name from the kernel.
        priced = var if var is not None else Var.make(invariant.type, self.prefix)
        built = build(priced)
        saved = int_ops(new) - int_ops(built)  # per iteration
        if vectors_first and _vector_ops(built) < _vector_ops(new):
            saved = max(saved, _vector_ops(new) - _vector_ops(built))
        if saved <= 0:
            return None
        if var is None and self.trips is not None and int_ops(invariant) >= saved * self.trips:
            return None  # computing it ahead costs more than the few iterations save
        if dry:
            return build(priced)
        if var is None:
            if not self.ctx.take(invariant.type):
                return None
            var = self.lifted[invariant] = self.names.fresh(self.prefix, invariant.type)
        return build(var)

    def mutate_Expr(self, old: Expr, new: Expr):
        if id(old) in self.vectors:
            return self._split_vector(new)
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
        out = self._worth(new, invariant, lambda v: self.forms.build(lf.type, {**keep, v: 1}, lf.const))
        return new if out is None else out

    def _split_vector(self, new: Expr) -> Expr:
        """Vector sum ``new`` as a hoisted vector of its invariant addends plus the rest, the rest's
        scalars (and the constant) summed as one scalar; seen through the body's vector lets where that
        leaves fewer vector operations (a header over the lanes' row that the mask shares: the row's
        invariant lanes join the hoisted vector, its digit joins the scalar sum, which strength
        reduction then carries)."""
        if self.lets:
            plain, seen = self._split_vector_with(new, {}, True), self._split_vector_with(new, self.lets, True)
            if seen is not new and (_vector_ops(seen), int_ops(seen)) < (_vector_ops(plain), int_ops(plain)):
                return self._split_vector_with(new, self.lets)
        return self._split_vector_with(new, {})

    def _split_vector_with(self, new: Expr, lets: Mapping[str, Expr], dry: bool = False) -> Expr:
        t = new.type
        scalar = t.with_lanes(1)
        terms, const = vector_addends(new, lets)
        if any(x.type.lanes not in (1, t.lanes) or x.type.scalar is not t.scalar for x in terms):
            return new  # (a term of another width would be summed at its own width once hoisted)
        fixed = {x: c for x, c in terms.items() if self._invariant(x)}
        if not fixed or len(fixed) == len(terms):
            return new  # nothing invariant to lift, or nothing varies (the loop around it lifts it)
        varying = {x: c for x, c in terms.items() if x not in fixed}
        scalars = {x: c for x, c in varying.items() if x.type.lanes == 1}
        fixed_scalars = {x: c for x, c in fixed.items() if x.type.lanes == 1}
        invariant = _vector_sum(t, {x: c for x, c in fixed.items() if x.type.lanes > 1}, self.forms)
        if invariant is None:
            if not any(x.type.lanes > 1 for x in varying):
                return new  # the lanes differ only by what stays: nothing per lane to regroup
            # Only scalars are invariant (the lanes vary with a message loop): their sum, with the
            # constant, is one scalar computed before the loop, which the loop around sees as a sum
            # of its own (strength reduction carries it across iterations).
            invariant, const = self.forms.build(scalar, fixed_scalars, const), 0
        elif fixed_scalars:
            invariant = Binary.make(Op.ADD, invariant, self.forms.build(scalar, fixed_scalars, 0))

        def build(base: Expr) -> Expr:
            out = base
            if scalars:
                out = Binary.make(Op.ADD, out, self.forms.build(scalar, scalars, 0))
            if const:  # an immediate of its own, where ``add3`` takes it along
                out = Binary.make(Op.ADD, out, IntImm.make(scalar, const))
            rest = _vector_sum(t, {x: c for x, c in varying.items() if x.type.lanes > 1}, self.forms)
            return out if rest is None else Binary.make(Op.ADD, out, rest)

        if int_ops(invariant) == 0:  # a bare variable: regrouping may still save operations
            # (or, at the same count, make the scalars one sum, which strength reduction carries whole)
            out = build(invariant)
            return out if int_ops(out) <= int_ops(new) else new
        out = self._worth(new, invariant, build, dry, vectors_first=bool(lets))
        return new if out is None else out


def _vector_ops(e: Expr) -> int:
    """The integer operations of ``e`` whose results are vectors (every lane's; a scalar one is one): its
    distinct vector nodes that are one operation each (what a node costs beyond its operands)."""
    return sum(1 for n in distinct_nodes(e) if is_int_op(n) and n.type.lanes > 1)


def _constant(e: Expr) -> int | None:
    if isinstance(e, Broadcast):
        e = e.a
    return e.value if isinstance(e, IntImm) else None


def vector_addends(e: Expr, lets: Mapping[str, Expr] | None = None) -> tuple[dict[Expr, int], int]:
    """The addends of integer vector ``e`` as ``({term: coefficient}, constant)``, seen through
    ``+ - *constant``, ``add3``, ``mad`` by a constant, broadcasts and ramp bases, and the variables
    of ``lets`` (name -> value: a lane vector a mask shares, whose invariant part the header's sum then
    lifts); a term is a vector or a scalar of ``e``'s element type (a scalar adds to every lane)."""
    scalar = e.type.scalar
    terms: dict[Expr, int] = {}
    const = 0
    stack: list[tuple[Expr, int]] = [(e, 1)]
    while stack:
        x, c = stack.pop()
        parts = _addend_parts(x, c, lets) if x.type.scalar is scalar else None
        if parts is None:
            terms[x] = terms.get(x, 0) + c
        elif isinstance(parts, int):
            const += parts
        else:
            stack += parts
    t = e.type
    return {x: wrap_int(c, t) for x, c in terms.items() if wrap_int(c, t)}, wrap_int(const, t)


def _addend_parts(x: Expr, c: int, lets: Mapping[str, Expr] | None) -> list[tuple[Expr, int]] | int | None:
    """One step of :func:`vector_addends` on ``c * x``: the parts it sums (``(expression, coefficient)``,
    in the order the walk takes them), a constant, or None where ``x`` is a term itself."""
    k = _constant(x)
    if isinstance(x, Var) and lets and x.name in lets and lets[x.name].type == x.type:
        return [(lets[x.name], c)]
    if k is not None:
        return c * k
    if isinstance(x, Broadcast):
        return [(x.a, c)]
    if isinstance(x, Ramp) and not (isinstance(x.base, IntImm) and x.base.value == 0):
        return [(x.base, c), (Ramp.make(IntImm.make(x.base.type, 0), x.stride, x.lanes), c)]
    if isinstance(x, Unary) and x.op is Op.NEG:
        return [(x.a, -c)]
    if isinstance(x, Binary) and x.op in (Op.ADD, Op.SUB):
        return [(x.a, c), (x.b, c if x.op is Op.ADD else -c)]
    if isinstance(x, Binary) and x.op is Op.MUL and (_constant(x.a) is not None or _constant(x.b) is not None):
        k, y = (_constant(x.a), x.b) if _constant(x.a) is not None else (_constant(x.b), x.a)
        return [(y, c * k)]
    if isinstance(x, Ternary) and x.op is Op.ADD3:
        return [(x.a, c), (x.b, c), (x.c, c)]
    if isinstance(x, Ternary) and x.op is Op.MAD and (_constant(x.b) is not None or _constant(x.c) is not None):
        k, y = (_constant(x.b), x.c) if _constant(x.b) is not None else (_constant(x.c), x.b)
        return [(x.a, c), (y, c * k)]
    return None


def _vector_sum(t: Type, terms: dict[Expr, int], forms: Forms) -> Expr | None:
    """``sum(c * term)`` in vector type ``t``, its terms in a process-independent order (None: none)."""
    out: Expr | None = None
    for x in sorted(terms, key=forms.key):
        c = terms[x]
        part = x if c == 1 else Binary.make(Op.MUL, x, IntImm.make(t.with_lanes(1), c))
        out = part if out is None else Binary.make(Op.ADD, out, part)
    return out


class _NameMasks(IRMutator):
    """Names the loop-invariant masks of the sends in one loop body: each distinct one becomes a
    variable computed before the loop (the unrolled copies of a message loop then share it). A
    vector mask (a scattered message's per-lane padding test) holds a register over the loop, so
    it is named only while the free registers allow."""

    def __init__(self, inner: set[str], ctx: "_Hoist", prefix: str, conjunctions: Mapping[str, Expr],
                 hoisted: list[Let] = ()):
        self.inner, self.names, self.prefix, self.ctx = inner, ctx.names, prefix, ctx
        self.conjunctions = conjunctions
        self.lifted: dict[Expr, Var] = {}
        # The hoisted ``&&`` lets, by their conjuncts (through each other): a mask of the same
        # conjuncts in another order (an unrolled copy's load mask, its SLM store's) reads that let.
        self.ands = {s.var.name: s.value for s in hoisted if s.var.type.is_bool
                     and isinstance(s.value, Binary) and s.value.op is Op.AND}
        self.by_terms: dict[frozenset, Var] = {}
        for s in hoisted:
            if s.var.name in self.ands:
                self.by_terms.setdefault(self._flat([s.value]), s.var)
        self.expanded: set[str] = set()  # conjunction lets whose one use now reads their terms
        self._seen: list[str] = []

    def _invariant(self, e: Expr) -> bool:
        return not has_load(e) and not any(v.name in self.inner for v in expr_vars(e))

    def mutate_FuncCall(self, old: FuncCall, new: FuncCall):
        if not isinstance(new.func, Send):
            return new
        mask = self._split(new.ops.mask)
        return new if mask is None else new.with_ops(mask=mask)

    def mutate_Let(self, old: Let, new: Let):
        # A mask that several sends read (an SLM store and its store of zeros) is a let of its own.
        if new.var.name in self.expanded:
            return new.body
        if not new.var.type.is_bool or not isinstance(new.value, Binary) or new.value.op is not Op.AND:
            return new
        value = self._split(new.value)
        return new if value is None else Let.make(new.var, value, new.body, origin=new.origin)

    def _split(self, mask: Expr) -> Expr | None:
        """``mask`` with its invariant conjuncts one lifted variable (None: unchanged)."""
        if _named(mask):
            return None
        self._seen = []
        terms = self._terms(mask)
        fixed = [t for t in terms if self._invariant(t)]
        if not fixed or (len(fixed) == 1 and _named(fixed[0])):
            return None
        value = land(*fixed)
        var = self.lifted.get(value)
        if var is None:
            var = self.by_terms.get(self._flat(fixed))
        if var is None:
            # A vector of bools lives in registers as one 32-bit mask per lane.
            if not self.ctx.take(s32.with_lanes(value.type.lanes)):
                return None
            var = self.lifted[value] = self.names.fresh(self.prefix, value.type)
        self.expanded.update(self._seen)
        return land(var, *(t for t in terms if t not in fixed))

    def _flat(self, terms: list[Expr]) -> frozenset:
        """The conjuncts of ``terms``, seen through the hoisted ``&&`` lets."""
        out, stack = set(), list(terms)
        while stack:
            for t in _conjuncts(stack.pop()):
                value = self.ands.get(t.name) if isinstance(t, Var) else None
                if value is None:
                    out.add(t)
                else:
                    stack.append(value)
        return frozenset(out)

    def _terms(self, mask: Expr) -> list[Expr]:
        """The conjuncts of ``mask``, seen through the ``&&`` lets that only it reads: their invariant
        conjuncts join the mask's, their others stay one term (a padding test of the row, named by
        ``cse``, inside the mask of a vector message: ``lanes && (m && row)`` lifts ``lanes && m`` as
        one vector, and ``row`` keeps its range tests together for ``peephole``)."""
        out = []
        for t in _conjuncts(mask):
            value = self.conjunctions.get(t.name) if isinstance(t, Var) else None
            inner = _conjuncts(value) if value is not None else []
            fixed = [x for x in inner if self._invariant(x)]
            if not fixed or len(fixed) == len(inner):
                out.append(t)
                continue
            self._seen.append(t.name)
            out += fixed + [land(*(x for x in inner if not self._invariant(x)))]
        return out


def _single_use_conjunctions(running: list[Stmt], roots: list[Expr]) -> dict[str, Expr]:
    """The bool lets of a loop body whose value is a ``&&`` and that one expression reads once."""
    ands = {s.var.name: s.value for s in running if isinstance(s, Let) and s.var.type.is_bool
            and isinstance(s.value, Binary) and s.value.op is Op.AND}
    if not ands:
        return {}
    uses = VarUses()
    count: dict[str, int] = {}
    for e in roots:
        for v, n in uses(e).items():
            if v.name in ands:
                count[v.name] = count.get(v.name, 0) + n
    return {name: value for name, value in ands.items() if count.get(name) == 1}


def _named(e: Expr) -> bool:
    """A constant or variable mask (or one broadcast), or a variable's negation (the flag the code
    generator sets for the variable, negated in the predicate): nothing to compute ahead."""
    if isinstance(e, Unary) and e.op is Op.NOT:
        e = e.a
    return isinstance(e.a if isinstance(e, Broadcast) else e, (BoolImm, Var))


def _conjuncts(e: Expr) -> list[Expr]:
    """The terms of a tree of ``&&``, left to right."""
    out, stack = [], [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Binary) and x.op is Op.AND:
            stack.extend((x.b, x.a))
        else:
            out.append(x)
    return out


class _LiftHeaders(IRMutator):
    """In one loop body: a send's header store (written right before the send, ``send_headers``)
    whose value is loop-invariant moves in front of the loop into a header register of its own,
    which the send then reads; sends with equal invariant headers into one memory share one. Each
    such register is taken from the free registers; where none is left the store stays."""

    def __init__(self, inner: set[str], ctx: "_Hoist"):
        self.inner, self.ctx = inner, ctx
        self.lifted: dict[tuple, tuple[Var, int, Expr]] = {}  # (value, memory) -> (header, bytes, value)
        self.detached: set[str] = set()  # headers some send no longer reads

    def pre_For(self, node: For):
        return node  # an inner loop's headers were lifted out of it when it was hoisted

    def mutate_Seq(self, old, new):
        stmts = list(new.stmts)
        out: list[Stmt] = []
        i = 0
        while i < len(stmts):
            call = stmts[i + 1] if i + 1 < len(stmts) else None
            moved = self._lift(stmts[i], call) if call is not None else None
            if moved is None:
                out.append(stmts[i])
                i += 1
                continue
            out.append(moved)
            header = stmts[i].buf.name
            i += 2
            # A send right after it reading the same header (send lowering shares one between
            # sends of one address) reads the lifted one too.
            while i < len(stmts) and header_of(stmts[i]) == header:
                out.append(stmts[i].with_ops(mem_offset=moved.ops.mem_offset))
                i += 1
        return new if len(out) == len(stmts) else seq(*out)

    def _lift(self, store: Stmt, call: Stmt) -> Stmt | None:
        """``call`` reading a lifted header in place of ``store``'s, or None."""
        if not (isinstance(store, Store) and isinstance(call, FuncCall) and isinstance(call.func, Send)
                and (ADDR_ATTR, "header") in call.attrs):
            return None
        off = call.ops.mem_offset
        if not (isinstance(off, Load) and off.buf == store.buf and isinstance(off.offset, IntImm)
                and off.offset.value == 0 and isinstance(store.offset, IntImm) and store.offset.value == 0
                and store.mask is None and off.type == store.value.type):
            return None
        value = store.value
        if has_load(value) or any(v.name in self.inner for v in expr_vars(value)):
            return None
        size = self.ctx.header_bytes.get(store.buf.name)
        if size is None:
            return None
        key = (value, call.ops.mem.name, call.func.space)
        hit = self.lifted.get(key)
        if hit is None:
            if not self.ctx.take_bytes(size):
                return None
            hit = self.lifted[key] = (self.ctx.names.fresh(store.buf.name, store.buf.type), size, value)
        self.detached.add(store.buf.name)
        return call.with_ops(mem_offset=Load.make(off.type, hit[0], 0))


class _DropAllocs(IRMutator):
    """Removes the allocations of ``names`` that nothing reads or writes any more in ``ir``.

    A name one allocation binds is read in its body if anywhere (outside it, it is not in scope): one
    walk of the kernel finds the names some node other than an allocation reads; a name bound twice is
    looked for in each body."""

    def __init__(self, ir: Node, names: set[str]):
        self.names = names
        self.read: set[str] = set()
        binders: dict[str, int] = {}
        for node in distinct_nodes(ir):
            if node.__class__ is Alloc:
                binders[node.buf.name] = binders.get(node.buf.name, 0) + 1
                continue
            self.read.update(k.name for k in node._children_of(node) if k.__class__ is Var)
        self.twice = {name for name, n in binders.items() if n > 1}

    def mutate_Alloc(self, old: Alloc, new: Alloc):
        name = new.buf.name
        if name in self.names and name not in (var_names(new.body) if name in self.twice else self.read):
            return new.body
        return new


class _Hoist(IRMutator):
    def __init__(self, ir: Node, free_bytes: int | None, reg_bytes: int):
        self.root = ir
        self.forms = Forms()
        self.names = Names.of(ir)
        self.free_bytes = free_bytes  # None: no register file to run out of
        self.reg_bytes = reg_bytes
        # The send headers' allocations (name -> bytes) whose every read is the send right after
        # the header's store (as send lowering writes them): such a store can move with its send.
        stmts = statements(ir)  # sends, their headers' stores and allocations are statements: no expression walked
        headers = paired_headers(stmts)
        self.header_bytes = {n.buf.name: n.size for n in stmts
                             if isinstance(n, Alloc) and n.kind is MemKind.GRF and n.buf.name in headers}
        self.detached: set[str] = set()

    def take(self, t: Type) -> bool:
        """Whether a hoisted value of type ``t`` fits the free registers (taking them if so); scalars
        always do (the model's reserve covers them)."""
        return t.lanes == 1 or self.take_bytes(-(-t.size // self.reg_bytes) * self.reg_bytes)

    def take_bytes(self, need: int) -> bool:
        """Whether ``need`` more register bytes held over a loop fit (taking them if so)."""
        if self.free_bytes is None:
            return True
        if need > self.free_bytes:
            return False
        self.free_bytes -= need
        return True

    def mutate_For(self, old: For, new: For):
        if trip_count(new) == 0:
            return new  # a loop that never runs: hoisting would make its code run
        return hoist_loop(new, self)


def _running_stmts(body: Stmt) -> list[Stmt]:
    """The statements of ``body`` in program order, less those inside loops known to run zero times
    (moving their work in front of the loop would make it run)."""
    return statements(body, lambda s: not (isinstance(s, For) and trip_count(s) == 0))


def _invariant_lets(loop: For) -> tuple[list[Let], set[str]]:
    """The lets of ``loop``'s body that can move out, in program order, and the names that stay inside."""
    inner = {loop.var.name}
    for n in statements(loop.body):  # binders are statements: no expression walked
        v = binder(n)
        if v is not None:
            inner.add(v.name)
    hoisted: list[Let] = []
    for s in _running_stmts(loop.body):
        if isinstance(s, Let) and not has_load(s.value) and not any(v.name in inner for v in expr_vars(s.value)):
            hoisted.append(s)
            inner.discard(s.var.name)
    return hoisted, inner


def _carries_registers(loop: For) -> bool:
    """Whether strength reduction has run on ``loop``: a let of its body reads a register the body
    stores to (an induction variable or a digit counter carried across iterations)."""
    nodes = statements(loop.body)  # lets and stores are statements: no expression walked
    read = {n.value.buf.name for n in nodes if isinstance(n, Let) and isinstance(n.value, Load)}
    return any(isinstance(n, Store) and n.buf.name in read for n in nodes)


def hoist_loop(loop: For, ctx: _Hoist) -> Stmt:
    """``loop`` with its invariant lets and sums computed in front of it."""
    hoisted, inner = _invariant_lets(loop)
    moved = {id(s) for s in hoisted}
    body = DropLets(lambda let: id(let) in moved).mutate(loop.body) if hoisted else loop.body
    running = _running_stmts(body)
    roots = [e for s in running for e in own_exprs(s)]
    # Seen through only before strength reduction, which carries the scalar sums this makes (once it has
    # run, hoisting unrolled copies, a scalar digit product would stay an operation of its own).
    lets = {} if _carries_registers(loop) else {
        s.var.name: s.value for s in running if isinstance(s, Let) and s.var.type.is_int
        and s.var.type.lanes > 1 and _is_vector_linear(s.value)}
    split = _SplitSums(*maximal_sums(roots, _is_linear, _is_vector_linear), inner, ctx,
                       f"{loop.var.name}_inv", trip_count(loop), lets)
    body = split.mutate(body)
    masks = _NameMasks(inner, ctx, f"{loop.var.name}_mask", _single_use_conjunctions(running, roots), hoisted)
    body = masks.mutate(body)
    headers = _LiftHeaders(inner, ctx)
    body = headers.mutate(body)
    ctx.detached |= headers.detached
    if body is loop.body:
        return loop
    out: Stmt = For.make(loop.var, loop.init, loop.bound, body, loop.step, loop.unroll, origin=loop.origin)
    if headers.lifted:
        out = seq(*(Store.make(buf, 0, value) for buf, _, value in headers.lifted.values()), out)
        for buf, size, _ in reversed(headers.lifted.values()):
            out = Alloc.make(buf, size, MemKind.GRF, out)
    for value, var in reversed(masks.lifted.items()):
        out = Let.make(var, value, out)
    for value, var in reversed(split.lifted.items()):
        out = Let.make(var, value, out)
    for s in reversed(hoisted):
        out = Let.make(s.var, s.value, out, origin=s.origin)
    return out


def hoist_invariants(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` with loop-invariant lets and sums hoisted out of every loop, vector sums within the
    registers the kernel leaves free (``cse.register_budget``; without a target, no limit); the
    same object when none."""
    model, free = register_budget(ir, options or {})
    ctx = _Hoist(ir, free, model.reg_bytes if model is not None else 4)
    out = ctx.mutate(ir)
    return _DropAllocs(out, ctx.detached).mutate(out) if ctx.detached else out


def paired_headers(stmts: list[Stmt]) -> set[str]:
    """Names of the headers every send among ``stmts`` (every statement object of a kernel once,
    ``visitor.statements``) reads right after the header's store, as send lowering writes them: such a
    store can move, or be predicated, with its send."""
    return {h for h in map(header_of, stmts) if h is not None} - _unpaired_headers(stmts)


def _unpaired_headers(stmts: list[Stmt]) -> set[str]:
    """Names of the headers some send reads without the header's store right before it, among the children
    of ``stmts`` (every statement object of a kernel once, ``visitor.statements``: checked at every place a
    send occurs, as one object may sit in several)."""
    out: set[str] = set()
    for n in stmts:
        kids = child_stmts(n)
        for i, k in enumerate(kids):
            h = header_of(k)
            if h is None:
                continue
            j = i - 1  # the store right before, or before the sends of the same header that precede it
            while isinstance(n, Seq) and j >= 0 and header_of(kids[j]) == h:
                j -= 1
            before = kids[j] if isinstance(n, Seq) and j >= 0 else None
            if not (isinstance(before, Store) and before.buf.name == h):
                out.add(h)
    return out

