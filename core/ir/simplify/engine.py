"""The expression simplifier: bottom-up rounds of per-operator rules.

One round is an ``IRMutator`` pass: every node is rebuilt over its simplified
operands and handed to ``Simplifier.node``, which

1. folds it when every operand is an immediate (``evaluate`` gives the exact
   semantics, wrap-around and division by zero included);
2. otherwise tries the rules of its operator family (``rules_*.py``);
3. replaces an integer or bool result whose bounds are a single value by that
   constant (this is how alignment facts decide ``(x*8) % 4`` and how loop
   and ``if`` facts decide comparisons);
4. keeps the original node if the result would have more nodes: the
   simplifier never grows an expression.

Rules build their results through ``binary``/``unary``/``ternary``/``cast``,
which simplify each new node as it is made, and the canonical linear builder
makes only canonical nodes, so one round reaches the fixed point: running the
simplifier on its own output changes nothing (the property tests check it).
Only when the nesting bound below cut a rule chain short does ``expr`` run
another round (at most ``MAX_ROUNDS``). Unchanged subtrees come back as the
same objects.

Only scalar integer and bool algebra is rewritten: float expressions are
folded when constant and otherwise left alone (their algebra is not exact),
vector expressions only get their operands simplified.
"""
from __future__ import annotations

from ..eval import EvalError, convert, evaluate_operation
from ..expr import (Binary, BoolImm, Broadcast, Cast, Expr, FloatImm, IntImm, Op, Ternary, Unary, Var)
from ..types import Type
from ..visitor import IRMutator
from . import rules_add, rules_cast, rules_cmp, rules_div, rules_logic, rules_minmax
from .bounds import Analysis, Info
from .facts import Facts
from .linear import LinearForm, LinearForms, is_linear_op, make_form
from .order import Structure

MAX_ROUNDS = 4
# Rules build nodes through the simplifier, which may fire further rules; a
# bound on that nesting keeps a pathological rule chain from exhausting the stack.
MAX_NESTING = 48

_IMMEDIATES = (IntImm, BoolImm, FloatImm)
_OPERATIONS = (Binary, Unary, Ternary, Cast)  # what fold_immediates evaluates

_RULES = {
    Op.ADD: rules_add.linear, Op.SUB: rules_add.linear, Op.MUL: rules_add.linear,
    Op.NEG: rules_add.linear,
    Op.DIV: rules_div.div, Op.MOD: rules_div.mod, Op.DIV_UP: rules_div.div_up,
    Op.MIN: rules_minmax.min_max, Op.MAX: rules_minmax.min_max,
    Op.EQ: rules_cmp.compare, Op.NE: rules_cmp.compare, Op.LT: rules_cmp.compare,
    Op.LE: rules_cmp.compare, Op.GT: rules_cmp.compare, Op.GE: rules_cmp.compare,
    Op.AND: rules_logic.land, Op.OR: rules_logic.lor, Op.NOT: rules_logic.lnot,
    Op.IIF: rules_logic.iif, Op.BIT_NOT: rules_cast.bit_not,
}


