"""Strength reduction: address sums that grow linearly with a loop variable become induction
variables, and mixed-radix digits of it become wrapping counters.

**Linear sums.** In a loop over ``k`` (step ``s``) an integer sum
``a*k + rest + c`` (a linear form, ``a`` a constant, ``rest`` loop-invariant,
``c`` a constant) costs a multiply and adds every iteration. Sums sharing
``a`` and ``rest`` share one *induction variable* ``iv = a*k + rest + c0``
(``c0`` the constant most of them add) that is set before the loop and
advanced by ``a*s`` at the end of each iteration; each use becomes ``iv`` or
``iv + (c - c0)``. Lets of the body whose values are such sums are seen
through: with ``k0 = k*32``, ``k0*2 + base`` is ``64*k + base``, and ``k0``
goes away when nothing else reads it.

**Digits.** A flattened loop nest recovers its old loop variables as digits
``(k + c) % m``, ``((k + c) / m) % n``, ``(k + c) / m`` of one counting
loop (``k`` from a constant, step 1, constant bounds); those become counters
carried across iterations that wrap and carry into each other
(``mixed_radix``), with no division left in the loop.

**Sums of digits.** Address sums over the counters of one chain,
``a0*d0 + a1*d1 + rest`` (``rest`` invariant; other varying terms, such as
a digit that folds per unrolled copy, stay beside), become one carried
register too (``<k>_div``), advanced in the counters' update by ``a0``, or by
``a1 - a0*(s0 - 1)`` where ``d0`` wraps (and so on up the chain): a conv's
``kh*7168 + ic*32`` header part costs a select and an add once per wrap
instead of multiplies and adds in every copy. A counter then read by nothing
but the wraps of those above it stays; one read by nothing goes.

The IR has no mutable scalars, so a carried value lives in a one-value
``alloc.grf`` buffer (the register the code generator gives it); a digit
counter's allocation carries the values it holds (``range=(0, 2)``,
``RANGE_ATTR``), so later passes know its reads non-negative (``peephole``:
a division of ``ic_digit * 16`` by 32 is a shift, not the signed sequence)::

    alloc.grf k_iv_reg[..]
    k_iv_reg.s32[0] = a*init + rest + c0
    for (k ...) {
      k_iv.s32 = k_iv_reg.s32[0]
      k_digit.s32 = k_digit_reg.s32[0]        (digit counters: read, used, then updated)
      ... uses k_iv, k_iv + c, k_digit ...
      if (((k + c) % b0) == b0 - 1) { k_digit_reg.s32[0] = iif(k_digit == n - 1, 0, k_digit + 1) ... }
      k_iv_reg.s32[0] = (k_iv + a*s)
    }

The loop's level (``loop_level``: what the body computes outside nested
loops) is priced in integer operations before and after; a set of induction
variables and counter chains is kept when the operations it saves per
iteration, minus its upkeep (an add per induction variable; an add per
counter, once every ``b0`` iterations once unrolled), are at least the
registers it takes, choosing the set that saves most. Loops that will be
unrolled completely are left alone (``register_loops.stays_loop``): their
copies get constants folded instead. A loop unrolled ``U`` times keeps one
increment of each induction variable per unrolled iteration: the unroll pass
recognizes the pattern (``split_induction``) and gives copy ``j`` the value
``iv + j*a*s``; the counter updates are part of the body every copy runs,
and their guard folds per copy. Sums in nested loops are left to those loops
(hoisting has already moved what they do not depend on out of them).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Any, Mapping

from ..ir.expr import Binary, Expr, IntImm, Load, Op, Unary, Var, iif, wrap_int
from ..ir.node import Node
from ..ir.stmt import Alloc, For, Let, MemKind, Seq, Stmt, Store, seq
from ..ir.types import Type
from ..ir.visitor import IRMutator, post_order, statements
from .cse import register_budget
from .forms import Forms
from .loop_level import LoopLevel
from .mixed_radix import RANGE_ATTR, Chain, Digit, digit_of, fits, plan_chain
from ..ir.names import Names
from .register_loops import stays_loop
from .tree import DropLets, ReplaceNodes, binder, distinct_nodes, expr_vars, has_load, trip_count

# Up to this many candidates every subset is priced; beyond, they are added greedily.
_EXHAUSTIVE = 6
# Without a target there is no register file to run out of.
_UNLIMITED = 1 << 20
# Lets whose expansion has more terms are not seen through (a long chain of sums would make
# expanding quadratic; such a sum is no induction variable anyone writes).
_MAX_TERMS = 16


@dataclass(frozen=True)
class _Induction:
    """An induction variable ``coef*k + rest + const`` and the sums it replaces, as (sum, constant)."""

    type: Type
    coef: int
    rest: tuple[tuple[Expr, int], ...]
    const: int
    uses: tuple[tuple[Expr, int], ...]

    registers = 1
    upkeep = 1.0

    def replacements(self, ivs: tuple[Var, ...], forms: Forms) -> dict[int, Expr]:
        (iv,) = ivs
        return {id(e): iv if c == self.const else forms.build(self.type, {iv: 1}, c - self.const)
                for e, c in self.uses}


@dataclass(frozen=True)
class _Counters:
    """The counters of one digit chain and the digit expressions they replace."""

    type: Type
    chain: Chain
    uses: tuple[tuple[Expr, Digit], ...]

    @property
    def registers(self) -> int:
        return len(self.chain.digits())

    @property
    def upkeep(self) -> float:
        return self.chain.upkeep

    def replacements(self, counters: tuple[Var, ...], forms: Forms) -> dict[int, Expr]:
        slot = dict(zip(self.chain.digits(), counters))
        return {id(e): slot[d] for e, d in self.uses if d in slot}


@dataclass(frozen=True)
class _DigitInduction:
    """A sum ``sum(coef_i * digit_i) + rest + const`` over the counters of one digit chain (``rest``
    invariant), carried as one register the chain's update advances: by ``coef_0`` when the lowest
    digit steps, less what a digit gives back when it wraps and carries into the next."""

    type: Type
    chain: int  # index of the chain among the loop's counter chains
    coefs: tuple[int, ...]  # per digit of the chain, lowest first
    rest: tuple[tuple[Expr, int], ...]
    const: int
    # (sum, its constant, its other varying terms: they stay beside the induction variable)
    uses: tuple[tuple[Expr, int, tuple[tuple[Expr, int], ...]], ...]
    wraps: int  # digits whose wrap the update tests

    def replacements(self, ivs: tuple[Var, ...], forms: Forms) -> dict[int, Expr]:
        (iv,) = ivs
        return {id(e): iv if c == self.const and not other else forms.build(self.type, {iv: 1, **dict(other)},
                                                                             c - self.const)
                for e, c, other in self.uses}

    def reads(self, chain: Chain) -> list[int]:
        """The digits whose counters ``step`` tests."""
        out = []
        for i, d in enumerate(chain.digits()[:len(self.coefs)]):
            if d.span is None or not any(self.coefs[i:]):
                break
            out.append(i)
        return out

    def step(self, chain: Chain, digits: tuple[Var, ...]) -> Expr:
        """What the chain's update adds: ``iif(d0 == s0 - 1, iif(d1 == s1 - 1, ..), coef_0)``."""
        def at(i: int, acc: int) -> Expr:
            if i == len(self.coefs) or not any(self.coefs[i:]):
                return IntImm.make(self.type, acc)
            d = chain.digits()[i]
            if d.span is None:
                return IntImm.make(self.type, acc + self.coefs[i])
            wrapped = at(i + 1, acc - self.coefs[i] * (d.span - 1))
            return iif(digits[i].eq(IntImm.make(digits[i].type, d.span - 1)), wrapped,
                       IntImm.make(self.type, acc + self.coefs[i]))
        return at(0, 0)


