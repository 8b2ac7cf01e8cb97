"""The outer loop nest (seed 000): kernel grid, thread-group grid, reduction loops, tile origins.

Problem dims are blocked by the config's tiling (``kdd.core.config.tiling``):
a thread computes ``iter`` of a dim per iteration, a group ``iter * tg``
threads' worth, and the reduction loop runs ``loop`` iterations over a K dim.
The kernel grid axes hold N dims (``group_id0``), M dims (``group_id1``) and
B and K dims (``group_id2``); several dims packed on one axis are unpacked
with division and modulus, the last dim fastest. Threads of a group split M
over ``thread_id1`` and N over ``thread_id0``, and K over ``thread_id2`` (K
slicing: each iteration of the group covers ``iter x tg`` of a K dim, one
``iter`` slice per thread, and the slices' partial sums are added before the
epilogue, see :mod:`.k_slices`); the group has no loop over M or N, only
over K. A K dim with more than one group along it splits the reduction
across the grid.
"""
from __future__ import annotations

from dataclasses import dataclass

from kdd.core.ir import operators
from kdd.core.ir.expr import Expr, Var, var
from kdd.core.ir.names import Names
from kdd.core.ir.types import s32

from . import arith
from .errors import BuildError
from .origin import Origin

GROUP_IDS = ("group_id0", "group_id1", "group_id2")
THREAD_IDS = ("thread_id0", "thread_id1", "thread_id2")
# grid / thread-group axis of each GEMM role
AXIS = {"n": 0, "m": 1, "b": 2, "k": 2}


@dataclass(frozen=True)
class Binding:
    """``let var = value`` emitted at kernel scope."""

    var: Var
    value: Expr
    origin: Origin


@dataclass(frozen=True)
class LoopNest:
    """What the outer loop nest provides to the rest of the builder.

    ``bindings``: lets at kernel scope (unpacked grid/thread indices, tile
    origins of B/M/N dims). ``k_loops``: ``(var, count, unroll)`` reduction
    loops, outermost first, with ``k_bindings`` (K tile origins) inside them.
    ``thread_start`` / ``group_start``: per dim, the origin of the thread's and
    the group's tile. ``facts``: a known multiple of each origin variable.
    """

    bindings: tuple[Binding, ...]
    k_loops: tuple[tuple[Var, int, int], ...]
    k_bindings: tuple[Binding, ...]
    thread_start: dict
    group_start: dict
    local_start: dict
    facts: dict
    thread_linear: Expr


def _unpack(ids: Var, dims: list[tuple[str, int]], names: Names, suffix: str,
            origin: Origin) -> tuple[list[Binding], dict[str, Expr]]:
    """Indices of ``dims`` (``(name, count)``, last fastest) packed in ``ids``."""
    out: dict[str, Expr] = {}
    lets: list[Binding] = []
    live = [(n, c) for n, c in dims if c > 1]
    inner = 1
    for k, (name, count) in enumerate(reversed(live)):
        outermost = k == len(live) - 1
        value = arith.div(ids, inner)
        if not outermost:
            value = arith.mod(value, count)
        v = names.fresh(f"{name}_{suffix}")
        lets.append(Binding(v, value, origin))
        out[name] = v
        inner *= count
    lets.reverse()
    for name, count in dims:
        out.setdefault(name, arith.const(0))
    return lets, out


