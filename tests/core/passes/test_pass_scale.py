"""Kernel-scale IR: each pass runs on a 3,000-deep let chain inside a loop (far past Python's
recursion limit), in time that grows about linearly with the depth."""
import sys
import time

import pytest

from kdd.core.ir import For, Group, Let, Store, count_nodes, seq, var
from kdd.core.ir.types import s32
from kdd.core.passes.kernel_pipeline import KERNEL_PASSES
from kdd.core.passes.simplify_pass import simplify_kernel

DEPTH = 3_000
OPTIONS = {"target": "xehpg", "reg_bytes": 32, "regs": 256, "var_ranges": (("thread_id0", 0, 7),)}
# The simplifier has its own scale tests (tests/core/ir); here every other pass is timed.
PASSES = [p for p in KERNEL_PASSES if p.fn is not simplify_kernel]


def chain_kernel(depth: int):
    k, t = var("k"), var("thread_id0")
    vs = [var(f"v{i}") for i in range(depth)]
    out = var("dst", s32)
    body = seq(*(Store.make(out, vs[i] * 4 + k * 64, vs[i]) for i in range(0, depth, max(1, depth // 50))))
    for i in reversed(range(depth)):
        body = Let.make(vs[i], (vs[i - 1] if i else t) * 3 + (k + i) % 7, body)
    return Group.make("kernel", For.make(k, 0, 4, body, unroll=2))


def test_the_chain_is_deeper_than_the_recursion_limit():
    assert DEPTH > 2 * sys.getrecursionlimit()


@pytest.mark.slow
@pytest.mark.parametrize("p", PASSES, ids=[p.name for p in PASSES])
def test_pass_handles_a_deep_let_chain_in_about_linear_time(p):
    def timed(ir):
        start = time.perf_counter()
        out = p.fn(ir, OPTIONS)
        return out[0] if p.notes else out, time.perf_counter() - start

    big = chain_kernel(DEPTH)
    out, t_big = timed(big)
    assert count_nodes(out) >= DEPTH
    _, t_small = timed(chain_kernel(DEPTH // 4))
    assert t_big < 8 * t_small + 0.5  # 4x the size: well under quadratic, with room for a busy machine
