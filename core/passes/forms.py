"""The simplifier's linear forms and structural facts, as the passes use them.

Hoisting, strength reduction and send lowering regroup integer sums as
linear forms ``c1*t1 + ... + c0`` (exact modulo ``2**bits``, see
``kdd.core.ir.simplify.linear``); CSE orders candidates by size and a
process-independent key. This module is the one place the passes reach into
the simplifier's internals for that, memoized for the life of one pass run.
"""
from __future__ import annotations

from ..ir.expr import Expr
from ..ir.node import Node
from ..ir.simplify.linear import LinearForm, LinearForms, make_form
from ..ir.simplify.order import Structure
from ..ir.types import Type


class Forms:
    """Linear forms and structural facts of expressions, memoized per object."""

    def __init__(self):
        self._structure = Structure()
        self._forms = LinearForms(self._structure)

    def of(self, e: Expr) -> LinearForm:
        """The linear form of integer scalar expression ``e``."""
        return self._forms.of(e)

    def build(self, t: Type, terms: dict, const: int) -> Expr:
        """The canonical expression of ``sum(c * term) + const`` in type ``t``."""
        return make_form(self._structure, t, terms, const).to_expr()

    def size(self, e: Node) -> int:
        return self._structure.size(e)

    def key(self, e: Expr) -> tuple:
        """A sort key that does not depend on the process (unlike ``hash``)."""
        return self._structure.key(e)

    def reads_memory(self, e: Node) -> bool:
        return self._structure.reads_memory(e)