def _choose(level: LoopLevel, candidates: list, k: Var, forms: Forms, registers: int) -> list:
    """The candidates worth keeping together: among the sets taking at most ``registers`` registers
    and saving at least one operation per iteration (net of upkeep) per register they take, the
    one saving most (exhaustively for a few candidates, greedily for more)."""
    # Priced with stand-ins named like the loop variable: no let of the level has that name.
    stand = {id(c): c.replacements((Var.make(c.type, k.name),) * c.registers, forms) for c in candidates}
    base = level.cost()

    def saving(chosen) -> float:
        merged = {i: e for c in chosen for i, e in stand[id(c)].items()}
        return base - level.cost(merged) - sum(c.upkeep for c in chosen)

    def feasible(chosen, s) -> bool:
        taken = sum(c.registers for c in chosen)
        return taken <= registers and s >= taken

    if len(candidates) <= _EXHAUSTIVE:
        best: tuple = ()
        best_key = (0.0, 0)
        for size in range(1, len(candidates) + 1):
            for chosen in combinations(candidates, size):
                s = saving(chosen)
                key = (s, -sum(c.registers for c in chosen))
                if feasible(chosen, s) and key > best_key:
                    best, best_key = chosen, key
        return list(best)
    # Many candidates: best alone first, each kept when it adds to the saving of those kept.
    alone = {id(c): saving((c,)) for c in candidates}
    chosen: list = []
    current = 0.0
    for c in sorted(candidates, key=lambda c: -alone[id(c)]):
        s = saving(chosen + [c])
        if s > current and feasible(chosen + [c], s):
            chosen.append(c)
            current = s
    return chosen


