"""Barriers and fences.

A barrier (or a split barrier's wait) must be reached by all threads of a
group or by none: the thread mask restricted to any one group is all-true or
all-false, otherwise the kernel would hang on hardware. Reaching it orders
every SLM access of the group before it against every access after it (the
race history of the group's SLM is cleared). ``barrier_signal`` then
``barrier_wait`` is the split form: a group may not signal twice without
waiting, nor wait without having signalled; the wait is where accesses are
ordered.

As on hardware, a barrier orders SLM *writes* only once a ``fence.slm`` of
the writing thread completed them: a thread that wrote SLM and reaches a
``barrier`` or ``barrier_signal`` without a fence after its writes is an
error (oneDNN lowers a barrier as SLM fence, fence wait, barrier message,
wait). Global fences have no effect in the lockstep model.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kdd.core.ir.funcs import Barrier, BarrierSignal, BarrierWait, Fence
from kdd.core.ir.stmt import FuncCall

from .errors import InterpError
from .vexpr import MASK


@dataclass
class SyncState:
    """Per-run synchronization state: the live SLM buffers, per group a pending signal, and the
    transaction barriers by ``(buffer, group, byte)``."""

    groups: int
    live_slm: list = field(default_factory=list)
    signaled: np.ndarray = None
    mbarriers: dict = field(default_factory=dict)   # transaction barriers (.hopper)

    def __post_init__(self):
        self.signaled = np.zeros(self.groups, dtype=bool)


def _groups_at_barrier(env, grid, what: str) -> np.ndarray:
    """Bool per group: whether the group reaches this barrier (all its threads active)."""
    G, P = grid.launch.groups, grid.launch.group_size
    m = env[MASK]
    if m is None:
        return np.ones(G, dtype=bool)
    per_group = m.reshape(G, P)
    every, some = per_group.all(axis=1), per_group.any(axis=1)
    partial = some & ~every
    if partial.any():
        g = int(np.argmax(partial))
        t = g * P + int(np.argmin(per_group[g]))
        raise InterpError(f"{what} in divergent control flow: {grid.describe(t)} does not reach it "
                          f"while other threads of its group do")
    return every


def compile_sync(ctx, call: FuncCall):
    grid, slot = ctx.grid, ctx.sync_slot
    func = call.func

    def clear(state: SyncState, groups: np.ndarray) -> None:
        for slm in state.live_slm:
            slm.barrier(groups)

    def fenced(state: SyncState, groups: np.ndarray, what: str) -> None:
        for slm in state.live_slm:
            t = slm.unfenced_thread(groups)
            if t is not None:
                raise InterpError(f"{grid.describe(t)} wrote SLM '{slm.name}' and reaches a {what} with no "
                                  f"fence.slm after its writes: the barrier does not order them")

    if isinstance(func, Barrier):
        def barrier(env):
            groups = _groups_at_barrier(env, grid, "barrier")
            fenced(env[slot], groups, "barrier")
            clear(env[slot], groups)
        return barrier
    if isinstance(func, BarrierSignal):
        def signal(env):
            state: SyncState = env[slot]
            groups = _groups_at_barrier(env, grid, "barrier_signal")
            fenced(state, groups, "barrier_signal")
            again = groups & state.signaled
            if again.any():
                raise InterpError(f"group {int(np.argmax(again))} signals a barrier twice without waiting")
            state.signaled |= groups
        return signal
    if isinstance(func, BarrierWait):
        def wait(env):
            state: SyncState = env[slot]
            groups = _groups_at_barrier(env, grid, "barrier_wait")
            missing = groups & ~state.signaled
            if missing.any():
                raise InterpError(f"group {int(np.argmax(missing))} waits on a barrier it did not signal")
            state.signaled &= ~groups
            clear(state, groups)
        return wait
    if isinstance(func, Fence) and func.scope == "slm":
        def fence(env):
            for slm in env[slot].live_slm:
                slm.fence(env[MASK])
        return fence
    return lambda env: None  # a global fence: lockstep execution already orders global accesses