class Simplifier:
    """Simplifies expressions under the facts of one point of a kernel (see the module docstring)."""

    def __init__(self, facts: Facts | None = None):
        self.facts = facts if facts is not None else Facts()
        self.structure = Structure()
        self.lfs = LinearForms(self.structure)
        self.analysis = Analysis(self.facts, self.lfs)
        self._nesting = 0
        self._cuts = 0  # how many rule chains MAX_NESTING has cut short

    # -- analyses -------------------------------------------------------------------------------
    def info(self, e: Expr) -> Info | None:
        return self.analysis.info(e)

    def info_in(self, e: Expr, t: Type) -> Info | None:
        return self.analysis.info_in(e, t)

    def holds(self, e: Expr, t: Type) -> bool:
        """True when integer type ``t`` holds every value of integer expression ``e``."""
        info = self.info(e)
        lo, hi = t.scalar.int_range()
        return info is not None and lo <= info.lo and info.hi <= hi

    def lf(self, e: Expr) -> LinearForm:
        """The linear form of ``e``, looking through casts that keep their operand's value.

        A term ``U(x)`` whose type ``U`` holds every value of ``x`` (by the current
        facts) is the term ``x``: both convert to the form's type alike. So
        ``u32(c)`` and ``c`` merge into one term, as they will once rebuilt. A
        multiple of a kept let ``v = u + c`` (``Facts.offset``) is that multiple
        of ``u`` plus a constant.
        """
        memo = self.facts.memo.forms
        hit = memo.get(id(e))
        if hit is not None:
            return hit[1]
        lf = self.lfs.of(e)
        terms: dict = {}
        const, peeled = lf.const, False
        offsets = self.facts.offsets
        for term, c in lf.terms:
            x = term
            if offsets and abs(c) != 1 and x in offsets:   # a multiple of ``u + c``: its constant joins
                u, k = offsets[x]
                terms[u] = terms.get(u, 0) + c
                const += c * k
                peeled = True
                continue
            while isinstance(x, Cast) and not x.saturate and x.a.type.is_int and self.holds(x.a, x.type):
                x = x.a
            if x is term:
                terms[x] = terms.get(x, 0) + c
                continue
            peeled = True
            if x.type == lf.type:  # now an operand of the form's own type: its terms join the form
                inner = self.lfs.of(x)
                for t, k in inner.terms:
                    terms[t] = terms.get(t, 0) + c * k
                const += c * inner.const
            else:
                terms[x] = terms.get(x, 0) + c
        if peeled:
            lf = self.make_form(lf.type, terms, const)
        memo[id(e)] = (e, lf)
        return lf

    def through_offsets(self, terms: dict) -> tuple[dict, int]:
        """``terms`` with each kept let ``v = u + c`` (``Facts.offset``) read as ``u``, and the constant that
        adds."""
        offsets = self.facts.offsets
        if not offsets or not any(t in offsets for t in terms):
            return terms, 0
        out: dict = {}
        const = 0
        for t, k in terms.items():
            if t in offsets:
                t, c = offsets[t]
                const += k * c
            out[t] = out.get(t, 0) + k
        return {t: k for t, k in out.items() if k}, const

    def fits(self, lf) -> bool:
        return self.analysis.fits(lf)

    def form_range(self, lf) -> tuple[int, int]:
        return self.analysis.form_range(lf)

    def size(self, e: Expr) -> int:
        return self.structure.size(e)

    def key(self, e: Expr) -> tuple:
        return self.structure.key(e)

    def make_form(self, t: Type, terms: dict, const: int) -> LinearForm:
        """A canonical form from ``{term: coefficient}`` (coefficients over the integers)."""
        return make_form(self.structure, t, terms, const)

    # -- entry point ----------------------------------------------------------------------------
    def expr(self, e: Expr) -> Expr:
        """``e`` simplified under the current facts (the same object when nothing changes)."""
        memo = self.facts.memo
        done = memo.done
        if id(e) in done:
            return e
        hit = memo.results.get(e)
        if hit is not None:  # an equal expression was simplified under the same facts
            return e if hit is _UNCHANGED else hit
        given = e
        if not e._children_of(e):  # a leaf: no round to set up
            if isinstance(e, Var) and e in self.facts.subst:
                e = self.expr(self.facts.subst[e])
            else:
                e = self.node(e)
        else:
            for _ in range(MAX_ROUNDS):
                if id(e) in done:
                    break
                cuts = self._cuts
                out = _Round(self, e).mutate(e)
                finished = out is e or self._cuts == cuts
                e = out
                if finished:
                    break
        done[id(e)] = e
        memo.results[given] = _UNCHANGED if e is given else e
        return e

    # -- constructors used by the rules -----------------------------------------------------------
    def binary(self, op: Op, a: Expr, b: Expr) -> Expr:
        return self.node(Binary.make(op, a, b))

    def unary(self, op: Op, a: Expr) -> Expr:
        return self.node(Unary.make(op, a))

    def ternary(self, op: Op, a: Expr, b: Expr, c: Expr) -> Expr:
        return self.node(Ternary.make(op, a, b, c))

    def cast(self, t: Type, a: Expr, saturate: bool = False) -> Expr:
        return self.node(Cast.make(t, a, saturate))

    def form(self, lf: LinearForm) -> Expr:
        """The canonical expression of ``lf`` (built as is: it is canonical by construction)."""
        e = self.lfs.build(lf, self.cast)
        self.facts.memo.forms[id(e)] = (e, lf)
        self.facts.memo.canonical[id(e)] = e
        return e

    def is_canonical(self, e: Expr) -> bool:
        """True when ``e`` was built by ``form`` under the current facts."""
        return id(e) in self.facts.memo.canonical

    @staticmethod
    def const(t: Type, value) -> Expr:
        if t.is_bool:
            return BoolImm.make(bool(value))
        return IntImm.make(t, value) if t.is_int else FloatImm.make(t, value)

    def retype(self, e: Expr, t: Type) -> Expr:
        """``e`` with type ``t``: itself, a converted immediate, or a cast."""
        if e.type == t:
            return e
        if isinstance(e, _IMMEDIATES) and t.lanes == 1:
            return self.const(t, convert(e.value, e.type, t))
        return self.cast(t, e)

    # -- one node -------------------------------------------------------------------------------
    def node(self, e: Expr) -> Expr:
        """``e`` (whose operands are already simplified) simplified at its root."""
        if self._nesting > MAX_NESTING:
            self._cuts += 1
            return e
        self._nesting += 1
        try:
            out = self._rules(e)
            out = e if out is None else self.retype(out, e.type)
        finally:
            self._nesting -= 1
        out = self._pin(out)
        if out is not e and self.size(out) > self.size(e):
            return e
        return out

    def _rules(self, e: Expr) -> Expr | None:
        if e.type.lanes != 1 and isinstance(e, Binary):
            return _vector_identity(e)
        if e.type.lanes != 1 or not isinstance(e, (Binary, Unary, Ternary, Cast)):
            return None
        kids = e.children()
        if any(k.type.lanes != 1 for k in kids):
            return None
        if all(isinstance(k, _IMMEDIATES) for k in kids):
            folded = fold_immediates(e)
            return None if folded is e else folded
        if isinstance(e, Cast):
            return rules_cast.cast(self, e)
        if e.type.is_float or any(k.type.is_float for k in kids):
            return rules_logic.iif_decided(self, e) if e.op is Op.IIF else None
        rule = _RULES.get(e.op)
        return None if rule is None else rule(self, e)

    def _pin(self, e: Expr) -> Expr:
        """A constant when the bounds of ``e`` leave a single value."""
        if isinstance(e, _IMMEDIATES) or e.type.lanes != 1 or not (e.type.is_int or e.type.is_bool):
            return e
        info = self.info(e)
        if info is not None and info.is_point:
            return self.const(e.type, info.lo)
        return e