def _choose_digit(level: LoopLevel, candidates: list[_DigitInduction], k: Var, forms: Forms, registers: int,
                  periods: list[int]) -> list[_DigitInduction]:
    """The digit induction variables worth a register each: in order of what they save alone, each
    kept while it saves at least one operation per iteration more than its update costs (a test and
    a select per wrapping digit and an add, once every ``periods[chain]`` iterations)."""
    stand = {id(c): c.replacements((Var.make(c.type, k.name),), forms) for c in candidates}
    base = level.cost()

    def saving(chosen) -> float:
        merged = {i: e for c in chosen for i, e in stand[id(c)].items()}
        return base - level.cost(merged) - sum((1 + 2 * c.wraps) / periods[c.chain] for c in chosen)

    alone = {id(c): saving((c,)) for c in candidates}
    chosen: list[_DigitInduction] = []
    current = 0.0
    for c in sorted(candidates, key=lambda c: (-alone[id(c)], forms.key(c.uses[0][0]))):
        s = saving(chosen + [c])
        if len(chosen) < registers and s >= current + 1:
            chosen.append(c)
            current = s
    return chosen


class _Reduce(IRMutator):
    def __init__(self, ir: Node, reg_bytes: int, max_registers: int):
        self.root = ir
        self.reg_bytes = reg_bytes
        self.max_registers = max_registers  # registers (one GRF row each) the pass adds per loop at most
        self.forms = Forms()
        self.names = Names.of(ir)

    def mutate_For(self, old: For, new: For):
        if not stays_loop(new) or split_induction(new.body) is not None:
            return new
        return self.reduce_loop(new)

    # -- seeing through lets ---------------------------------------------------------------

    def _expand(self, e: Expr, lets: dict[str, tuple[dict, int]]) -> tuple[dict, int]:
        """The linear form of ``e`` with the lets in ``lets`` replaced by their expanded forms."""
        lf = self.forms.of(e)
        terms: dict[Expr, int] = {}
        const = lf.const
        for t, c in lf.terms:
            sub = lets.get(t.name) if isinstance(t, Var) and t.type == lf.type else None
            if sub is None:
                terms[t] = terms.get(t, 0) + c
                continue
            for u, d in sub[0].items():
                terms[u] = terms.get(u, 0) + c * d
            const += c * sub[1]
        wrapped = {t: wrap_int(c, lf.type) for t, c in terms.items()}
        return {t: c for t, c in wrapped.items() if c}, wrap_int(const, lf.type)

    def _linear_lets(self, level: LoopLevel, k: Var, inner: set[str],
                     digits: frozenset[str] = frozenset()) -> dict[str, tuple[dict, int]]:
        """Lets of the level whose values are linear in ``k`` (or in the counters ``digits``) over
        loop-invariant terms, expanded."""
        lets: dict[str, tuple[dict, int]] = {}
        for x in level.entries:
            if x.let is None or not x.let.type.is_int or x.let.type.lanes != 1:
                continue
            terms, const = self._expand(x.expr, lets)
            if len(terms) <= _MAX_TERMS and all(t.is_equal(k) or _invariant(t, inner)
                                                or (isinstance(t, Var) and t.name in digits) for t in terms):
                lets[x.let.name] = (terms, const)
        return lets

    # -- candidates ------------------------------------------------------------------------

    def digit_counters(self, loop: For, level: LoopLevel, inner: set[str]) -> list[_Counters]:
        """One candidate per ``k + c`` whose digits the level computes (loops counting by 1 over
        constant bounds)."""
        k, trips = loop.var, trip_count(loop)
        if trips is None or trips < 2 or loop.step != 1 or k.type.lanes != 1:
            return []
        lets = self._linear_lets(level, k, inner)

        def offset_of(e: Expr) -> int | None:
            if e.type != k.type:
                return None
            terms, const = self._expand(e, lets)
            if len(terms) != 1:
                return None
            (t, c), = terms.items()
            return const if c == 1 and t.is_equal(k) else None

        found: dict[int, tuple[Expr, Digit]] = {}
        let_digits: dict[str, Digit] = {}

        def known(e: Expr) -> Digit | None:
            if isinstance(e, Var):
                return let_digits.get(e.name)
            hit = found.get(id(e))
            return hit[1] if hit is not None else None

        for x in level.entries:
            for n in post_order(x.expr):
                if isinstance(n, Expr) and id(n) not in found:
                    d = digit_of(n, known, offset_of)
                    if d is not None:
                        found[id(n)] = (n, d)
            if x.let is not None and id(x.expr) in found:
                let_digits[x.let.name] = found[id(x.expr)][1]
        by_offset: dict[int, list[tuple[Expr, Digit]]] = {}
        for n, d in found.values():
            by_offset.setdefault(d.offset, []).append((n, d))
        first = loop.init.value
        out = []
        for offset, uses in sorted(by_offset.items()):
            chain = plan_chain([d for _, d in uses], loop.unroll)
            if chain is not None and fits(chain, first, first + trips - 1, k.type):
                out.append(_Counters(k.type, chain, tuple(uses)))
        return out

    def inductions(self, loop: For, level: LoopLevel, inner: set[str]) -> list[_Induction]:
        """One candidate per (slope, invariant rest) of the level's sums linear in ``loop.var``."""
        k = loop.var
        lets = self._linear_lets(level, k, inner)
        # In a loop to be unrolled, what a division reads folds per copy (``(k + 2) % 3`` with k
        # stepping by 3); an induction variable in its place would hide that from the simplifier.
        keep = _division_operands(level) if loop.unroll > 1 else set()
        sums = [e for e in _whole_sums(level.exprs()) if id(e) not in keep]
        groups: dict[tuple, list[tuple[Expr, int]]] = {}
        slopes: dict[tuple, tuple[int, dict]] = {}
        for e in sums:
            terms, const = self._expand(e, lets)
            coef = sum(c for t, c in terms.items() if t.is_equal(k))
            rest = {t: c for t, c in terms.items() if not t.is_equal(k)}
            if not coef or not all(_invariant(t, inner) for t in rest):
                continue
            key = (e.type, self.forms.build(e.type, {k: coef, **rest}, 0))
            slopes.setdefault(key, (coef, rest))
            groups.setdefault(key, []).append((e, const))
        out = []
        for key, uses in groups.items():
            coef, rest = slopes[key]
            distinct = tuple({id(e): (e, c) for e, c in uses}.values())
            consts = [c for _, c in distinct]
            common = min(set(consts), key=lambda c: (-consts.count(c), abs(c), c))
            out.append(_Induction(key[0], coef, tuple(rest.items()), common, distinct))
        return out

    def digit_inductions(self, loop: For, level: LoopLevel, inner: set[str],
                         counters: list[tuple[Chain, tuple]]) -> list[_DigitInduction]:
        """One candidate per (digit coefficients, invariant rest) of the level's sums linear in the
        counters of one chain; their other varying terms (``k``, a digit that folds per unrolled
        copy) stay beside the induction variable."""
        slot = {v.name: (c, i) for c, (_, pairs) in enumerate(counters) for i, (v, _) in enumerate(pairs)}
        if not slot:
            return []
        lets = self._linear_lets(level, loop.var, inner, frozenset(slot))
        groups: dict[tuple, list[tuple]] = {}
        shapes: dict[tuple, tuple[int, tuple, dict]] = {}
        for e in _whole_sums(level.exprs()):
            terms, const = self._expand(e, lets)
            digit = {t.name: c for t, c in terms.items() if isinstance(t, Var) and t.name in slot}
            rest = {t: c for t, c in terms.items() if not (isinstance(t, Var) and t.name in slot)}
            other = {t: c for t, c in rest.items() if not _invariant(t, inner)}
            chains = {slot[n][0] for n in digit}
            if not digit or len(chains) != 1:
                continue
            rest = {t: c for t, c in rest.items() if t not in other}
            (chain,) = chains
            coefs = [0] * len(counters[chain][1])
            for n, c in digit.items():
                coefs[slot[n][1]] = c
            key = (e.type, chain, tuple(coefs), self.forms.build(e.type, rest, 0))
            shapes.setdefault(key, (chain, tuple(coefs), rest))
            groups.setdefault(key, []).append((e, const, tuple(other.items())))
        out = []
        for key, uses in groups.items():
            chain, coefs, rest = shapes[key]
            distinct = tuple({id(u[0]): u for u in uses}.values())
            consts = [c for _, c, _ in distinct]
            common = min(set(consts), key=lambda c: (-consts.count(c), abs(c), c))
            digits = counters[chain][0].digits()
            top = max(i for i, c in enumerate(coefs) if c)
            wraps = sum(1 for d in digits[:top + 1] if d.span is not None)
            out.append(_DigitInduction(key[0], chain, coefs, tuple(rest.items()), common, distinct, wraps))
        return out

    # -- the rewrite -----------------------------------------------------------------------

    def reduce_loop(self, loop: For) -> Stmt:
        k = loop.var
        inner = {k.name} | {v.name for v in map(binder, statements(loop.body)) if v is not None}
        level = LoopLevel(loop.body)
        found = self.digit_counters(loop, level, inner)
        chosen = _choose(level, found, k, self.forms, self.max_registers)
        plan = self._plan(loop, level, inner, chosen)
        if len(chosen) < len(found) and sum(c.registers for c in found) <= self.max_registers:
            # A chain not worth its registers for its digits alone can be for the address sums it
            # carries (a top digit ``x / 9`` read only by ``ic*32`` terms: its counter goes, the
            # sums advance by one add per wrap).
            every = self._plan(loop, level, inner, found)
            if every.worth and every.saving - every.registers > plan.saving - plan.registers:
                plan = every
        if not plan.counters and not plan.ivs:
            return loop
        core = plan.core
        if plan.counters:
            core = _advance_counters(core, k, plan.counters, plan.digit_ivs)
        if plan.ivs:
            core = InductionBody(tuple((iv, buf, step) for buf, iv, _, step in plan.ivs), core).rebuild(core)
        out: Stmt = For.make(k, loop.init, loop.bound, core, loop.step, loop.unroll, origin=loop.origin)
        return self._started(loop, out, plan.ivs, plan.counters, plan.digit_ivs)

    def _plan(self, loop: For, level: LoopLevel, inner: set[str], chains: list[_Counters]) -> "_Plan":
        """The rewrite with the counters of ``chains``, the induction variables and digit sums worth
        their registers beside them, and what it saves per iteration net of upkeep."""
        k = loop.var
        counters, body, level_c = self._place_counters(loop, level, chains)
        inner = inner | {v.name for _, pairs in counters for v, _ in pairs}
        left = self.max_registers - sum(c.registers for c in chains)
        chosen, ivs, core = self._place_inductions(loop, body, level_c, inner, left)
        digit_ivs = []  # (candidate, value var, register buffer)
        if counters:
            level_c = LoopLevel(core) if core is not body else level_c
            inner |= {iv.name for _, iv, _, _ in ivs}
            digit_ivs, core = self._place_digit_inductions(loop, core, level_c, inner, counters, chains,
                                                           left - len(chosen))
        # Lets nothing reads go now (a let is pure), so the pass's own figures show the saving.
        unread = LoopLevel(core).unread_lets()
        core = DropLets(lambda let: let.var.name in unread).mutate(core) if unread else core
        if digit_ivs:
            counters = _needed_counters(core, counters, digit_ivs)
        upkeep = len(ivs) + sum(len(pairs) / chain.bounds[0] for chain, pairs in counters) \
            + sum((1 + 2 * g.wraps) / counters[g.chain][0].bounds[0] for g, _, _ in digit_ivs)
        registers = len(ivs) + len(digit_ivs) + sum(len(pairs) for _, pairs in counters)
        saving = level.cost() - LoopLevel(core).cost() - upkeep
        return _Plan(counters, ivs, digit_ivs, core, saving, registers)

    def _place_counters(self, loop: For, level: LoopLevel, chains: list[_Counters]):
        """Each digit of ``chains`` a fresh value and register (``(chain, ((value var, register buffer),
        ...))``), the loop body reading them, and its level."""
        k = loop.var
        counters = []
        replace: dict[int, Expr] = {}
        for c in chains:
            pairs = tuple((self.names.fresh(f"{k.name}_digit", c.type), self.names.fresh(f"{k.name}_digit_reg", c.type))
                          for _ in c.chain.digits())
            counters.append((c.chain, pairs))
            replace.update(c.replacements(tuple(v for v, _ in pairs), self.forms))
        body = ReplaceNodes(replace).mutate(loop.body) if replace else loop.body
        return counters, body, LoopLevel(body) if replace else level

    def _place_inductions(self, loop: For, body: Stmt, level: LoopLevel, inner: set[str], left: int):
        """The linear sums turned into induction variables in ``left`` registers (``(register buffer, value
        var, start, step)`` each) and the body reading them (``body`` itself where none is replaced)."""
        k = loop.var
        chosen = _choose(level, self.inductions(loop, level, inner), k, self.forms, left)
        ivs = []
        replace: dict[int, Expr] = {}
        for g in chosen:
            buf = self.names.fresh(f"{k.name}_iv_reg", g.type)
            iv = self.names.fresh(f"{k.name}_iv", g.type)
            rest = dict(g.rest)
            if isinstance(loop.init, IntImm):
                start = self.forms.build(g.type, rest, g.coef * loop.init.value + g.const)
            else:
                start = self.forms.build(g.type, {**rest, loop.init: rest.get(loop.init, 0) + g.coef}, g.const)
            ivs.append((buf, iv, start, g.coef * loop.step))
            replace.update(g.replacements((iv,), self.forms))
        return chosen, ivs, ReplaceNodes(replace).mutate(body) if replace else body

    def _place_digit_inductions(self, loop: For, core: Stmt, level: LoopLevel, inner: set[str], counters: list,
                                chains: list, left: int):
        """The sums of counter digits turned into induction variables carried by the counters' wraps
        (``(candidate, value var, register buffer)`` each), and the body reading them."""
        k = loop.var
        found = self.digit_inductions(loop, level, inner, counters)
        digit_ivs = [(g, self.names.fresh(f"{k.name}_div", g.type), self.names.fresh(f"{k.name}_div_reg", g.type))
                     for g in _choose_digit(level, found, k, self.forms, left, [c.chain.bounds[0] for c in chains])]
        if not digit_ivs:
            return digit_ivs, core
        replace: dict[int, Expr] = {}
        for g, v, _ in digit_ivs:
            replace.update(g.replacements((v,), self.forms))
        return digit_ivs, ReplaceNodes(replace).mutate(core)

    def _started(self, loop: For, out: Stmt, ivs: list, counters: list, digit_ivs: list) -> Stmt:
        """``out`` (the reduced loop) after the stores of every register's value at the first iteration,
        inside the allocations of those registers."""
        starts = [(buf, start) for buf, _, start, _ in ivs]
        x0 = loop.init.value if counters else 0
        starts += [(buf, IntImm.make(v.type, d.value(x0 + chain.offset)))
                   for chain, pairs in counters for (v, buf), d in zip(pairs, chain.digits())]
        for g, _, buf in digit_ivs:
            chain = counters[g.chain][0]
            at = sum(c * d.value(x0 + chain.offset) for c, d in zip(g.coefs, chain.digits()))
            starts.append((buf, self.forms.build(g.type, dict(g.rest), at + g.const)))
        out = seq(*(Store.make(buf, 0, value) for buf, value in starts), out)
        ranges = {buf.name: r for chain, pairs in counters for (_, buf), d in zip(pairs, chain.digits())
                  for r in [_digit_range(d, loop, chain.offset)] if r is not None}
        for buf, value in reversed(starts):
            attrs = ((RANGE_ATTR, ranges[buf.name]),) if buf.name in ranges else ()
            out = Alloc.make(buf, max(self.reg_bytes, value.type.size), MemKind.GRF, out, attrs)
        return out


