"""Unique variable names for one kernel (IR variables compare by name, so names must not repeat)."""
from __future__ import annotations

from kdd.core.ir.expr import Var, var
from kdd.core.ir.types import Type, s32


class Names:
    """Hands out ``base``, ``base_1``, ``base_2``... so every variable of a kernel is distinct."""

    def __init__(self, reserved: tuple[str, ...] = ()):
        self._used: set[str] = set(reserved)

    def fresh(self, base: str, type: Type = s32) -> Var:
        name, k = base, 0
        while name in self._used:
            k += 1
            name = f"{base}_{k}"
        self._used.add(name)
        return var(name, type)
