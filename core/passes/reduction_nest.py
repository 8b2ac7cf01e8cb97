"""The reduction loop nest of a built kernel, and its flattening into one loop.

The builder puts the reduction in a ``k_loop { ... }`` group: perfectly nested
``for`` loops with constant bounds over the K blocks, around one body (the
kernel's *iteration*). Software pipelining (SLM multi-buffering, prefetching)
works on iterations: it needs "the loads of iteration ``it + d``". So the
nest becomes one loop over ``it`` in ``[0, total)`` whose loop variables are
recovered as mixed-radix digits of ``it`` (the last loop fastest), and
``bind(it)`` gives those digits for any iteration expression.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import lcm, prod

from typing import Any, Mapping

from ..ir.expr import Expr, IntImm, Var
from ..ir.node import Node
from ..ir.funcs import Send, SendKind
from ..ir.stmt import For, FuncCall, Group, Let, Stmt
from .cse import register_budget
from .options import target_of
from .tree import child_stmts, distinct_nodes, replace_node, trip_count

K_LOOP = "k_loop"
# The most copies of the iteration a loop is unrolled into for its digits' sake (a 3x3 conv's kh and
# kw: 9); a larger unroll only the config's own marks ask for.
MAX_COPIES = 16


@dataclass(frozen=True)
class ReductionNest:
    """``group`` (the ``k_loop`` group) holding ``loops`` (outermost first) around ``body``."""

    group: Group
    loops: tuple[For, ...]
    body: Stmt

    @property
    def trips(self) -> tuple[int, ...]:
        return tuple(trip_count(loop) for loop in self.loops)

    @property
    def total(self) -> int:
        return prod(self.trips)

    def digits(self, it: Expr) -> dict[Var, Expr]:
        """Each loop variable's value in flat iteration ``it``."""
        out: dict[Var, Expr] = {}
        stride = 1
        for loop, trips in reversed(list(zip(self.loops, self.trips))):
            k = loop.var
            index = it if stride == 1 else it // IntImm.make(k.type, stride)
            if stride * trips < self.total:
                index = index % IntImm.make(k.type, trips)
            if loop.step != 1:
                index = index * IntImm.make(k.type, loop.step)
            if not (isinstance(loop.init, IntImm) and loop.init.value == 0):
                index = index + loop.init
            out[k] = index
            stride *= trips
        return out

    def bind(self, it: Expr, body: Stmt) -> Stmt:
        """``body`` inside lets giving every loop variable its value in iteration ``it``."""
        for k, value in reversed(list(self.digits(it).items())):
            body = Let.make(k, value, body)
        return body

    def unroll_factor(self) -> int:
        """The flat loop's unroll factor keeping the nest's: the innermost loops' marks multiply
        while each is unrolled completely."""
        factor = 1
        for loop, trips in reversed(list(zip(self.loops, self.trips))):
            factor *= loop.unroll
            if loop.unroll < trips:
                break
        return factor


    def amortized_unroll(self, unroll: int, limit: int, depth: int | None = None) -> int:
        """``unroll`` made a multiple of the innermost loops' trips (at most ``depth`` of them) where
        that stays within ``limit`` copies and leaves at least two unrolled iterations: every digit of
        those loops (a conv's kh and kw) is then a constant in each copy, the digit above advances once
        per unrolled iteration, with no wrap to test, and the ring's slots stay constants
        (``unroll``'s factors are kept)."""
        best = unroll
        inner = 1
        for trips in list(reversed(self.trips[1:]))[:depth]:
            inner *= trips
            u = lcm(unroll, inner)
            if u > limit:
                break
            if self.total % u == 0 and self.total >= 2 * u:
                best = u
        return best


def find_reduction_nest(ir: Node) -> ReductionNest | None:
    """The ``k_loop`` group's nest when it is one chain of constant-bound loops, else None."""
    group = next((n for n in distinct_nodes(ir) if isinstance(n, Group) and n.label == K_LOOP), None)
    if group is None or not isinstance(group.body, For):
        return None
    loops = []
    s: Stmt = group.body
    while isinstance(s, For):
        if trip_count(s) is None or trip_count(s) == 0:
            return None
        loops.append(s)
        s = s.body
    return ReductionNest(group, tuple(loops), s)