def _digit_range(d: Digit, loop: For, offset: int) -> tuple[int, int] | None:
    """The values a counter of digit ``d`` ever holds, as an inclusive ``(lo, hi)``: a wrapping digit
    ``0 .. span - 1``; the top one from its first value to one past its last iteration's (the update
    after the last iteration advances it once more); None where the loop's bounds are not constants."""
    if d.span is not None:
        return 0, d.span - 1
    if not (isinstance(loop.init, IntImm) and isinstance(loop.bound, IntImm)):
        return None
    return d.value(loop.init.value + offset), d.value(loop.bound.value - 1 + offset) + 1


@dataclass
class _Plan:
    """A loop's rewrite: counter chains, induction variables and digit sums, the body reading them
    (not yet advancing them), and the operations it saves per iteration net of upkeep."""

    counters: list
    ivs: list
    digit_ivs: list
    core: Stmt
    saving: float
    registers: int

    @property
    def worth(self) -> bool:
        return self.registers > 0 and self.saving >= self.registers


def _needed_counters(core: Stmt, counters: list, digit_ivs: list) -> list:
    """The counters with only the digits ``core`` or a digit induction still reads (lower ones stay: their
    wraps carry)."""
    read = {n.name for n in distinct_nodes(core) if isinstance(n, Var)}
    out = []
    for c, (chain, pairs) in enumerate(counters):
        needed = {i for i, (v, _) in enumerate(pairs) if v.name in read}
        needed |= {i for g, _, _ in digit_ivs if g.chain == c for i in g.reads(chain)}
        out.append((chain, pairs[:max(needed, default=-1) + 1]))
    return out


