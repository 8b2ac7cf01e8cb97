"""Fresh variable names: one service for the builder and the passes.

IR variables compare by name and type, and names are unique in a kernel, so
every variable the builder makes or a pass introduces (a CSE temporary, a
hoisted sum, a message header, an unrolled copy's let) gets a name no other
variable of the kernel has: ``base``, ``base_1``, ``base_2``...
"""
from __future__ import annotations

from typing import Iterable

from .expr import Var
from .node import Node
from .types import Type, s32
from .visitor import var_names


class Names:
    """Hands out names unused in one kernel: ``reserved`` ones are taken from the start; :meth:`of` an IR
    takes every name in it."""

    def __init__(self, reserved: Iterable[str] = ()):
        self._used: set[str] | None = set(reserved)
        self._ir: Node | None = None
        # Per base, the K to try first: every name before it is taken (names are never given back), so
        # unrolling's 64 copies of a let ask 64 times without counting up from ``base`` each time.
        self._next: dict[str, int] = {}

    @classmethod
    def of(cls, ir: Node) -> "Names":
        """The names unused in ``ir``, collected on the first request: most pass runs change nothing and
        never pay for the walk."""
        names = cls()
        names._used, names._ir = None, ir
        return names

    def fresh(self, base: str, type: Type = s32) -> Var:
        """A variable of ``type`` named ``base`` or ``base_K``, unused until now."""
        if self._used is None:
            self._used = var_names(self._ir)
        k = self._next.get(base, 0)
        name = f"{base}_{k}" if k else base
        while name in self._used:
            k += 1
            name = f"{base}_{k}"
        self._used.add(name)
        self._next[base] = k + 1
        return Var.make(type, name)
