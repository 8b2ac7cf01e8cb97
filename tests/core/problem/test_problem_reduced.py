"""The check shape (``kdd.core.problem.reduced``): every benchdnn descriptor reduced under the bound, keeping
kernel sizes, strides, paddings, dilations, tails and two trips of every loop, for default units and for
random config tiles. The oracle recounts blocks and trips from the sizes, independently of the rungs."""
from __future__ import annotations

from dataclasses import replace
from math import ceil

import pytest
from hypothesis import given, settings, strategies as st

from benchdnn_data import BENCHDNN, shape_lines
from kdd.core.problem import parse_shape, problem_from_text
from kdd.core.problem.gemm_shape import GemmShape
from kdd.core.problem.reduced import (BATCH, CHANNELS, GEMM, MAX_CHECK_MACS, MINIBATCH, REDUCED_MACS, SPATIAL, Block,
                                      check_macs, reduce_problem)

DESCRIPTORS = [line for folder in ("conv", "matmul") for f in sorted((BENCHDNN / folder).iterdir())
               for line in shape_lines(f"{folder}/{f.name}")]


def _sizes(shape) -> dict[str, int]:
    """The reducible sizes by the tiling's dim names (channels per group)."""
    if isinstance(shape, GemmShape):
        return {**{f"b{i}": b for i, b in enumerate(shape.batch)}, "m": shape.m, "n": shape.n, "k": shape.k}
    return {"g": shape.g, "mb": shape.mb, "ic": shape.ic // shape.g, "oc": shape.oc // shape.g,
            **{f"o{a}": getattr(shape, f"o{a}") for a in shape.used_axes}}


def _default(name: str) -> Block:
    unit = {"g": MINIBATCH, "mb": MINIBATCH, "ic": CHANNELS, "oc": CHANNELS, "m": GEMM, "n": GEMM, "k": GEMM}.get(
        name, BATCH if name.startswith("b") else SPATIAL)
    return Block(unit, unit)


def _assert_keeps_the_kernel(problem, blocks: dict[str, Block]):
    reduction = reduce_problem(problem, blocks)
    full, small = problem.shape, reduction.shape
    assert check_macs(replace(problem, shape=small)) <= REDUCED_MACS <= MAX_CHECK_MACS
    if not isinstance(full, GemmShape):
        for a in full.used_axes:
            f, r = full.axis(a), small.axis(a)
            assert (f.k, f.s, f.pl, f.pr, f.d) == (r.k, r.s, r.pl, r.pr, r.d), a
            assert r.i >= 1 and r.o >= 1
    before, after = _sizes(full), _sizes(small)
    for name, d in before.items():
        n = after[name]
        assert 1 <= n <= d
        if n == d or name in reduction.short:
            continue
        blk = blocks.get(name) or _default(name)
        if name in ("od", "oh", "ow") and name in blocks:
            blk = Block(max(blk.block, SPATIAL), blk.trip)
        # Kept structure: as many grid blocks as the full size up to two, the same tail, and within a
        # group two loop trips where the full size runs two.
        assert min(ceil(n / blk.block), 2) == min(ceil(d / blk.block), 2), (name, d, n, blk)
        if ceil(d / blk.block) >= 2:
            assert (n - 1) % blk.block == (d - 1) % blk.block, (name, d, n, blk)
        assert min(ceil(min(n, blk.block) / blk.trip), 2) == min(ceil(min(d, blk.block) / blk.trip), 2), (name, d, n)
    assert {c.split()[0] for c in reduction.changes} == {k for k in before if before[k] != after[k]}
    assert reduce_problem(replace(problem, shape=small), blocks).shape == small   # a check shape stays itself


@pytest.mark.parametrize("text", DESCRIPTORS)
def test_every_benchdnn_descriptor_reduces_under_the_bound_keeping_the_kernel(text):
    _assert_keeps_the_kernel(problem_from_text(text), {})


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(DESCRIPTORS), st.data())
def test_reduction_by_config_tiles_keeps_blocks_tails_and_two_loop_trips(text, data):
    problem = problem_from_text(text)
    blocks = {}
    for name in _sizes(problem.shape):
        trip = data.draw(st.sampled_from([1, 2, 4, 8, 16, 32, 64]))
        loop = data.draw(st.sampled_from([1, 1, 2, 4, 16, 2048]))
        blocks[name] = Block(trip * loop, trip)
    _assert_keeps_the_kernel(problem, blocks)


def test_the_k_loop_keeps_two_trips_and_the_message_lists_what_was_reduced():
    """A GEMM with K = 65536 under l=k2048 (32768 of K a group): two K groups would be over the bound for
    this M and N, so K keeps two trips of the loop, and the message says the grid split was cut."""
    problem = problem_from_text("m1024n1024k65536")
    reduction = reduce_problem(problem, {"m": Block(64, 64), "n": Block(64, 64), "k": Block(32768, 16)})
    assert reduction.shape.k == 32 and (reduction.shape.m, reduction.shape.n) == (128, 128)
    assert reduction.describe() == ("reduced m 1024 -> 128, n 1024 -> 128, k 65536 -> 32 (kernel sizes, strides, "
                                    "padding, dilation and tails kept; cut further to fit the bound: k (fewer thread "
                                    "groups or loop trips than the full shape, or another tail))")
    two_groups = reduce_problem(problem_from_text("m64n64k65536"), {"k": Block(4096, 16)}, bound=MAX_CHECK_MACS)
    assert two_groups.shape.k == 8192 and two_groups.describe().endswith("two trips of every loop the full shape runs)")
    small = reduce_problem(problem_from_text("m64n64k65536"), {"k": Block(32768, 16)})
    assert small.shape.k == 32 and small.short == ("k",)    # two K groups would be the full problem: said


def test_the_googlenet_and_i3d_shapes_the_issue_found_over_the_bound_now_fit():
    for text in ("mb22ic832ih7oc384oh7kh1ph0", "mb16ic256id16ih28iw28oc256od16oh28ow28kd3kh3kw3pd1ph1pw1"):
        problem = problem_from_text(text)
        assert check_macs(replace(problem, shape=reduce_problem(problem).shape)) <= REDUCED_MACS
    assert parse_shape("mb22ic832ih7oc384oh7kh1ph0").mb == 22
