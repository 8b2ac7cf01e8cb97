"""What the steady-state main loop costs per reduction iteration: multiplies, sends, ALU operations.

The *main loop* is the loop inside the ``k_loop`` group that runs the most
multiply instructions (``dpas``, ``mma``, ``mad``, ``dp4a`` calls) and holds
no loop that runs them itself: after software pipelining and unrolling it is
the steady state, its prologue and epilogue peeled around it. When unrolling
removed every such loop, the whole ``k_loop`` group stands for it.

Figures are per reduction iteration: one trip of the main loop covers as
many iterations as its multiplies divided by the multiplies of one iteration
of the built kernel's reduction body. Counted the way the hardware issues
them, per SIMD thread:

- ``dpas``: multiply instructions (``dpas`` on Xe, ``mma`` on sm_90, or the
  ``mad``/``dp4a`` of vector kernels, ``ceil(lanes / alu lanes)`` each);
- ``sends``, ``send_bytes`` and ``by_kind``: memory messages, by operation,
  message kind and space (``load.block.slm``), with the bytes they move;
- ``min_sends``: the fewest messages those bytes need, per operation and
  space, at the target's largest block message (``Target.messages.block``, or
  for global loads on targets with 2D block loads the largest 2D block,
  ``Block2D.max_bytes``, its rows within the registers one message writes,
  where that is larger; a scattered vector message of
  the ALU's lanes may move more, 16 lanes of 8 dwords = 512 B on Xe-HPG, so a
  loop of those can send fewer);
- ``int_ops`` / ``float_ops``: ALU operations of integer / float results
  (comparisons by their operands' type, boolean logic as integer; a
  conversion between integers of one size is a retype, free), one per
  occurrence, ``ceil(lanes / alu lanes)`` each, plus the loop's own
  increment and compare per trip (a send's mask negated is its predicate
  inverted, ``~f0.0``: no operation);
- ``moves``: register copies: a store of a value nothing computes (a
  variable, constant or load) and the moves of a ``reorder``, one per
  ``alu lanes x 4`` bytes;
- ``operand_reorders``: reorders whose destination a multiply reads (the
  per-iteration relayout of an FMA operand).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import ceil

from ..ir.expr import Binary, BoolImm, Broadcast, Cast, Expr, FloatImm, IntImm, Load, Op, Ternary, Unary, Var
from ..ir.funcs import Dp4a, Dpas, Eltwise, Mad, Mma, Reduce, Reorder, Send, Send2D
from ..ir.node import Node
from ..ir.stmt import For, FuncCall, Group, Let, Stmt, Store
from ..ir.visitor import IRVisitor, statements, walk
from .opcount import is_retype
from .reduction_nest import K_LOOP, find_reduction_nest
from .tree import distinct_nodes, own_exprs, trip_count

_FMAS = (Dpas, Mma, Mad, Dp4a)
# The operands of a multiply's call that it reads as its A and B operands.
_FMA_OPERANDS = {Dpas: ("src1", "src2"), Mad: ("src1", "src2"), Dp4a: ("src1", "src2"), Mma: ("a", "b")}


@dataclass
class LoopStats:
    """The main loop's figures per reduction iteration (see the module doc)."""

    fma: str
    iterations_per_trip: float
    dpas: float = 0.0
    sends: float = 0.0
    send_bytes: float = 0.0
    min_sends: float = 0.0
    int_ops: float = 0.0
    float_ops: float = 0.0
    moves: float = 0.0
    operand_reorders: float = 0.0
    by_kind: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_dict(self) -> dict:
        keys = ("fma", "iterations_per_trip", "dpas", "sends", "send_bytes", "min_sends", "int_ops", "float_ops",
                "moves", "operand_reorders")
        out = {"source": "IR", **{k: getattr(self, k) for k in keys}}
        out["by_kind"] = {k: dict(v) for k, v in sorted(self.by_kind.items())}
        return out


