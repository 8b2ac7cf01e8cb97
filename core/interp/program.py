"""Statements compiled into closures and run for every SIMD thread of a launch in lockstep.

:func:`compile_program` turns a kernel body into a :class:`Program` once;
:meth:`Program.run` executes it over global buffers. Statements become steps
``step(env)``; a let chain and the sequences and groups around it flatten into
one list of steps (bindings included), so let chains of any length neither
recurse at compile time nor at run time. Only ``for``, ``if`` and ``alloc``
nest, as deep as the IR nests them.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Mapping

import numpy as np

from kdd.core.ir.expr import Expr, Var
from kdd.core.ir.funcs import (Barrier, BarrierSignal, BarrierWait, Dp4a, Dpas, Eltwise, Fence, Mad,
                               Mma, Reduce, Reorder, Send, Send2D)
from kdd.core.ir.printer import to_text
from kdd.core.ir.stmt import Alloc, For, FuncCall, Group, If, Let, MemKind, Seq, Stmt, Store
from kdd.core.ir.types import s32
from kdd.core.ir.visitor import free_vars

from .errors import InterpError
from .fma import compile_dp4a, compile_dpas, compile_mad, compile_mma
from .hopper import HOPPER_COMPILERS
from .grid import ID_NAMES, Grid, Launch
from .memory import ElementBytes, GlobalMemory, Memory, Registers, SharedMemory
from .operands import Operand, buffer_var, combine_masks, constant_or
from .sends import compile_send, compile_send2d
from .sync import SyncState, compile_sync
from .tensor_ops import compile_eltwise, compile_reduce, compile_reorder
from .values import to_bytes, value_dtype
from .vexpr import MASK, ExprCompiler, Fn, Slots

Step = Callable[[list], None]

_INTRINSICS = {
    Send: compile_send, Send2D: compile_send2d, Mad: compile_mad,
    Dp4a: compile_dp4a, Dpas: compile_dpas, Mma: compile_mma,
    Reorder: compile_reorder, Reduce: compile_reduce, Eltwise: compile_eltwise,
    Barrier: compile_sync, BarrierSignal: compile_sync, BarrierWait: compile_sync, Fence: compile_sync,
    **HOPPER_COMPILERS,
}
_MEMORY = {MemKind.GRF: Registers, MemKind.SLM: SharedMemory}


@dataclass(frozen=True)
class RunResult:
    """What a run leaves besides the buffers it wrote: which bytes of each global buffer
    were stored to, and the wall time of the run."""

    written: Mapping[str, np.ndarray]
    ms: float


def describe(stmt: Stmt) -> str:
    """A one-line name for a statement in error messages."""
    return to_text(stmt).strip().splitlines()[0].strip()


def uniform_int(v: np.ndarray, mask, what: str) -> int:
    """The value of ``v`` shared by every active thread; raises when threads disagree."""
    if v.shape[0] == 1:
        return int(v[0])
    active = v if mask is None else v[mask]
    if (active != active[0]).any():
        lo, hi = int(active.min()), int(active.max())
        raise InterpError(f"{what} differs between threads ({lo} .. {hi}); loop bounds must be uniform")
    return int(active[0])


class Program:
    """A kernel body compiled for one launch geometry."""

    def __init__(self, body: Stmt, launch: Launch):
        self.body = body
        self.launch = launch
        self.grid = Grid(launch)
        self.slots = Slots()
        self.exprs = ExprCompiler(self.slots)
        self._live: dict[Var, int] = {}
        self.sync_slot = self.slots.fresh()
        self.id_slots: dict[int, np.ndarray] = {}
        self.buffers: dict[str, int] = {}
        self.scope_end: Callable[[str, Registers], None] | None = None   # set for one run, see run()
        for v in sorted(free_vars(body), key=lambda v: v.name):
            slot = self._bind(v)
            if v.name in ID_NAMES:
                if v.type != s32:
                    raise InterpError(f"'{v.name}' is bound by the runtime as s32, used as {v.type}")
                self.id_slots[slot] = self.grid.ids[v.name]
            else:
                self.buffers[v.name] = slot
        self.main = self.block(body)

    # -- compile-time scopes ----------------------------------------------------------------------
    def _bind(self, var: Var) -> int:
        self._live[var] = self._live.get(var, 0) + 1
        return self.slots.bind(var)

    def _unbind(self, var: Var) -> None:
        self._live[var] -= 1

    # -- services for intrinsic compilers ---------------------------------------------------------
    def expr(self, e: Expr) -> Fn:
        return self.exprs.compile_root(e)

    def operand(self, buf: Expr, off: Expr, what: str) -> Operand:
        var = buffer_var(buf, what)
        return Operand(self.slots.lookup(var), constant_or(self.expr(off), off), var.name)

    # -- statements --------------------------------------------------------------------------------
    def block(self, root: Stmt) -> Step:
        """``root`` as one step: lets, sequences and groups flattened into a list."""
        steps: list[Step] = []
        stmts: list[Stmt] = []
        work: list = [root]
        while work:
            item = work.pop()
            if isinstance(item, tuple):  # ("unbind", var) or ("restore", var, slot, saved)
                self._unbind(item[1])
                if item[0] == "restore":
                    steps.append(_restore(item[2], item[3]))
                    stmts.append(root)
                continue
            if isinstance(item, Seq):
                work.extend(reversed(item.stmts))
            elif isinstance(item, Group):
                work.append(item.body)
            elif isinstance(item, Let):
                value = self.expr(item.value)
                shadowing = self._live.get(item.var, 0) > 0
                slot = self._bind(item.var)
                if shadowing:
                    saved = self.slots.fresh()
                    steps.append(_save_and_bind(slot, saved, value))
                    work.append(("restore", item.var, slot, saved))
                else:
                    steps.append(_bind(slot, value))
                    work.append(("unbind", item.var))
                stmts.append(item)
                work.append(item.body)
            else:
                steps.append(self.stmt(item))
                stmts.append(item)
        return _sequence(steps, stmts)

    def stmt(self, s: Stmt) -> Step:
        if isinstance(s, For):
            return self._for(s)
        if isinstance(s, If):
            return self._if(s)
        if isinstance(s, Alloc):
            return self._alloc(s)
        if isinstance(s, Store):
            return self._store(s)
        if isinstance(s, FuncCall):
            compile_call = _INTRINSICS.get(type(s.func))
            if compile_call is None:
                raise InterpError(f"no interpreter for function {s.func}")
            return compile_call(self, s)
        raise InterpError(f"cannot execute {type(s).__name__}")

    def _scoped_block(self, var: Var, body: Stmt) -> tuple[int, Step]:
        if self._live.get(var, 0) > 0:
            raise InterpError(f"'{var.name}' is bound again inside its own scope")
        slot = self._bind(var)
        try:
            return slot, self.block(body)
        finally:
            self._unbind(var)

    def _for(self, s: For) -> Step:
        init, bound = self.expr(s.init), self.expr(s.bound)
        slot, body = self._scoped_block(s.var, s.body)
        dt, step, name = value_dtype(s.var.type), s.step, s.var.name

        def loop(env):
            m = env[MASK]
            lo = uniform_int(init(env), m, f"init of loop '{name}'")
            hi = uniform_int(bound(env), m, f"bound of loop '{name}'")
            for i in range(lo, hi, step):
                env[slot] = np.array([i], dtype=dt)
                body(env)
        return loop

    def _if(self, s: If) -> Step:
        cond = self.expr(s.cond)
        then = self.block(s.then)
        other = self.block(s.else_) if s.else_ is not None else None

        def branch(env):
            c = cond(env)
            if c.shape[0] == 1:
                if c[0]:
                    then(env)
                elif other is not None:
                    other(env)
                return
            m = env[MASK]
            t, e = (c, ~c) if m is None else (c & m, m & ~c)
            if not e.any():
                then(env)   # every active thread goes this way: keep the mask as it is
                return
            if not t.any():
                if other is not None:
                    other(env)
                return
            env[MASK] = t
            then(env)
            if other is not None:
                env[MASK] = e
                other(env)
            env[MASK] = m
        return branch

    def _alloc(self, s: Alloc) -> Step:
        cls = _MEMORY.get(s.kind)
        if cls is None:
            raise InterpError(f"alloc of {s.kind.value} memory is not supported (kernel arguments "
                              f"are the global buffers)")
        slot, body = self._scoped_block(s.buf, s.body)
        name, size, grid, sync = s.buf.name, s.size, self.grid, self.sync_slot
        is_slm = cls is SharedMemory

        def alloc(env):
            mem = cls(name, size, grid)
            env[slot] = mem
            if is_slm:
                env[sync].live_slm.append(mem)
            body(env)
            if is_slm:
                env[sync].live_slm.remove(mem)
            elif self.scope_end is not None:
                self.scope_end(name, mem)
            env[slot] = None
        return alloc

    def _store(self, s: Store) -> Step:
        buf = self.slots.lookup(buffer_var(s.buf, "store target"))
        value, offset = self.expr(s.value), self.expr(s.offset)
        mask = None if s.mask is None else self.expr(s.mask)
        t, lanes = s.value.type.base, s.value.type.lanes
        access = ElementBytes(t, lanes, s.stride, s.offset.type.lanes > 1)

        def store(env):
            mem: Memory = env[buf]
            v = value(env)
            raw = to_bytes(v[:, None] if lanes == 1 else v, t)
            off = offset(env).astype(np.int64)
            tm = env[MASK]
            em = None if mask is None else mask(env)
            if em is None and access.window and off.shape[0] == 1:
                mem.write_window(int(off[0]), raw, tm)
                return
            act = combine_masks(tm, em)  # (rows, lanes) or (rows, 1)
            if act is not None and act.shape[1] > 1:
                act = np.repeat(act, t.size, axis=1)
            mem.write(access.index(off), raw, act)
        return store

    # -- running ------------------------------------------------------------------------------------
    def run(self, buffers: Mapping[str, np.ndarray],
            scope_end: Callable[[str, Registers], None] | None = None) -> RunResult:
        """Runs the kernel once over ``buffers`` (name -> C-contiguous array, written in place);
        ``scope_end(name, registers)`` sees every register buffer as its scope ends (its contents for
        every SIMD thread), so a caller can keep a buffer's final values."""
        missing = sorted(set(self.buffers) - set(buffers))
        if missing:
            raise InterpError(f"no global buffer given for {', '.join(repr(m) for m in missing)}")
        env: list = [None] * self.slots.size
        env[MASK] = None
        env[self.sync_slot] = SyncState(self.launch.groups)
        for slot, ids in self.id_slots.items():
            env[slot] = ids
        globals_ = {name: GlobalMemory(name, np.asarray(buffers[name]), self.grid) for name in self.buffers}
        for name, slot in self.buffers.items():
            env[slot] = globals_[name]
        start = time.perf_counter()
        self.scope_end = scope_end
        try:
            with np.errstate(all="ignore"):
                self.main(env)
        finally:
            self.scope_end = None
        ms = (time.perf_counter() - start) * 1e3
        return RunResult({name: g.written for name, g in globals_.items()}, ms)


