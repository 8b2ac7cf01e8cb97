"""Loop unrolling: a ``for`` marked ``[unroll U]`` runs U copies of its body per iteration.

Copy ``j`` sees the loop variable as ``k + j*step`` and the loop steps by
``U*step``. Variables bound inside the body are renamed in every copy but the
first, so names stay unique in the kernel. With constant bounds and ``n``
iterations:

- ``n <= U``: the loop disappears into ``n`` copies with ``k`` a constant;
- otherwise the loop runs ``n // U`` unrolled iterations and the ``n % U``
  left over follow as constant copies. Where the body compares ``k`` with a
  constant whose outcome changes only within the last unrolled iteration
  (a software-pipelined loop's ``k < n - 2``: its last iterations load
  nothing), that iteration is peeled too, as a constant copy after the
  loop, so the simplifier decides the test in every copy of the loop and in
  the peeled one (resnet50_3x3_tuned: two compares and their branches per
  trip gone, at the cost of one more copy of the body).

With bounds known only at run time, the unrolled loop stops at
``k_end = init + (n / U) * U * step`` (``n`` computed in IR) and a plain
loop from ``k_end`` runs the rest. Inner loops are unrolled before the loops
around them. Loops not marked keep their form.

A strength-reduced body (``strength_reduce.split_induction``: induction
variables read at the top, advanced at the end) is unrolled around them: copy
``j`` sees each induction variable ``j`` steps on and the unrolled iteration
advances it once, by ``U`` steps. Digit counters (``mixed_radix``) are not
linear, so they stay in the core: every copy reads them, uses them and runs
their update, whose guard ``(k + j + c) % b0 == b0 - 1`` the simplifier then
decides per copy.
"""
from __future__ import annotations

from typing import Any, Mapping

from ..ir.expr import Binary, IntImm, Op, Var, max_
from ..ir.node import Node
from ..ir.stmt import For, Let, Stmt, seq
from ..ir.visitor import IRMutator
from ..ir.names import Names
from .naming import Copies
from .strength_reduce import split_induction
from .tree import distinct_nodes, trip_count

_COMPARE = (Op.LT, Op.LE, Op.GT, Op.GE)


class _Unroll(IRMutator):
    def __init__(self, ir: Node):
        self.root = ir
        self._names: Names | None = None

    @property
    def names(self) -> Names:
        if self._names is None:  # only kernels with a loop to unroll pay for the name scan
            self._names = Names.of(self.root)
        return self._names

    def mutate_For(self, old: For, new: For):
        if new.unroll <= 1:
            return new
        return unroll_loop(new, self.names)


def _imm(k: Var, value: int) -> IntImm:
    return IntImm.make(k.type, value)


def unroll_loop(loop: For, names: Names) -> Stmt:
    """The statement running ``loop`` with its body unrolled ``loop.unroll`` times."""
    k, s, u = loop.var, loop.step, loop.unroll

    body = Copies(loop.body, (k,))

    def copy(kval, fresh: bool) -> Stmt:
        return body.copy({k: kval}, names if fresh else None)

    ind = split_induction(loop.body)
    renamed: list[dict[Var, Var]] = []  # per copy of the unrolled iteration, its names of the body's variables
    if ind is None:
        copies = [loop.body]
        for j in range(1, u):
            renamed.append(body.renaming(names))
            copies.append(body.copy({k: k + _imm(k, j * s), **renamed[-1]}))
        unrolled = seq(*copies)
    else:  # strength-reduced: copy j sees every induction variable j steps on; one increment
        core = Copies(ind.core, (k, *(iv for iv, _, _ in ind.ivs)))
        unrolled = ind.rebuild(seq(*(core.copy({k: k + _imm(k, j * s),
                                                **{iv: iv + IntImm.make(iv.type, j * d) for iv, _, d in ind.ivs}},
                                               names)
                                     if j else ind.core for j in range(u))), u)
    n = trip_count(loop)
    if n is not None:
        init = loop.init.value
        if n <= u:
            return seq(*(copy(_imm(k, init + j * s), j > 0) for j in range(n)))
        main = n // u * u
        rest = [copy(_imm(k, init + (main + j) * s), True) for j in range(n - main)]
        if main >= 2 * u and _decided_by_peeling(loop.body, k, init + (main - u) * s, init + (main - 1) * s):
            # The last unrolled iteration follows as a constant copy, so the loop's copies test no guard.
            main -= u
            first = init + main * s
            rest.insert(0, _peeled(body, renamed, k, first, s, names) if ind is None
                        else Copies(unrolled, (k,)).copy({k: _imm(k, first)}, names))
        return seq(For.make(k, loop.init, _imm(k, init + main * s), unrolled, s * u, origin=loop.origin), *rest)
    end = names.fresh(f"{k.name}_end", k.type)
    trips = max_(loop.bound - loop.init + _imm(k, s - 1), _imm(k, 0)) // _imm(k, s)
    tail_var = names.fresh(f"{k.name}_tail", k.type)
    tail = For.make(tail_var, end, loop.bound, copy(tail_var, True), s, origin=loop.origin)
    main_loop = For.make(k, loop.init, end, unrolled, s * u, origin=loop.origin)
    return Let.make(end, loop.init + trips // _imm(k, u) * _imm(k, u * s), seq(main_loop, tail))


def _peeled(body: Copies, renamed: list[dict[Var, Var]], k: Var, first: int, step: int, names: Names) -> Stmt:
    """The unrolled iteration (the body, then a copy of it per entry of ``renamed``: that copy's names of the
    body's variables) with ``k`` the constant ``first``, its variables renamed again: what a copy of the
    whole makes (the same names asked in the same order, each copy's ``k + j*step`` folded to a constant),
    built from copies of the body, without a plan of the whole iteration."""
    return seq(*(body.copy({k: _imm(k, first + j * step), **body.renaming(names, renamed[j - 1] if j else None)})
                 for j in range(len(renamed) + 1)))


def _decided_by_peeling(body: Stmt, k: Var, first: int, last: int) -> bool:
    """Whether ``body`` compares ``k`` with a constant whose outcome changes between ``first`` and
    ``last`` (the values ``k`` takes in the last unrolled iteration) and not before: peeling that
    iteration leaves the loop's copies a test they all pass (a pipelined loop's ``k < n - 2``, which
    its last iteration fails, to load nothing past the end)."""
    for node in distinct_nodes(body):
        if not (isinstance(node, Binary) and node.op in _COMPARE and node.a == k and isinstance(node.b, IntImm)):
            continue
        c = node.b.value
        outcome = {Op.LT: lambda v: v < c, Op.LE: lambda v: v <= c, Op.GT: lambda v: v > c,
                   Op.GE: lambda v: v >= c}[node.op]
        if outcome(first) != outcome(last) and outcome(first) == outcome(first - 1):
            return True
    return False


def unroll_loops(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` with every loop marked ``unroll > 1`` unrolled; the same object when none is."""
    return _Unroll(ir).mutate(ir)
