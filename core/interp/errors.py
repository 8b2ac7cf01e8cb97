"""The interpreter's one error type."""
from __future__ import annotations


class InterpError(RuntimeError):
    """A kernel broke the IR semantics (``docs/ir-semantics.md``) while it ran.

    Out-of-bounds accesses, non-uniform loop bounds, barriers in divergent
    control flow, SLM races, unbound variables. ``where`` is the printed
    statement that failed (set by the innermost statement that saw the error).
    """

    def __init__(self, message: str, where: str | None = None):
        super().__init__(message)
        self.message = message
        self.where = where

    def located(self, where: str) -> "InterpError":
        """This error tagged with the statement it happened in (first tag wins)."""
        if self.where is None:
            self.where = where
        return self

    def __str__(self) -> str:
        return self.message if self.where is None else f"{self.message}\n  in: {self.where}"