def loop_stats(built: Stmt, final: Stmt, target) -> LoopStats | None:
    """The main loop of ``final`` per reduction iteration of ``built`` (the builder's IR of the same
    kernel), on ``target``; None when the kernel has no multiply in a ``k_loop`` group."""
    per_iteration = _built_fmas(built, target)
    group = _k_loop(final)
    if group is None or not per_iteration:
        return None
    main = _main_loop(group, target)
    body = main.body if isinstance(main, For) else main
    counter = _Counter(target, _operand_buffers(body))
    counter.visit(body)
    if isinstance(main, For):
        counter.int_ops += 2 * _lanes_ops(1, target)  # the loop's increment and compare, once per trip
    if not counter.fmas:
        return None
    per_trip = counter.fmas / per_iteration
    out = LoopStats(fma=counter.fma_kind, iterations_per_trip=round(per_trip, 2))

    def scaled(x: float) -> float:
        return round(x / per_trip, 2)

    out.dpas = scaled(counter.fmas)
    out.int_ops, out.float_ops = scaled(counter.int_ops), scaled(counter.float_ops)
    out.moves, out.operand_reorders = scaled(counter.moves), scaled(counter.reorders)
    by_space: dict[str, float] = {}
    for kind, (n, nbytes) in counter.sends.items():
        out.by_kind[kind] = {"count": scaled(n), "bytes": scaled(nbytes)}
        op, _, space = kind.split(".")
        by_space[f"{op}.{space}"] = by_space.get(f"{op}.{space}", 0) + nbytes / per_trip
    out.sends = round(sum(v["count"] for v in out.by_kind.values()), 2)
    out.send_bytes = round(sum(v["bytes"] for v in out.by_kind.values()), 2)
    out.min_sends = sum(ceil(round(b, 6) / _largest_message(target, space)) for space, b in by_space.items())
    return out


def _largest_message(target, space: str) -> int:
    """The most bytes one message of ``space`` (``load.global``...) moves on ``target``."""
    block2d = target.messages.block2d
    if space == "load.global" and block2d is not None:
        return max(target.messages.block, block2d.max_bytes(target.registers.reg_bytes))
    return target.messages.block


def _k_loop(ir: Node) -> Group | None:
    return next((n for n in distinct_nodes(ir) if isinstance(n, Group) and n.label == K_LOOP), None)


def _fma_instructions(call: FuncCall, target) -> int:
    f = call.func
    if isinstance(f, (Mad, Dp4a)):
        return _lanes_ops(f.simd, target)
    return 1


def _lanes_ops(lanes: int, target) -> int:
    return ceil(lanes / target.lanes.alu)


def _built_fmas(built: Stmt, target) -> int:
    """Multiply instructions of one iteration of the built reduction body."""
    nest = find_reduction_nest(built)
    root = nest.body if nest is not None else _k_loop(built)
    if root is None:
        return 0
    return _count_fmas(root, target)


def _count_fmas(s: Stmt, target) -> int:
    """Multiply instructions ``s`` executes (loops with constant bounds times their trips)."""
    count = _Fmas(target)
    count.visit(s)
    return count.total


class _PerTrip(IRVisitor):
    """A statement walk whose ``times`` counts a loop of unknown or zero trips once."""

    statements_only = True

    def trips(self, loop: For) -> int:
        return trip_count(loop) or 1


class _Fmas(_PerTrip):
    def __init__(self, target):
        self.target, self.total = target, 0

    def visit_FuncCall(self, s: FuncCall) -> None:
        if isinstance(s.func, _FMAS):
            self.total += self.times * _fma_instructions(s, self.target)


def _main_loop(group: Group, target) -> Stmt:
    """The innermost loop with multiplies that runs the most of them (with the trips of the loops around
    it inside the group), or the group itself when no loop holds a multiply."""
    main = _MainLoop(target)
    main.visit(group.body)
    return main.best[1] if main.best[1] is not None else group


class _MainLoop(_PerTrip):
    def __init__(self, target):
        self.target = target
        self.best: tuple[int, For | None] = (0, None)

    def visit_For(self, loop: For) -> None:
        fmas = _count_fmas(loop, self.target) * self.times
        # Of equal counts the last loop in program order wins (>=), as it always has.
        if fmas and fmas >= self.best[0] and not any(_count_fmas(k, self.target) for k in _loops_below(loop.body)):
            self.best = (fmas, loop)


