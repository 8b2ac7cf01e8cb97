"""Before/after figures of a kernel: statements, reduction-loop address arithmetic, barriers, registers.

All counts are per SIMD thread and exact for IR whose loops have constant
bounds (the builder's); a loop with a bound known only at run time counts
one trip and makes ``exact`` False.

- ``stmts``: statements in the IR text (sequences and labelled groups are
  structure, not statements).
- ``inner_ops``: integer operations (``opcount.is_int_op``: index and
  address arithmetic) executed inside the reduction loop (the ``k_loop``
  group), per reduction iteration: the total divided by the number of
  iterations the built nest runs. Dividing by the built IR's count keeps the
  figure comparable after unrolling or flattening reshapes the loops.
- ``loop_ops``: integer operations executed inside any loop.
- ``barriers``: synchronizations executed (``barrier`` and ``barrier_wait``
  calls; a split barrier is one signal plus one wait).
- ``regs``: the register estimate of ``registers.estimate_registers``.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..ir.funcs import Barrier, BarrierWait
from ..ir.stmt import For, FuncCall, Group, Seq, Stmt
from ..ir.visitor import IRVisitor
from .opcount import int_ops
from .reduction_nest import K_LOOP, find_reduction_nest
from .registers import RegisterModel, estimate_registers
from .tree import own_exprs, trip_count


@dataclass(frozen=True)
class Metrics:
    """A kernel's size and loop figures, from its IR."""

    stmts: int
    inner_ops: float
    loop_ops: int
    barriers: int
    regs: int
    exact: bool = True

    def to_dict(self) -> dict:
        return asdict(self)


def reduction_iterations(ir: Stmt) -> int:
    """How many times the reduction body runs: the trip counts of the loops in ``k_loop`` multiplied
    along the first chain of nested loops (1 when there is no reduction loop)."""
    nest = find_reduction_nest(ir)
    return nest.total if nest is not None else 1


def kernel_metrics(ir: Stmt, model: RegisterModel, iterations: int | None = None) -> Metrics:
    """The figures of ``ir``; ``iterations`` is the built kernel's reduction iteration count
    (``reduction_iterations`` of the built IR; computed from ``ir`` when not given)."""
    iterations = iterations if iterations is not None else reduction_iterations(ir)
    count = _Counts()
    count.visit(ir)
    regs = estimate_registers(ir, model).regs
    return Metrics(count.stmts, round(count.k_ops / max(iterations, 1), 2), count.dynamic, count.barriers,
                   regs, count.exact_all)


class _Counts(IRVisitor):
    """The statement-level figures of :func:`kernel_metrics`, each statement's integer operations
    times its executions (``times``: the trips of the loops around it, an unknown count as one)."""

    statements_only = True

    def __init__(self):
        self.stmts = self.k_ops = self.dynamic = self.barriers = 0
        self.exact_all = True
        self.k_groups = 0  # reduction groups around the statement

    def visit_Stmt(self, s: Stmt) -> None:
        times = self.times
        if not isinstance(s, (Seq, Group)):
            self.stmts += 1
        if isinstance(s, FuncCall) and isinstance(s.func, (Barrier, BarrierWait)):
            self.barriers += times
        ops = sum(int_ops(e) for e in own_exprs(s)) * times
        self.dynamic += ops if self.loops else 0
        self.k_ops += ops if self.k_groups else 0
        if isinstance(s, Group) and s.label == K_LOOP:
            self.k_groups += 1
        if isinstance(s, For) and trip_count(s) is None:
            self.exact_all = False

    def leave_Group(self, s: Group) -> None:
        if s.label == K_LOOP:
            self.k_groups -= 1
