"""Peephole fusion of integer arithmetic into three-operand instructions.

``(a + b) + c`` becomes ``add3(a, b, c)`` and ``a + b * c`` (either operand
order) becomes ``mad(a, b, c)``, on targets that have the instruction
(``Target.fused_int_ops``), and only in a form the target encodes: integer
widths up to ``max_bits`` and immediates only at the operand positions and
widths the target takes (Xe: 16-bit immediates in src0 or src2), trying the
orders that the sum's and the product's commutativity allow. An immediate that
fits nowhere leaves the ``mul``/``add`` alone, whose immediates are 32 bits.

A fusion applies only when the inner operation has the element type of the
outer one (a scalar inner operation adds the same to every lane of a vector
one: a header's ``base + (ic*2 + 768)``): then both forms compute the exact
sum modulo ``2**bits`` and agree bit for bit, while a narrower inner operation
would have wrapped where the fused one does not. Float arithmetic is left alone (address arithmetic is what this
pass is for).

On Xe (a register's integer type is a free reinterpretation), a range test
``x >= lo && x < hi`` (``x > lo - 1`` likewise) of a 32-bit integer becomes one
unsigned comparison ``u32(x - lo) < hi - lo``: exact for every ``x``, since
``x - lo`` wraps modulo ``2**32`` and the range is shorter than that; a padding
test of a row or column costs one or two instructions instead of three.

Also on Xe, a signed division or remainder by a power of two ``2**k`` of a
value the analysis bounds below by zero (a cooperative copy's per-lane
indices, ``ramp(thread_id * 512, 4, 32) / 16 % 32``) is the shift
``x >> k`` or the mask ``x & (2**k - 1)``: one instruction where the signed
form is four (the rounding towards zero of a negative dividend) and six for
the remainder. The bounds are each variable's over the whole kernel (the
launch ranges, a loop's bounds, a let's value: names are bound once; a name
bound twice counts as unknown), so no scope has to be tracked; a vector's
hold for every lane (a ramp's lane ``l`` is ``base + stride * l``). On the
way, what those bounds leave a single value is that constant, and ``x + 0``,
``x * 1`` and ``x % d`` of ``0 <= x < d`` are ``x``.
"""
from __future__ import annotations

from typing import Any, Mapping

from ..ir.expr import Binary, Broadcast, Cast, Expr, IntImm, Load, Op, Ramp, Ternary, Var
from ..ir.simplify import Facts, Simplifier
from ..ir.simplify.engine import fold_immediates
from ..ir.simplify.bounds import Info
from ..ir.stmt import Alloc, For, Let
from ..ir.types import s32, u32
from ..ir.node import Node
from ..ir.visitor import IRMutator, IRVisitor, statements, var_names
from ..targets import FusedIntOps
from .let_opt import remove_unused_lets
from .mixed_radix import RANGE_ATTR
from .options import launch_ranges, target_of
from .tree import distinct_nodes


def fused_problem(fused: FusedIntOps, e: Ternary) -> str | None:
    """Why the ``add3``/``mad`` ``e`` is not an instruction ``fused`` encodes; None when it is."""
    imms = {i: x.value for i, x in enumerate((e.a, e.b, e.c)) if isinstance(x, IntImm)}
    return fused.problem(e.op.name.lower(), e.type.scalar.bits, imms)


class _Fuse(IRMutator):
    def __init__(self, fused: FusedIntOps, ranges: bool, sums: dict | None = None):
        self.fused = fused
        self.ranges = ranges  # range tests as one unsigned comparison
        self.sums = sums or {}  # let variable -> its value, where that is a scalar ``a + b``

    def mutate_Binary(self, old: Binary, new: Binary):
        if new.op is Op.AND and self.ranges:
            test = _range_test(new, self._shift)
            return _range_in_conjunction(new, self._shift) if test is None else test
        if new.op is not Op.ADD or not new.type.is_int:
            return new
        for inner, other in ((new.a, new.b), (new.b, new.a)):
            if not isinstance(inner, Binary) or inner.type.scalar is not new.type.scalar \
                    or inner.type.lanes not in (1, new.type.lanes):
                continue
            if inner.op is Op.ADD:
                x, y = inner.a, inner.b
                orders = ((x, y, other), (other, y, x), (x, other, y), (y, x, other), (other, x, y), (y, other, x))
                fused = self._encodable(Op.ADD3, orders, new)
            elif inner.op is Op.MUL:
                fused = self._encodable(Op.MAD, ((other, inner.a, inner.b), (other, inner.b, inner.a)), new)
            else:
                continue
            if fused is not None:
                return fused
        return new

    def _shift(self, x: Expr, lo: int) -> Expr:
        """``x - lo``; where ``x`` is a let of ``a + b``, ``add3(a, b, -lo)`` (the let, read by nothing
        else, goes: one instruction instead of two)."""
        sub = Binary.make(Op.SUB, x, IntImm.make(s32, lo))
        value = self.sums.get(x.name) if isinstance(x, Var) else None
        if value is None:
            return sub
        fused = self._encodable(Op.ADD3, ((value.a, value.b, IntImm.make(s32, -lo)),), sub)
        return sub if fused is None else fused

    def _encodable(self, op: Op, orders, outer: Binary) -> Expr | None:
        for a, b, c in orders:
            e = Ternary.make(op, a, b, c, origin=outer.origin)
            if fused_problem(self.fused, e) is None:
                return e
        return None


