"""Rewrite rules written as algebra: ``rewrite(min_(x, max_(x, y)), x)``.

Patterns and results are ordinary IR built from *wildcards*: ``x``, ``y``,
``z`` match any expression (``p``, ``q`` any bool expression) and ``c0``,
``c1`` match an integer immediate. A wildcard used twice must match equal
expressions. Matching is structural, tries both operand orders of a
commutative operator, and only matches nodes without implicit conversions
(both operands of the node's own type), so a rule never changes a type.

A result is instantiated bottom-up through the simplifier's constructors, so
constant sub-results such as ``min_(c0, c1)`` fold and the new nodes are
simplified as they are built. ``when`` is a side condition on the match
(``lambda m: m.c0 > 0``); ``m.x`` is the expression bound to ``x`` and
``m.c0`` the integer value bound to ``c0``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..expr import Binary, BoolImm, Expr, IntImm, Ternary, Unary, Var, as_expr
from ..types import Type, bool_, s32

_ANY, _CONST = "?", "#"


def wild(name: str, type: Type = s32) -> Var:
    """A wildcard matching any expression."""
    return Var.make(type, _ANY + name)


def const_wild(name: str) -> Var:
    """A wildcard matching an integer immediate."""
    return Var.make(s32, _CONST + name)


x, y, z = wild("x"), wild("y"), wild("z")
p, q = wild("p", bool_), wild("q", bool_)
c0, c1, c2 = const_wild("c0"), const_wild("c1"), const_wild("c2")


@dataclass(frozen=True)
class Rewrite:
    """``before`` -> ``after`` when ``when(match)`` holds."""

    before: Expr
    after: Expr
    when: Callable[["Match"], bool] | None = None


def rewrite(before: Expr, after, when: Callable[["Match"], bool] | None = None) -> Rewrite:
    return Rewrite(before, as_expr(after), when)


class Match:
    """The bindings of one successful match, for side conditions."""

    def __init__(self, bound: dict[str, Expr]):
        self._bound = bound

    def __getattr__(self, name: str):
        bound = self.__dict__["_bound"]
        if _ANY + name in bound:
            return bound[_ANY + name]
        if _CONST + name in bound:
            return bound[_CONST + name].value
        raise AttributeError(f"rule has no wildcard '{name}'")


def apply(rules: tuple[Rewrite, ...], e: Expr, simplifier) -> Expr | None:
    """The result of the first rule of ``rules`` that matches ``e`` (None when none does)."""
    for rule in rules:
        bound: dict[str, Expr] = {}
        if _match(rule.before, e, bound) and (rule.when is None or rule.when(Match(bound))):
            return _build(rule.after, bound, simplifier)
    return None


def _match(pat: Expr, e: Expr, bound: dict[str, Expr]) -> bool:
    if isinstance(pat, Var) and pat.name[0] in (_ANY, _CONST):
        if pat.name[0] == _CONST and not isinstance(e, IntImm):
            return False
        if pat.type.is_bool != e.type.is_bool or e.type.is_float:
            return False
        seen = bound.get(pat.name)
        if seen is None:
            bound[pat.name] = e
            return True
        return seen.value == e.value if pat.name[0] == _CONST else seen == e
    if isinstance(pat, (IntImm, BoolImm)):
        return type(e) is type(pat) and e.value == pat.value
    if type(pat) is not type(e) or pat.op is not e.op:
        return False
    if isinstance(pat, Unary):
        return _match(pat.a, e.a, bound)
    if isinstance(pat, Ternary):
        return e.b.type == e.c.type and all(_match(pp, ee, bound) for pp, ee in
                                             ((pat.a, e.a), (pat.b, e.b), (pat.c, e.c)))
    if e.a.type != e.b.type:
        return False
    orders = [(e.a, e.b), (e.b, e.a)] if pat.op.is_commutative else [(e.a, e.b)]
    for a, b in orders:
        trial = dict(bound)
        if _match(pat.a, a, trial) and _match(pat.b, b, trial):
            bound.update(trial)
            return True
    return False


def _build(template: Expr, bound: dict[str, Expr], s) -> Expr:
    if isinstance(template, Var) and template.name[0] in (_ANY, _CONST):
        return bound[template.name]
    if isinstance(template, Binary):
        return s.binary(template.op, _build(template.a, bound, s), _build(template.b, bound, s))
    if isinstance(template, Unary):
        return s.unary(template.op, _build(template.a, bound, s))
    if isinstance(template, Ternary):
        return s.ternary(template.op, *(_build(k, bound, s) for k in (template.a, template.b, template.c)))
    return template
