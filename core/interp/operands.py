"""Reading and writing the ``(buffer, byte offset)`` operands of intrinsic calls.

Offsets are ``(n,)`` int64 arrays (``n`` = 1 when uniform). Reads return
``(rows, ...)`` with rows = T for per-thread memory; writes take the current
thread mask (``None`` = every thread) so masked-off threads write nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from kdd.core.ir.expr import BoolImm, Expr, IntImm, Var
from kdd.core.ir.stmt import MemKind
from kdd.core.ir.types import Type

from .errors import InterpError
from .memory import Memory
from .values import from_bytes, to_bytes


def read_bytes(mem: Memory, off: np.ndarray, nbytes: int, mask) -> np.ndarray:
    """``nbytes`` bytes from ``off`` (per thread): ``(rows, nbytes)``."""
    if off.shape[0] == 1:
        return mem.read_window(int(off[0]), nbytes, mask)
    return mem.read_rows(off, nbytes, mask)


def write_bytes(mem: Memory, off: np.ndarray, data: np.ndarray, mask) -> None:
    """Writes ``data`` (``(1|T, nbytes)``) at ``off`` for the threads of ``mask``."""
    if off.shape[0] == 1:
        mem.write_window(int(off[0]), data, mask)
        return
    mem.write_rows(off, data, mask)


def read_values(mem: Memory, off: np.ndarray, t: Type, count: int, mask, copy: bool = True) -> np.ndarray:
    """``count`` dense values of type ``t`` from ``off``: ``(rows, count)``; ``copy=False``: possibly a view of
    the memory (see :func:`.values.from_bytes`)."""
    return from_bytes(read_bytes(mem, off, count * t.size, mask), t, copy)


def read_strided(mem: Memory, off: np.ndarray, t: Type, count: int, stride: int, mask,
                 copy: bool = True) -> np.ndarray:
    """``count`` values of ``t`` at ``off + i * stride`` bytes (stride 0 broadcasts one value)."""
    if stride == 0:
        return read_values(mem, off, t, 1, mask, copy)
    if stride == t.size:
        return read_values(mem, off, t, count, mask, copy)
    starts = off[:, None] + np.arange(count, dtype=np.int64) * stride
    idx = (starts[:, :, None] + np.arange(t.size)).reshape(starts.shape[0], -1)
    return from_bytes(mem.read(idx, None if mask is None else mask[:, None]), t)


def write_values(mem: Memory, off: np.ndarray, values: np.ndarray, t: Type, mask) -> None:
    """Writes ``values`` (``(rows, count)`` of type ``t``) densely at ``off``."""
    write_bytes(mem, off, to_bytes(values, t), mask)


def combine_masks(thread_mask, elem_mask) -> np.ndarray | None:
    """The per-element activity ``(rows, elems)``: thread mask and an element mask (scalar or vector)."""
    m = None
    if elem_mask is not None:
        m = elem_mask if elem_mask.ndim == 2 else elem_mask[:, None]
    if thread_mask is not None:
        m = thread_mask[:, None] if m is None else m & thread_mask[:, None]
    return m


@dataclass(frozen=True)
class Operand:
    """A compiled ``(buffer, offset)`` argument pair."""

    slot: int
    offset: Callable[[list], np.ndarray]
    name: str

    def memory(self, env: list, kind: MemKind | None = None) -> Memory:
        mem = env[self.slot]
        if not isinstance(mem, Memory):
            raise InterpError(f"'{self.name}' is not a buffer")
        if kind is not None and mem.kind is not kind:
            raise InterpError(f"'{self.name}' is a {mem.kind.value} buffer, expected {kind.value}")
        return mem

    def off(self, env: list) -> np.ndarray:
        return self.offset(env).astype(np.int64, copy=False)


def constant_or(fn: Callable, e: Expr) -> Callable:
    """A compiled expression, replaced by a constant closure for immediates."""
    if isinstance(e, IntImm):
        c = np.array([e.value], dtype=np.int64)
        return lambda env: c
    return fn


def is_true(e: Expr) -> bool:
    return isinstance(e, BoolImm) and e.value


def buffer_var(e: Expr, what: str) -> Var:
    if not isinstance(e, Var):
        raise InterpError(f"{what} must be a buffer variable, got {e}")
    return e