def _loops_below(s: Stmt) -> list[For]:
    """The outermost loops of ``s``."""
    return [x for x in statements(s, lambda x: not isinstance(x, For)) if isinstance(x, For)]


def _operand_buffers(body: Stmt) -> set[str]:
    """Names of the buffers the multiplies of ``body`` read as their A and B operands."""
    names = set()
    for n in distinct_nodes(body):
        if isinstance(n, FuncCall) and type(n.func) in _FMA_OPERANDS:
            for name in _FMA_OPERANDS[type(n.func)]:
                buf = getattr(n.ops, name)
                if isinstance(buf, Var):
                    names.add(buf.name)
    return names


def _is_copy(e: Expr) -> bool:
    """A value nothing computes: a store of it is a register move."""
    if isinstance(e, Broadcast):
        return _is_copy(e.a)
    return isinstance(e, (Var, IntImm, FloatImm, BoolImm, Load))


class _Counter(_PerTrip):
    """Counts a statement tree's instructions, loops with constant bounds times their trips."""

    def __init__(self, target, operands: set[str]):
        self.target = target
        self.operands = operands
        self.fmas = 0
        self.fma_kind = ""
        self.int_ops = 0
        self.float_ops = 0
        self.moves = 0
        self.reorders = 0
        self.sends: dict[str, tuple[int, int]] = {}

    def visit_Stmt(self, s: Stmt) -> None:
        times = self.times
        for e in own_exprs(s):
            if isinstance(s, FuncCall) and isinstance(s.func, Send) and e is s.ops.mask:
                e = _predicate(e)
            self.expression(e, times)
        if isinstance(s, For):  # the increment and compare, on every trip
            self.int_ops += 2 * times * self.trips(s) * _lanes_ops(1, self.target)
        if isinstance(s, (Let, For)):
            return
        if isinstance(s, Store):
            if _is_copy(s.value):
                self.moves += times * _lanes_ops(s.value.type.lanes, self.target)
            return
        if not isinstance(s, FuncCall):
            return
        f = s.func
        if isinstance(f, _FMAS):
            self.fmas += times * _fma_instructions(s, self.target)
            self.fma_kind = self.fma_kind or ("dpasw" if isinstance(f, Dpas) and f.is_dpasw else _fma_name(f))
        elif isinstance(f, (Send, Send2D)):
            kind = f"{f.op.value}.{'block2d' if isinstance(f, Send2D) else f.kind.value}.{f.space}"
            n, nbytes = self.sends.get(kind, (0, 0))
            self.sends[kind] = (n + times, nbytes + times * f.elems * f.type.size)
        elif isinstance(f, (Reorder, Reduce)):
            dst = f.dst_layout
            nbytes = dst.elems() * dst.dtype.size
            self.moves += times * ceil(nbytes / (self.target.lanes.alu * 4))
            dst_buf = s.ops.dst
            if isinstance(f, Reorder) and isinstance(dst_buf, Var) and dst_buf.name in self.operands:
                self.reorders += times
        elif isinstance(f, Eltwise):
            self.float_ops += times * _lanes_ops(f.elems, self.target)

    def expression(self, e: Expr, times: int) -> None:
        # Every occurrence costs an instruction, as code generation evaluates the tree.
        for n in walk(e):
            if isinstance(n, (Unary, Binary, Ternary, Cast)):
                ops = times * _lanes_ops(n.type.lanes, self.target)
                if _is_float_op(n):
                    self.float_ops += ops
                elif not (isinstance(n, Cast) and is_retype(n)):
                    self.int_ops += ops


def _predicate(mask: Expr) -> Expr:
    """What a send's mask costs to compute: a negation is the predicate's inversion (``~f0.0``), free."""
    while isinstance(mask, Unary) and mask.op is Op.NOT:
        mask = mask.a
    return mask


def _is_float_op(n: Expr) -> bool:
    return n.type.is_float or any(isinstance(k, Expr) and k.type.is_float for k in n.children())


def _fma_name(f) -> str:
    return {Dpas: "dpas", Mma: "mma", Mad: "mad", Dp4a: "dp4a"}[type(f)]
