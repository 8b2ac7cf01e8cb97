"""The simplifier on large inputs: deep let chains and 100k-node expressions, no recursion."""
import inspect
import sys

import pytest

from kdd.core.ir import For, Let, Store, const, count_nodes, evaluate, min_, var, walk
from kdd.core.ir.simplify import linear_form, simplify
from kdd.core.ir.types import u64

x, y = var("x"), var("y")
buf = var("buf", u64)
N = 10_000


def _let_chain(step) -> Let:
    names = [var(f"t{k}") for k in range(N)]
    body = Store.make(buf, names[-1], const(1.0))
    for k in range(N - 1, 0, -1):
        body = Let.make(names[k], step(names[k - 1], k), body)
    return Let.make(names[0], x + 1, body)


@pytest.fixture(autouse=True)
def shallow_stack():
    """Run each test with little stack to spare: recursion on input depth would fail."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 300)
    yield
    sys.setrecursionlimit(old)


def test_let_chain_used_once_collapses_into_one_store():
    chain = _let_chain(lambda prev, k: prev * 3 + 1 if k % 2 else prev // 2)
    out = simplify(chain)
    assert isinstance(out, Store)
    assert count_nodes(out.offset) < 3 * N  # (v*3 + 1) / 2 for each pair of lets
    for v in (5, -7, 2**31 - 1):
        assert evaluate(out.offset, {"x": v}) == _reference(v)


def _reference(v: int) -> int:
    v = _wrap(v + 1)
    for k in range(1, N):
        v = _wrap(v * 3 + 1) if k % 2 else (abs(v) // 2) * (1 if v >= 0 else -1)
    return v


def _wrap(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


def test_let_chain_used_twice_is_kept_and_stable():
    chain = _let_chain(lambda prev, k: prev * prev + 1)
    out = simplify(chain)
    assert sum(isinstance(n, Let) for n in walk(out)) == N - 1  # the last one is used once
    assert simplify(out) is out


def test_long_sum_with_few_distinct_terms():
    e = x
    for k in range(50_000):
        e = (e + (y if k % 3 else 1)) if k % 2 else e - x
    assert count_nodes(e) > 100_000
    out = simplify(e)
    assert str(out) == "(((y * 16667) - (x * 24999)) + 8333)"
    lf = linear_form(e)
    assert [(str(t), c) for t, c in lf.terms] == [("x", -24999), ("y", 16667)]


@pytest.mark.slow
def test_deep_nonlinear_chain_in_a_loop():
    levels = 17_000
    e = x
    for _ in range(levels):
        e = min_(e + 1, y) // 2 + 0 * y
    assert count_nodes(e) > 100_000
    loop = For.make(x, 0, 100, Store.make(buf, e, const(1.0)))
    out = simplify(loop, {"y": (0, 100)})
    assert count_nodes(out.body.offset) == 6 * levels + 1  # the "+ 0 * y" of every level is gone
    assert evaluate(out.body.offset, {"x": 7, "y": 50}) == evaluate(e, {"x": 7, "y": 50})