def _bound(test: Expr, x: Expr | None = None) -> tuple[Expr, str, int] | None:
    """``(x, "lo" | "hi", bound)`` when ``test`` is ``x >= lo`` (``x > lo - 1``) or ``x < hi``
    (``x <= hi - 1``) of a signed 32-bit integer ``x`` against an immediate."""
    if not isinstance(test, Binary) or not isinstance(test.b, IntImm) or test.a.type.scalar is not s32.scalar:
        return None
    if x is not None and not test.a.is_equal(x):
        return None
    k = test.b.value
    side = {Op.GE: ("lo", k), Op.GT: ("lo", k + 1), Op.LT: ("hi", k), Op.LE: ("hi", k + 1)}.get(test.op)
    return None if side is None else (test.a, *side)


def _range_test(e: Binary, shift) -> Expr | None:
    """``u32(x - lo) < hi - lo`` for ``x >= lo && x < hi`` (either order), or None."""
    first = _bound(e.a)
    second = _bound(e.b, first[0]) if first is not None else None
    if second is None or first[1] == second[1]:
        return None
    x = first[0]
    lo, hi = (first[2], second[2]) if first[1] == "lo" else (second[2], first[2])
    if not 0 < hi - lo < 2 ** 31 or not -2 ** 31 <= lo < 2 ** 31:
        return None
    u = u32.with_lanes(x.type.lanes)
    shifted = x if lo == 0 else shift(x, lo)
    return Binary.make(Op.LT, Cast.make(u, shifted), IntImm.make(u32, hi - lo), origin=e.origin)


def _range_in_conjunction(e: Binary, shift) -> Expr:
    """``e``, a conjunction, with one pair of its conjuncts that is a range test of one ``x`` made that
    test (``(m && x >= 0) && x < 28`` -> ``m && u32(x) < 28``: the masks of a tile whose lanes' rows
    vary come so, the lanes' column test first); ``e`` itself where no pair is."""
    conj, stack = [], [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Binary) and x.op is Op.AND and x.type == e.type:
            stack += [x.b, x.a]
        else:
            conj.append(x)
    for i in range(len(conj)):
        for j in range(i + 1, len(conj)):
            if conj[i].type != conj[j].type:
                continue
            test = _range_test(Binary.make(Op.AND, conj[i], conj[j]), shift)
            if test is not None:
                rest = [test if k == i else c for k, c in enumerate(conj) if k != j]
                out = rest[0]
                for c in rest[1:]:
                    out = Binary.make(Op.AND, out, c, origin=e.origin)
                return out
    return e


class _Scalar(IRMutator):
    """An integer vector expression as a scalar one whose bounds hold for every lane: lane ``l`` of
    ``ramp(b, s, n)`` is ``b + s * l`` (``l`` a variable in ``0 .. n - 1``), of a broadcast its value, of
    a vector variable its scalar twin (same name, bounded as its let's value). Results are kept across
    calls, so the forms of shared subexpressions are shared objects (the simplifier's bounds memo
    keys on them)."""

    def __init__(self, facts: Facts):
        self.facts = facts
        self.lanes: dict[int, Var] = {}
        self.done: dict[int, tuple[Expr, Expr]] = {}  # id -> (expression, its scalar form)

    def pre_Expr(self, e: Expr):
        hit = self.done.get(id(e))
        return None if hit is None else hit[1]

    def mutate_Expr(self, old: Expr, new: Expr):
        if isinstance(new, Var) and new.type.lanes > 1:
            new = Var.make(new.type.with_lanes(1), new.name)
        elif isinstance(new, Broadcast):
            new = new.a
        elif isinstance(new, Ramp):
            lane = self.lanes.get(new.lanes)
            if lane is None:
                lane = self.lanes[new.lanes] = Var.make(s32, f"lane of {new.lanes}")
                self.facts.bind(lane, Info.make(0, new.lanes - 1))
            new = Binary.make(Op.ADD, new.base, Binary.make(Op.MUL, Cast.make(new.base.type, lane),
                                                            IntImm.make(new.base.type, new.stride)))
        self.done[id(old)] = (old, new)
        return new