def _advance_counters(core: Stmt, k: Var, counters: list, digit_ivs: list) -> Stmt:
    """``core`` reading every counter digit and digit induction from its register at the top and advancing
    them at the end (a digit induction by the step its chain's wraps give)."""
    updates = []
    for c, (chain, pairs) in enumerate(counters):
        digits = tuple(v for v, _ in pairs)
        carried = [Store.make(buf, 0, v + g.step(chain, digits)) for g, v, buf in digit_ivs if g.chain == c]
        updates.append(chain.update(k, list(pairs), carried))
    core = seq(core, *updates)
    for _, v, buf in reversed(digit_ivs):
        core = Let.make(v, Load.make(v.type, buf, 0), core)
    for _, pairs in reversed(counters):
        for v, buf in reversed(pairs):
            core = Let.make(v, Load.make(v.type, buf, 0), core)
    return core


def _is_sum(e: Node) -> bool:
    return isinstance(e, (Binary, Unary)) and e.type.is_int and e.type.lanes == 1 \
        and e.op in (Op.ADD, Op.SUB, Op.MUL, Op.NEG)


def _whole_sums(roots: list[Expr]) -> list[Expr]:
    """The integer sums (``+ - *``, negation) under ``roots`` that are computed as a whole somewhere:
    a root, or an operand of anything but a sum of their type (a sum of their type absorbs them)."""
    whole: dict[int, Expr] = {id(r): r for r in roots}
    for r in roots:
        for n in distinct_nodes(r):
            absorbs = _is_sum(n)
            for k in n.children():
                if isinstance(k, Expr) and not (absorbs and k.type == n.type):
                    whole[id(k)] = k
    return [e for e in whole.values() if _is_sum(e)]