def build_loop_nest(tiling, names: Names, unroll) -> LoopNest:
    """Unpack the grids, open the reduction loops and bind every tile origin."""
    dims = tiling.dims
    for d in dims:
        if d.role != "k" and d.loop > 1:
            raise BuildError(f"loop={d.name}{d.loop}: loops run over K dims only "
                             f"({d.name} is a {d.role.upper()} dim); grow iter or tg instead", knob="loop")
    bindings, grp, thr = _unpacked_ids(dims, names)
    thread_start, group_start, local_start, facts = {}, {}, {}, {}
    for d in dims:
        if d.role == "k":
            continue
        group = operators.mul(grp[d.name], d.block)
        local = operators.mul(thr[d.name], d.iter)
        group_start[d.name] = group
        local_start[d.name] = local
        start = operators.add(group, local)
        if operators.is_const(start) or isinstance(start, Var):
            thread_start[d.name] = start
            continue
        v = names.fresh(f"{d.name}0")
        bindings.append(Binding(v, start, Origin("loop_nest.thread_tile", "iter")))
        facts[v] = d.iter
        thread_start[d.name] = v
    k_loops, k_bindings = _reduction_origins(tiling, names, unroll, grp, thr, (thread_start, group_start, local_start,
                                                                        facts))
    x, y, _ = tiling.tg_grid
    tid = [var(n, s32) for n in THREAD_IDS]
    linear = operators.add(tid[0] if x > 1 else 0, operators.mul(tid[1], x) if y > 1 else 0,
                       operators.mul(tid[2], x * y) if tiling.tg_grid[2] > 1 else 0)
    return LoopNest(tuple(bindings), tuple(k_loops), tuple(k_bindings), thread_start, group_start,
                    local_start, facts, linear)


def _unpacked_ids(dims, names: Names) -> tuple[list[Binding], dict[str, Expr], dict[str, Expr]]:
    """The lets that unpack the group and thread ids of each grid axis into the index of every dim
    along it, and those indices by dim (group, thread)."""
    grid_org, tg_org = Origin("loop_nest.grid", "iter"), Origin("loop_nest.thread_group", "tg")
    bindings: list[Binding] = []
    grp: dict[str, Expr] = {}
    thr: dict[str, Expr] = {}
    for axis in range(3):
        roles = [r for r, a in AXIS.items() if a == axis]
        axis_dims = [d for d in dims if d.role in roles]
        lets, idx = _unpack(var(GROUP_IDS[axis], s32), [(d.name, d.grid) for d in axis_dims], names,
                            "grp", grid_org)
        bindings += lets
        grp.update(idx)
        lets, idx = _unpack(var(THREAD_IDS[axis], s32), [(d.name, d.tg) for d in axis_dims], names,
                            "thr", tg_org)
        bindings += lets
        thr.update(idx)
    return bindings, grp, thr


def _reduction_origins(tiling, names: Names, unroll, grp: dict, thr: dict, starts: tuple):
    """The reduction loops (one per K dim with ``loop`` > 1) and the lets of the K origins they move,
    each K dim's origins written into ``starts`` (thread, group, local; facts)."""
    thread_start, group_start, local_start, facts = starts
    k_loops: list[tuple[Var, int, int]] = []
    k_bindings: list[Binding] = []

    def k_origin(name: str, value: Expr, multiple: int) -> Expr:
        if not (operators.is_const(value) or isinstance(value, Var)):
            v = names.fresh(name)
            k_bindings.append(Binding(v, value, Origin("loop_nest.reduction", "loop")))
            value = v
        if isinstance(value, Var):
            facts[value] = multiple
        return value

    for d in tiling.role("k"):
        loop_idx: Expr = arith.const(0)
        if d.loop > 1:
            lv = names.fresh(f"{d.name}_loop")
            k_loops.append((lv, d.loop, unroll.get(d.name) if unroll is not None else 1))
            loop_idx = lv
        # An iteration of the group covers iter x tg of a K dim: one K slice of iter per thread along it.
        group = k_origin(f"{d.name}0", operators.add(operators.mul(grp[d.name], d.block),
                                                 operators.mul(loop_idx, d.iter * d.tg)), d.iter * d.tg)
        local = operators.mul(thr[d.name], d.iter)
        group_start[d.name] = group
        local_start[d.name] = local
        thread_start[d.name] = group if operators.is_const(local, 0) else k_origin(
            f"{d.name}0_slice", operators.add(group, local), d.iter)
    return k_loops, k_bindings