class _Binders(IRVisitor):
    """The names the kernel's lets and loops bind (each a scalar twin), the lets' values, and the names
    bound more than once."""

    statements_only = True

    def __init__(self):
        self.vars: dict[str, Var] = {}
        self.values: dict[str, Expr] = {}
        self.twice: set[str] = set()
        self.held: dict[str, tuple[int, int]] = {}  # register buffer -> the values it holds (RANGE_ATTR)

    def visit_Alloc(self, s: Alloc) -> None:
        for key, value in s.attrs:
            if key == RANGE_ATTR:
                self.held[s.buf.name] = value

    def _bind(self, v: Var) -> None:
        if v.name in self.vars:
            self.twice.add(v.name)
        self.vars[v.name] = Var.make(v.type.with_lanes(1), v.name)

    def visit_For(self, s: For) -> None:
        self._bind(s.var)

    def visit_Let(self, s: Let) -> None:
        self._bind(s.var)
        self.values[s.var.name] = s.value

    def cone(self, exprs) -> set[str]:
        """The let names ``exprs`` read, directly or through other lets' values."""
        out: set[str] = set()
        work = list(var_names(*exprs)) if exprs else []
        while work:
            name = work.pop()
            if name in out or name not in self.vars:
                continue
            out.add(name)
            value = self.values.get(name)
            if value is not None:
                work += var_names(value)
        return out


class _KernelBounds(IRVisitor):
    """The bounds of the variables in ``names`` over the kernel, binders outer first (a let's value reads
    variables bound before it): ``simplifier``'s facts, a vector let's for its scalar twin (``_Scalar``);
    a name bound more than once is left unknown."""

    statements_only = True

    def __init__(self, simplifier: Simplifier, scalar: _Scalar, binders: _Binders, names: set[str]):
        self.simplifier, self.scalar, self.binders, self.names = simplifier, scalar, binders, names

    def _bind(self, v: Var, info: Info | None) -> None:
        if v.name not in self.binders.twice:
            self.simplifier.facts.bind(self.binders.vars[v.name], info)

    def visit_For(self, s: For) -> None:
        if s.var.name not in self.names:
            return
        init, bound = self.simplifier.info(s.init), self.simplifier.info(s.bound)
        if init is not None and bound is not None and init.lo <= bound.hi - 1:
            self._bind(s.var, Info.make(init.lo, bound.hi - 1))

    def visit_Let(self, s: Let) -> None:
        if s.var.name in self.names and s.value.type.is_int and s.value.type.scalar.bits <= 32:
            held = self.binders.held.get(s.value.buf.name) if isinstance(s.value, Load) else None
            info = Info.make(*held) if held is not None else self.simplifier.info(self.scalar.mutate(s.value))
            self._bind(s.var, info)


