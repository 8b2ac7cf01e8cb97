"""Kernel-sized IR: a 10,000-deep let chain and a 100k-node tree, far past Python's recursion limit."""
import sys

from kdd.core.ir import (IRMutator, IRVisitor, Let, Store, count_nodes, evaluate, free_vars,
                         print_ir, seq, to_text, var)
from kdd.core.ir.types import s32

DEPTH = 10_000


def let_chain(depth):
    vs = [var(f"v{i}") for i in range(depth)]
    s = Store.make(var("out", s32), 0, vs[-1])
    for i in reversed(range(depth)):
        s = Let.make(vs[i], vs[i - 1] + 1 if i else var("x"), s)
    return s


def wide_tree(n_stores):
    x = var("x")
    return seq(*(Store.make(var("out", s32), i * 4, (x + i) * (x - i)) for i in range(n_stores)))


def test_limits_are_really_exceeded():
    assert DEPTH > 5 * sys.getrecursionlimit()


def test_deep_let_chain_hash_print_visit_mutate():
    s = let_chain(DEPTH)
    t = let_chain(DEPTH)
    assert hash(s) == hash(t) and s.is_equal(t)
    printed = print_ir(s)
    assert len(printed.lines) == DEPTH + 1
    assert printed.lines[DEPTH] == f"out.s32[0] = v{DEPTH - 1}"
    assert count_nodes(s) == 5 * DEPTH + 2  # let, var, (var + 1) per level; store of 4

    class Count(IRVisitor):
        lets = 0

        def visit_Let(self, n):
            self.lets += 1

    c = Count()
    c.visit(s)
    assert c.lets == DEPTH

    class Rename(IRMutator):
        def mutate_Var(self, old, new):
            return var("y") if old.name == "x" else new

    renamed = Rename().mutate(s)
    assert free_vars(renamed) == {var("y"), var("out", s32)}
    assert IRMutator().mutate(s) is s


def test_deep_expression_evaluates_and_prints():
    x = var("x")
    e = x
    for i in range(DEPTH):
        e = e + 1
    assert evaluate(e, {"x": 5}) == DEPTH + 5
    assert to_text(e).count("(") == DEPTH


def test_hundred_thousand_node_tree():
    s = wide_tree(12_500)
    n = count_nodes(s)
    assert n >= 100_000
    assert len(print_ir(s).lines) == 12_500
    assert IRMutator().mutate(s) is s