def _division_operands(level: LoopLevel) -> set[int]:
    """Ids of the nodes of the level that dividends of ``/`` and ``%`` are computed from, through lets."""
    roots = [n.a for x in level.entries for n in distinct_nodes(x.expr)
             if isinstance(n, Binary) and n.op in (Op.DIV, Op.MOD)]
    reach = {v.name for r in roots for v in expr_vars(r)}
    for x in reversed(level.entries):  # a let's value reads only lets bound before it
        if x.let is not None and x.let.name in reach:
            roots.append(x.expr)
            reach |= {v.name for v in expr_vars(x.expr)}
    return {id(n) for r in roots for n in distinct_nodes(r)}


def _invariant(t: Expr, inner: set[str]) -> bool:
    return not has_load(t) and not any(v.name in inner for v in expr_vars(t))


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
        if not (isinstance(store, Store) and store.buf == buf and isinstance(store.offset, IntImm)
                and store.offset.value == 0
                and isinstance(v, Binary) and v.op is Op.ADD and v.a == iv and isinstance(v.b, IntImm)):
            return None
        ivs.append((iv, buf, v.b.value))
    core = seq(*body.stmts[:-len(reads)])
    if any(isinstance(n, Var) and n.name in {b.name for _, b, _ in ivs} for n in distinct_nodes(core)):
        return None  # the core touches an induction register itself
    return InductionBody(tuple(ivs), core)


def reduce_strength(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` with loop-linear address sums turned into induction variables and digits of counting
    loops into counters, within the registers the kernel leaves free (``cse.register_budget``: the
    config's ``regs`` less the target's reserve and the IR's peak; without a target, no limit);
    the same object when none."""
    options = options or {}
    reg_bytes = int(options.get("reg_bytes") or 4)
    _, free = register_budget(ir, options)
    max_registers = _UNLIMITED if free is None else max(0, free // reg_bytes)
    return _Reduce(ir, reg_bytes, max_registers).mutate(ir)