def _vector_identity(e: Binary) -> Expr | None:
    """``v + 0``, ``0 + v``, ``v - 0``, ``v * 1``, ``1 * v`` -> ``v`` for an integer vector ``v``, and
    ``m && true`` -> ``m`` for a mask (the only vector rules: an unrolled message loop leaves
    ``lane_base + 0`` in its first copy, which would keep that copy's addresses from matching the same
    addresses computed elsewhere, and a tail test that holds in one copy leaves ``mask && true``, which
    code generators would evaluate per store)."""
    if e.type.is_bool:
        unit = True if e.op is Op.AND else None
    elif e.type.is_int:
        unit = {Op.ADD: 0, Op.SUB: 0, Op.MUL: 1}.get(e.op)
    else:
        return None
    if unit is None:
        return None
    if _is_value(e.b, unit) and e.a.type == e.type:
        return e.a
    if e.op is not Op.SUB and _is_value(e.a, unit) and e.b.type == e.type:
        return e.b
    return None


def _is_value(e: Expr, value: int) -> bool:
    if isinstance(e, Broadcast):
        e = e.a
    return isinstance(e, (IntImm, BoolImm)) and e.value == value and isinstance(e.value, type(value))


# What ``Memo.results`` holds for an expression that simplification leaves as it is: a hit on
# an equal but distinct object then hands back that object itself, never the first one.
_UNCHANGED = object()


def fold_immediates(e: Expr) -> Expr:
    """The immediate a scalar operation on immediates evaluates to (the simplifier's first
    rule), else ``e`` itself. Cheap enough to apply while building IR: unrolling folds the
    constants each copy's loop index makes, so the simplifier meets smaller copies."""
    if e.type.lanes != 1 or not isinstance(e, _OPERATIONS):
        return e
    kids = e._children_of(e)
    for k in kids:  # a loop, not all() over a generator: most expressions asked are not folded
        if not isinstance(k, _IMMEDIATES) or k.type.lanes != 1:
            return e
    try:
        return Simplifier.const(e.type, evaluate_operation(e, [k.value for k in kids]))
    except EvalError:
        return e


class _Round(IRMutator):
    """One bottom-up pass of ``Simplifier.node`` (substituting propagated lets).

    The inner nodes of a linear region (a ``+ - *`` node whose only parent is
    linear of the same type) are left as they are: the region's root collects
    the whole region into one linear form and rebuilds it once, so a long sum
    costs one rebuild instead of one per level. A node shared by several
    parents is always simplified (its result is reused for every parent).
    """

    def __init__(self, simplifier: Simplifier, root: Expr):
        self.s = simplifier
        self.inner: set[int] = set()
        self.shared = _shared_nodes(root, simplifier.facts.memo.done)

    def pre_Var(self, v: Var) -> Expr | None:
        value = self.s.facts.subst.get(v)
        # The value was simplified where the let was; facts learned since then
        # (an enclosing if) may simplify it further. Unchanged facts: a memo hit.
        return None if value is None else self.s.expr(value)

    def pre_Expr(self, e: Expr) -> Expr | None:
        done = self.s.facts.memo.done.get(id(e))
        if done is None and is_linear_op(e):
            self.inner.update(id(k) for k in e.children()
                              if k.type == e.type and is_linear_op(k) and id(k) not in self.shared)
        return done  # a subtree already simplified under the current facts (a substituted let value)

    def mutate_Expr(self, old: Expr, new: Expr) -> Expr:
        if id(old) in self.inner:
            return new
        out = self.s.node(new)
        return new if out is new or out == new else out


def _shared_nodes(root: Expr, done: dict) -> set[int]:
    """Ids of the nodes of ``root`` met under more than one parent (not looking into ``done``)."""
    seen: set[int] = set()
    shared: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in done:
            continue
        for k in node.children():
            if id(k) in seen:
                shared.add(id(k))
            else:
                seen.add(id(k))
                stack.append(k)
    return shared
