"""Multiply lanes a kernel issues, counted on its IR: each multiply instruction's shape times the trips
of the loops around it (the config's figure, :mod:`kdd.core.config.lanes`, derives the same number from
the tiles; this one reads what was built).

One instruction issues ``rcount x simd x K-depth`` multiply-adds (``dpas``), ``simd`` (``mad``), ``4 x
simd`` (``dp4a``) or ``m x n x k`` (``mma``, per warp). A conditional statement counts as issued (its
branches' larger count): a tail's masked instructions still occupy their lanes.
"""
from __future__ import annotations

from ..ir.funcs import Dp4a, Dpas, Mad, Mma, Wgmma
from ..ir.stmt import For, FuncCall, If, Stmt
from .tree import child_stmts, trip_count


class NotCounted(Exception):
    """A loop whose trip count is not a constant, or a multiply issued by a warp group (``wgmma``)."""


def macs_per_instruction(func) -> int | None:
    """Multiply-adds one issue of ``func`` covers, or None when it multiplies nothing."""
    if isinstance(func, Dpas):
        return func.rcount * func.simd * func.sdepth * (4 // func.src2_type.size)
    if isinstance(func, Mad):
        return func.simd
    if isinstance(func, Dp4a):
        return 4 * func.simd
    if isinstance(func, Mma):
        return func.m * func.n * func.k
    if isinstance(func, Wgmma):
        raise NotCounted("wgmma is issued by a warp group, not by one thread")
    return None


def issued_macs(body: Stmt) -> int | None:
    """Multiply-adds one thread's multiply instructions issue over ``body`` (None where a loop around
    one has a trip count that is not a constant, or a warp group issues them)."""
    memo: dict[int, int] = {}

    def count(s: Stmt) -> int:
        if id(s) in memo:
            return memo[id(s)]
        if isinstance(s, FuncCall):
            n = macs_per_instruction(s.func) or 0
        elif isinstance(s, For):
            inner = count(s.body)
            trips = trip_count(s)
            if inner and trips is None:
                raise NotCounted(f"loop {s.var.name} has no constant trip count")
            n = inner * (trips or 0)
        elif isinstance(s, If):
            n = max(count(s.then), count(s.else_) if s.else_ is not None else 0)
        else:
            n = sum(count(k) for k in child_stmts(s))
        memo[id(s)] = n
        return n

    try:
        return count(body)
    except NotCounted:
        return None