def room_for_copies(ir: Node, options: Mapping[str, Any], copies: int, per_copy: int, held: int = 0,
                    per_copy_bytes: int = 0) -> bool:
    """Whether the registers the built kernel leaves free (``cse.register_budget``) take ``per_copy``
    values per copy of an unrolled iteration (what each copy hoists: a padding mask, an address offset)
    and ``per_copy_bytes`` more per copy (its per-lane vectors, :func:`vector_bytes`) besides ``held``
    registers the unrolled loop keeps whatever its copies (:func:`block_slm_messages`)."""
    model, free = register_budget(ir, options)
    if free is None:
        return True
    vectors = -(-per_copy_bytes // model.reg_bytes)
    return free >= ((per_copy + vectors) * copies + held) * model.reg_bytes


def vector_bytes(s: Stmt) -> int:
    """The bytes of the per-lane values one execution of ``s`` binds (loops counted by their trips): a
    gather's lane indices and offsets, which each copy of an unrolled iteration holds hoisted (its
    digits constants, they no longer vary with the loop), one set per copy."""
    own = s.var.type.size if isinstance(s, Let) and s.var.type.lanes > 1 else 0
    n = own + sum(vector_bytes(c) for c in child_stmts(s))
    return n * (trip_count(s) or 1) if isinstance(s, For) else n


def block_slm_messages(s: Stmt) -> int:
    """How many SLM block messages one execution of ``s`` sends (loops counted by their trips). In a ring
    unrolled by its length each such message of a step reads a constant slot, so each is an address the
    unrolled loop can hold across its trips: the Xe code generator keeps it at dword 0 of a register of
    its own, where the message reads it, instead of writing a header per message (``liveness``), if the
    kernel has those registers; copies of the step beyond the ring's add no slots, only their own values."""
    if isinstance(s, FuncCall):
        f = s.func
        return int(isinstance(f, Send) and f.space == "slm" and f.kind is SendKind.BLOCK)
    n = sum(block_slm_messages(c) for c in child_stmts(s))
    return n * (trip_count(s) or 1) if isinstance(s, For) else n


def unroll_inner_loops(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` with the innermost loops of a reduction nest no pipeline flattened (``bufs=0``, no
    prefetch) marked for complete unrolling, as many as fit ``MAX_COPIES`` copies and the free
    registers, the outermost loop kept: a conv's kh and kw loops are then constants in each copy (their
    padding masks invariant, their addresses immediates) and only the loop around them (ic) counts.
    A nest with nothing to flatten has its loop unrolled by a few steps instead (:func:`_few_steps`). Loops the
    config marked keep their marks; a nest computing per-lane index vectors (a gather) is unrolled only
    where every copy's vectors fit too; the same object when nothing is marked."""
    nest = find_reduction_nest(ir)
    if nest is None:
        return ir
    copies, depth = 1, 0
    for loop, trips in reversed(list(zip(nest.loops[1:], nest.trips[1:]))):
        if loop.unroll > 1 or copies * trips > MAX_COPIES:
            break
        copies, depth = copies * trips, depth + 1
    if depth == 0:
        return _few_steps(ir, nest, options or {})
    # One value per copy: its padding mask (its addresses are immediates on a base the copies share),
    # and its gathers' per-lane vectors
    if not room_for_copies(ir, options or {}, copies, 1, per_copy_bytes=vector_bytes(nest.body)):
        return ir
    body = nest.body
    marked = len(nest.loops) - depth
    for i, loop in reversed(list(enumerate(nest.loops))):
        unroll = nest.trips[i] if i >= marked else loop.unroll
        body = For.make(loop.var, loop.init, loop.bound, body, loop.step, unroll, origin=loop.origin)
    return replace_node(ir, nest.group, Group.make(nest.group.label, body, origin=nest.group.origin))


# The unroll of a loop of one reduction step per trip, largest first: 4 steps leave its counter a quarter
# of an instruction per step; more would add compile time for an eighth.
UNROLL_STEPS = (4, 3, 2)


def _few_steps(ir: Node, nest: ReductionNest, options: Mapping[str, Any]) -> Node:
    """A nest no pipeline flattened with nothing to flatten (one loop, or inner loops that do not fit),
    whose innermost loop runs one reduction step per trip: that loop unrolled by the largest of 4, 3 and 2
    that divides its trips and leaves two trips, where the free registers take the copies' values, so its
    counter and bound test count once per trip of several steps (oneDNN unrolls its compute loop so that
    the counters amortize; the addresses are carried across the back edge, ``carried_headers``)."""
    loop, trips = nest.loops[-1], nest.trips[-1]
    pipelined = any(options.get(k) for k in ("slm_bufs", "gmem_bufs", "prefetch_bufs"))
    target = target_of(options)
    # Xe only: on sm_90 ptxas unrolls and schedules the loop itself (the TMA schedules' K loop stays one)
    if target is None or target.xe is None or pipelined or loop.unroll > 1:
        return ir
    per_copy = vector_bytes(nest.body)
    unroll = next((u for u in UNROLL_STEPS if trips % u == 0 and trips // u >= 2
                   and room_for_copies(ir, options, u, 1, per_copy_bytes=per_copy)), None)
    if unroll is None:
        return ir
    body: Stmt = For.make(loop.var, loop.init, loop.bound, nest.body, loop.step, unroll, origin=loop.origin)
    for outer in reversed(nest.loops[:-1]):
        body = For.make(outer.var, outer.init, outer.bound, body, outer.step, outer.unroll, origin=outer.origin)
    return replace_node(ir, nest.group, Group.make(nest.group.label, body, origin=nest.group.origin))
