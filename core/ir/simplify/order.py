"""Deterministic structural facts about expressions: size, fingerprint, leading variable, loads.

The simplifier sorts the terms of a linear form and the operands of
commutative operators with ``Structure.key``. The key must not depend on the
process (Python's ``hash`` of strings is salted per run), so the fingerprint
is built from CRC-32 codes of names and attributes. The order it defines:

1. terms that mention a variable come before terms that mention none;
2. then by *leading variable*: the name of the first variable met when the
   term is printed (``x`` for ``(x / 4)``, the buffer for a load);
3. a plain variable before any compound term with the same leading variable;
4. then by the 64-bit structural fingerprint (stable across runs, arbitrary
   but fixed).

All facts are memoised per object for the life of one ``Structure`` (one
simplifier run) and computed by explicit-stack walks, so deep trees cost
O(size) once and O(1) afterwards.
"""
from __future__ import annotations

import zlib
from typing import Any

from ..expr import Expr, Load, Var
from ..node import Node
from ..visitor import post_order

_MASK = (1 << 64) - 1
_PRIME = 0x100000001B3
_CODES: dict = {}


def _code(value: Any) -> int:
    """A process-independent code for a class name or an attribute value."""
    key = (type(value), repr(value) if isinstance(value, float) else value)
    code = _CODES.get(key)
    if code is None:
        code = _CODES[key] = zlib.crc32(f"{type(value).__name__}:{value!r}".encode())
    return code


class Structure:
    """Size, and memoised fingerprint, leading variable and loads of expression nodes."""

    def __init__(self):
        # id -> (node, fingerprint, leading variable name or None, contains a load)
        self._facts: dict[int, tuple[Node, int, str | None, bool]] = {}
        self._loads: dict[int, tuple[Node, bool]] = {}  # id -> (node, contains a load)

    @staticmethod
    def size(e: Node) -> int:
        """Number of nodes of ``e`` (shared subtrees counted at each occurrence; cached by the node)."""
        return e._size

    def _facts_of(self, e: Node) -> tuple[Node, int, str | None, bool]:
        memo = self._facts
        hit = memo.get(id(e))
        if hit is not None:
            return hit
        for node in post_order(e, done=memo):
            h = _code(type(node).__name__)
            lead = node.name if isinstance(node, Var) else None
            loads = isinstance(node, Load)
            for name, kind in node.FIELDS:
                value = getattr(node, name)
                if kind == "attr":
                    h = ((h ^ _code(value)) * _PRIME) & _MASK
                    continue
                for k in (value if kind == "nodes" else () if value is None else (value,)):
                    _, k_fp, k_lead, k_loads = memo[id(k)]
                    h = ((h ^ k_fp) * _PRIME) & _MASK
                    loads |= k_loads
                    if lead is None:
                        lead = k_lead
            memo[id(node)] = (node, h, lead, loads)
        return memo[id(e)]

    def reads_memory(self, e: Node) -> bool:
        """True when ``e`` contains a load (without the fingerprints a sort key needs)."""
        hit = self._facts.get(id(e)) or self._loads.get(id(e))
        if hit is not None:
            return hit[-1]
        memo = self._loads
        for node in post_order(e, done=memo):
            memo[id(node)] = (node, isinstance(node, Load) or any(memo[id(k)][1] for k in node.children()))
        return memo[id(e)][1]

    def key(self, e: Expr) -> tuple:
        """The canonical sort key of a term (see the module docstring)."""
        _, fp, lead, _ = self._facts_of(e)
        return (lead is None, lead or "", not isinstance(e, Var), fp)
