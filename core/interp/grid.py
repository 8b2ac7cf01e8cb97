"""The launch geometry: thread groups, SIMD threads, and the flat thread index of the interpreter."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

ID_NAMES = ("group_id0", "group_id1", "group_id2", "thread_id0", "thread_id1", "thread_id2")


@dataclass(frozen=True)
class Launch:
    """What the runtime fixes for a kernel run: grid, group size, SIMD width, register row size.

    ``grid`` is the number of thread groups per dimension, ``tg`` the number of
    SIMD threads per group per dimension (``thread_id0`` fastest).
    """

    grid: tuple[int, int, int]
    tg: tuple[int, int, int]
    simd: int
    reg_bytes: int

    def __post_init__(self):
        object.__setattr__(self, "grid", _dims3(self.grid, "grid"))
        object.__setattr__(self, "tg", _dims3(self.tg, "tg"))
        if self.simd < 1 or self.reg_bytes < 4 or self.reg_bytes % 4:
            raise ValueError(f"invalid simd {self.simd} / reg_bytes {self.reg_bytes}")

    @property
    def groups(self) -> int:
        return math.prod(self.grid)

    @property
    def group_size(self) -> int:
        return math.prod(self.tg)

    @property
    def threads(self) -> int:
        return self.groups * self.group_size


def _dims3(value, what: str) -> tuple[int, int, int]:
    dims = tuple(int(v) for v in value)
    dims = dims + (1,) * (3 - len(dims))
    if len(dims) != 3 or any(d < 1 for d in dims):
        raise ValueError(f"{what} must be 1 to 3 positive sizes, got {value!r}")
    return dims


@dataclass(frozen=True)
class Grid:
    """Every SIMD thread of a launch on one axis: thread ``t`` is in group ``t // group_size``.

    Inside a group, ``t % group_size = thread_id0 + X * (thread_id1 + Y * thread_id2)``;
    groups are numbered the same way from ``group_id0..2``.
    """

    launch: Launch
    group: np.ndarray = field(init=False, repr=False)   # (T,) group index of each thread
    local: np.ndarray = field(init=False, repr=False)   # (T,) thread index inside its group
    ids: dict = field(init=False, repr=False)           # ID_NAMES -> (T,) int32

    def __post_init__(self):
        L = self.launch
        t = np.arange(L.threads, dtype=np.int64)
        group, local = t // L.group_size, t % L.group_size
        g0, g1, g2 = group % L.grid[0], (group // L.grid[0]) % L.grid[1], group // (L.grid[0] * L.grid[1])
        t0, t1, t2 = local % L.tg[0], (local // L.tg[0]) % L.tg[1], local // (L.tg[0] * L.tg[1])
        object.__setattr__(self, "group", group)
        object.__setattr__(self, "local", local)
        ids = dict(zip(ID_NAMES, (g0, g1, g2, t0, t1, t2)))
        object.__setattr__(self, "ids", {k: v.astype(np.int32) for k, v in ids.items()})

    @property
    def threads(self) -> int:
        return self.launch.threads

    def describe(self, t: int) -> str:
        """``thread (t0, t1, t2) of group (g0, g1, g2)`` for flat thread ``t``."""
        i = {k: int(v[t]) for k, v in self.ids.items()}
        return (f"thread ({i['thread_id0']}, {i['thread_id1']}, {i['thread_id2']}) of group "
                f"({i['group_id0']}, {i['group_id1']}, {i['group_id2']})")