class _Shifts(IRMutator):
    """Signed divisions and remainders by constants of non-negative values as shifts and masks (powers
    of two), their value where the bounds leave one quotient ``q`` (``x / d`` is ``q``, ``x % d`` is
    ``x - q * d``); a let the bounds leave one value is that constant where an add or a multiply reads it, and
    ``x + 0``, ``x * 0``, ``x * 1`` fold (a per-lane index's ``(ic % 4) / 16 * 2123366400`` term, zero
    in every lane, which the simplifier's scalar rules leave in a vector)."""

    def __init__(self, simplifier: Simplifier, scalar: _Scalar, binders: _Binders):
        self.simplifier, self.scalar, self.binders = simplifier, scalar, binders
        self.constants: dict[str, Expr] = {}  # let name -> the constant its folded value is
        self.values: dict[int, list[str]] = {}  # id of a let's value -> the lets it is the value of

    def pre_Let(self, s: Let):
        # the walk mutates a let's value before its body: a value folded to a constant is known there
        self.values.setdefault(id(s.value), []).append(s.var.name)

    def _point(self, v: Var) -> Expr:
        """``v``, or the constant its bounds (or its let's folded value) leave it."""
        known = self.constants.get(v.name)
        if known is not None and known.type == v.type:
            return known
        twin = self.binders.vars.get(v.name)
        if twin is None or v.name in self.binders.twice or not v.type.is_int or v.type.scalar.bits > 32:
            return v
        info = self.simplifier.facts.var_info(twin)
        return v if info is None or not info.is_point else _constant(v.type, info.lo)

    def mutate_Binary(self, old: Binary, new: Binary):
        out = self._fold(new)
        if _value(out) is not None:
            for name in self.values.get(id(old), ()):
                self.constants[name] = out
        return out

    def _fold(self, new: Binary) -> Expr:
        if not new.type.is_int or new.type.scalar.bits > 32:
            return new
        op = new.op
        if op in (Op.ADD, Op.SUB, Op.MUL):
            a, b = (self._point(x) if isinstance(x, Var) else x for x in (new.a, new.b))
            va, vb = _value(a), _value(b)
            if va is not None and vb is not None:
                folded = fold_immediates(Binary.make(op, IntImm.make(a.type.with_lanes(1), va),
                                                     IntImm.make(b.type.with_lanes(1), vb)))
                if isinstance(folded, IntImm):
                    return _constant(new.type, folded.value)
            if op is Op.MUL and 0 in (va, vb):
                return _constant(new.type, 0)
            for x, unit in ((a, vb), (b, va if op is not Op.SUB else None)):
                if unit == (1 if op is Op.MUL else 0) and x.type == new.type:
                    return x
            return new if a is new.a and b is new.b else Binary.make(op, a, b, origin=new.origin)
        a, b = new.a, new.b
        if op not in (Op.DIV, Op.MOD) or not isinstance(b, IntImm) or not new.type.is_signed or b.value < 1:
            return new
        d = b.value
        info = self.simplifier.info(self.scalar.mutate(a))
        if info is None or info.lo < 0:
            return new
        q = info.lo // d
        if info.hi // d == q:  # one quotient for every value: a constant, a constant difference
            if op is Op.DIV:
                return _constant(new.type, q)
            return a if q == 0 else Binary.make(Op.SUB, a, _constant(a.type, q * d), origin=new.origin)
        if d & (d - 1):
            return new
        if op is Op.DIV:
            return Binary.make(Op.SHR, a, IntImm.make(b.type, d.bit_length() - 1), origin=new.origin)
        return Binary.make(Op.BIT_AND, a, IntImm.make(b.type, d - 1), origin=new.origin)


def _constant(t, value: int) -> Expr:
    """The immediate ``value`` of type ``t`` (a broadcast for a vector)."""
    imm = IntImm.make(t.with_lanes(1), value)
    return imm if t.lanes == 1 else Broadcast.make(imm, t.lanes)


def _value(e: Expr) -> int | None:
    """The integer an immediate (or a broadcast of one) holds, else None."""
    if isinstance(e, Broadcast):
        e = e.a
    return e.value if isinstance(e, IntImm) else None


def shift_divisions(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` with signed divisions and remainders by powers of two of non-negative values as shifts and
    masks (module doc)."""
    dividends = [n.a for n in distinct_nodes(ir) if isinstance(n, Binary) and n.op in (Op.DIV, Op.MOD)]
    if not dividends:
        return ir
    binders = _Binders()
    binders.visit(ir)
    # each twin is bound once, before any expression reading it is bounded: no memo to drop at a bind
    simplifier = Simplifier(Facts(launch_ranges(options or {}), fresh=frozenset(binders.vars.values())))
    scalar = _Scalar(simplifier.facts)
    _KernelBounds(simplifier, scalar, binders, binders.cone(dividends)).visit(ir)
    return _Shifts(simplifier, scalar, binders).mutate(ir)


def fuse_arith(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` with add+add fused to ``add3`` and mul+add to ``mad`` where ``options["target"]`` encodes them,
    and on Xe range tests as one unsigned comparison."""
    target = target_of(options or {})
    if target is None or not target.fused_int_ops.ops:
        return ir
    ranges = target.addressing.kind == "header"
    if not ranges:
        return _Fuse(target.fused_int_ops, False).mutate(ir)
    ir = shift_divisions(ir, options)
    sums = {n.var.name: n.value for n in statements(ir) if isinstance(n, Let) and isinstance(n.value, Binary)
            and n.value.op is Op.ADD and n.value.type == s32}
    out = _Fuse(target.fused_int_ops, True, sums).mutate(ir)
    return out if out is ir else remove_unused_lets(out)
