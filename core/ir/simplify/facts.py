"""What the simplifier knows about variables at one point of a kernel, with undo.

Facts come from the caller's ``ranges``, from ``let`` bindings that are kept
(the variable takes the bounds and alignment of its value), from ``for`` loops
(``init <= v <= bound - 1``) and from ``if`` conditions (refinements that hold
in one branch). Propagated lets are *substitutions*: the variable is replaced
by its value.

Changes are undone in LIFO order with ``mark``/``restore``, so the statement
simplifier opens and closes scopes in O(1) however deep the nesting is.
``memo`` holds what is valid only under the current facts (the bounds of
expressions, the expressions already simplified and what simplifying an
expression gave): binding or substituting a variable seen nowhere else keeps
it (nothing memoised can mention that variable), any other change starts a
fresh one and ``restore`` brings the old one back.
"""
from __future__ import annotations

from typing import Any, Mapping

from ..expr import Expr, Var
from ..types import Type
from .bounds import Info, type_info


class Facts:
    """Variable ranges, alignments and substitutions, with an undo log."""

    def __init__(self, ranges: Mapping[Any, tuple] | None = None, fresh: frozenset = frozenset()):
        self._by_var: dict[Var, Info] = {}
        self._by_name: dict[str, tuple[int | None, int | None]] = {}
        self.subst: dict[Var, Expr] = {}
        self.offsets: dict[Var, tuple[Var, int]] = {}   # kept let v = u + c (no overflow) -> (u, c)
        self.memo = Memo()
        self.fresh = fresh  # variables bound exactly once and never used outside their scope
        self._undo: list[tuple] = []
        for key, value in (ranges or {}).items():
            lo, hi = value
            if lo is not None and hi is not None and lo > hi:
                raise ValueError(f"empty range ({lo}, {hi}) for variable '{getattr(key, 'name', key)}'")
            if isinstance(key, Var):
                info = _clip(key.type, lo, hi)
                if info is not None:
                    self._by_var[key] = info
            elif isinstance(key, str):
                self._by_name[key] = (lo, hi)
            else:
                raise TypeError(f"range key must be a Var or a variable name, got {key!r}")

    def var_info(self, v: Var) -> Info | None:
        """What is known about ``v`` (its type's range when nothing else)."""
        info = self._by_var.get(v)
        if info is not None:
            return info
        named = self._by_name.get(v.name)
        if named is not None:
            return _clip(v.type, *named)
        return type_info(v.type)

    # -- scoped changes ---------------------------------------------------------------------
    def mark(self) -> int:
        return len(self._undo)

    def restore(self, mark: int) -> None:
        while len(self._undo) > mark:
            kind, key, old = self._undo.pop()
            if kind == "memo":
                self.memo = old
                continue
            table = self.subst if kind == "subst" else self.offsets if kind == "offset" else self._by_var
            if old is None:
                table.pop(key, None)
            else:
                table[key] = old

    def bind(self, v: Var, info: Info | None) -> None:
        """``v`` is bound (let or loop) to values described by ``info`` until the next ``restore``."""
        if v not in self.fresh:
            self._new_memo()
        self._undo.append(("info", v, self._by_var.get(v)))
        if info is None:
            self._by_var.pop(v, None)
        else:
            self._by_var[v] = info

    def refine(self, v: Var, lo: int, hi: int) -> bool:
        """Narrow ``v`` to ``lo..hi`` (an ``if`` branch); False when that leaves no value."""
        current = self.var_info(v)
        if current is None:
            return True
        narrowed = current.meet(lo, hi)
        if narrowed is None:
            return False
        if narrowed != current:
            self._new_memo()
            self._undo.append(("info", v, self._by_var.get(v)))
            self._by_var[v] = narrowed
        return True

    def offset(self, v: Var, u: Var, c: int) -> None:
        """Kept let ``v`` is ``u + c`` over the integers until the next ``restore`` (``bind`` it first: that
        starts the memo this fact is valid in)."""
        self._undo.append(("offset", v, self.offsets.get(v)))
        self.offsets[v] = (u, c)

    def substitute(self, v: Var, value: Expr) -> None:
        """Replace ``v`` by ``value`` until the next ``restore`` (a propagated let)."""
        if v not in self.fresh:  # results memoised for another binding of v must not be reused
            self._new_memo()
        self._undo.append(("subst", v, self.subst.get(v)))
        self.subst[v] = value

    def _new_memo(self) -> None:
        self._undo.append(("memo", None, self.memo))
        self.memo = Memo()


class Memo:
    """Results valid under one state of the facts, keyed by object id (the objects are kept alive)."""

    __slots__ = ("info", "forms", "canonical", "done", "results")

    def __init__(self):
        self.info: dict[int, tuple] = {}       # id -> (expr, Info | None)
        self.forms: dict[int, tuple] = {}      # id -> (expr, its linear form, value-keeping casts peeled)
        self.canonical: dict[int, Expr] = {}   # id -> expr built as the canonical form of its form
        self.done: dict[int, Expr] = {}        # id -> expr that simplification leaves unchanged
        self.results: dict[Expr, Any] = {}    # expr (structurally) -> what simplification makes of it


def _clip(t: Type, lo: int | None, hi: int | None) -> Info | None:
    base = type_info(t)
    if base is None:
        return None
    lo = base.lo if lo is None else max(int(lo), base.lo)
    hi = base.hi if hi is None else min(int(hi), base.hi)
    if lo > hi:
        raise ValueError(f"range ({lo}, {hi}) lies outside type {t}")
    return Info.make(lo, hi)