def _bind(slot: int, value: Fn) -> Step:
    def bind(env):
        env[slot] = value(env)
    return bind


def _save_and_bind(slot: int, saved: int, value: Fn) -> Step:
    def bind(env):
        v = value(env)
        env[saved] = env[slot]
        env[slot] = v
    return bind


def _restore(slot: int, saved: int) -> Step:
    def restore(env):
        env[slot] = env[saved]
    return restore


def _failure(err: Exception) -> InterpError:
    """An unexpected error during a run, as an InterpError (so that it gets located, not lost)."""
    return InterpError(f"interpreter failure ({type(err).__name__}: {err})")


def _sequence(steps: list[Step], stmts: list[Stmt]) -> Step:
    if len(steps) == 1:
        only, where = steps[0], stmts[0]

        def single(env):
            try:
                only(env)
            except InterpError as err:
                raise err.located(describe(where))
            except Exception as err:
                raise _failure(err).located(describe(where)) from err
        return single

    def run(env):
        i = 0
        try:
            for i, step in enumerate(steps):
                step(env)
        except InterpError as err:
            raise err.located(describe(stmts[i]))
        except Exception as err:
            raise _failure(err).located(describe(stmts[i])) from err
    return run


@lru_cache(maxsize=4)
def compile_program(body: Stmt, launch: Launch) -> Program:
    """The compiled program of ``body`` for ``launch`` (cached: IR is immutable and hashed)."""
    return Program(body, launch)


def run_ir(body: Stmt, launch: Launch, buffers: Mapping[str, np.ndarray],
           scope_end: Callable[[str, Registers], None] | None = None) -> RunResult:
    """Compiles (once) and runs ``body`` over ``buffers``; see ``docs/ir-semantics.md`` and
    :meth:`Program.run` for ``scope_end``."""
    return compile_program(body, launch).run(buffers, scope_end)
