"""sm_90 register layouts: mma fragments match the PTX ISA tables, and every allocation's lane
distribution (a NestedLayout) places each element where its register layout puts it."""
from __future__ import annotations

import pytest

from builder_cases import problem
from kdd.core.builder import build_kernel
from kdd.core.builder.fma import make_fma
from kdd.core.builder.lanes import nested_of
from kdd.core.ir import Alloc, walk
from kdd.core.ir.types import f16, f32, s8, s32
from kdd.core.layout.nested import NestedLayout
from kdd.core.problem import parse_shape
from kdd.core.targets import SM90

REG = 128  # bytes of one sm_90 register row: 32 lanes x 32 bits


def ptx_fragment(operand: str, a_type, i: int, lane: int) -> tuple[int, int]:
    """(row, col) of element ``i`` held by ``lane`` in the PTX ISA's mma.m16n8k16/k32 fragment tables."""
    group, tig = lane >> 2, lane % 4
    if a_type.size == 2:  # m16n8k16 .f16/.bf16
        if operand == "a":
            return group + 8 * ((i >> 1) & 1), tig * 2 + (i & 1) + 8 * (i >= 4)
        if operand == "b":
            return tig * 2 + (i & 1) + 8 * (i >= 2), group
    else:  # m16n8k32 .s8
        if operand == "a":
            return group + 8 * ((i >> 2) & 1), tig * 4 + (i & 3) + 16 * (i >= 8)
        if operand == "b":
            return tig * 4 + (i & 3) + 16 * (i >= 4), group
    return group + 8 * (i >= 2), tig * 2 + (i & 1)  # c/d, f32 or s32


@pytest.mark.parametrize("a_type, acc", [(f16, f32), (s8, s32)])
@pytest.mark.parametrize("operand", ["a", "b", "c"])
def test_mma_fragment_layouts_follow_the_ptx_tables(a_type, acc, operand):
    kind = make_fma("mma", SM90, 32, a_type, a_type, acc, 16)  # fragments from the target's data
    k = kind.kfrag
    layout = {"a": lambda: kind.a_layout(1, 16, k, True), "b": lambda: kind.b_layout(1, k, 8),
              "c": lambda: kind.c_layout(1, 16, 8)}[operand]()
    t = acc if operand == "c" else a_type
    per_reg = 4 // t.size
    count = {"a": 4, "b": 2, "c": 4}[operand] * per_reg
    for lane in range(32):
        for i in range(count):
            row, col = ptx_fragment(operand, a_type, i, lane)
            byte = layout.offset_of((0, row, col)) * t.size
            assert byte == (i // per_reg) * REG + lane * 4 + (i % per_reg) * t.size, (operand, lane, i)


@pytest.mark.parametrize("a_type, acc", [(f16, f32), (s8, s32)])
def test_mma_fragments_have_two_dimensional_lane_layouts(a_type, acc):
    kind = make_fma("mma", SM90, 32, a_type, a_type, acc, 16)  # fragments from the target's data
    k = kind.kfrag
    for operand, layout in (("a", kind.a_layout(1, 16, k, True)), ("b", kind.b_layout(1, k, 8)),
                            ("c", kind.c_layout(1, 16, 8))):
        nested, order = nested_of(layout, REG)
        assert nested.thread_count == 32
        for lane in range(32):
            held = nested.thread_indices(0, lane)
            for i, index in enumerate(held):
                logical = [0, 0, 0]
                for d, x in zip(order, index):
                    logical[d] = int(x)
                assert tuple(logical[1:]) == ptx_fragment(operand, a_type, i, lane), (operand, lane, i)


@pytest.mark.parametrize("types", ["f32", "f16", "s8", "bf16"])
@pytest.mark.parametrize("prop", ["fwd", "bwd_d", "bwd_w"])
def test_every_sm90_register_allocation_carries_its_lanes(types, prop):
    kernel = build_kernel(problem(parse_shape("mb2ic16ih6oc16oh6kh3ph1"), prop, types), None, "sm_90")
    grf = [n for n in walk(kernel.body) if isinstance(n, Alloc) and n.kind.value == "grf"]
    assert grf
    for alloc in grf:
        attrs = dict(alloc.attrs)
        nested, names = attrs["lanes"], attrs["lane_dims"]
        assert isinstance(nested, NestedLayout) and len(names) == nested.rank
        assert nested.thread_count <= 32
        if names == ("word",):  # the raw 32-bit words: every word of every register row
            assert nested.shape == (alloc.size // 4,)
        else:
            assert set(names) <= {"b", "m", "n", "k"}


@pytest.mark.parametrize("types", ["f16", "s8"])
def test_mma_operands_are_distributed_over_the_whole_warp(types):
    kernel = build_kernel(problem(parse_shape("mb2ic32ih6oc32oh6kh3ph1"), "fwd", types), None, "sm_90")
    lanes = {n.buf.name: dict(n.attrs) for n in walk(kernel.body) if isinstance(n, Alloc)}
    for name, dims in (("a", ("b", "m", "k")), ("b", ("b", "k", "n")), ("c_acc", ("b", "m", "n"))):
        assert set(lanes[name]["lane_dims"]) == set(dims)
        assert lanes[name]["lanes"].thread_count == 32


def test_xe_allocations_carry_no_lanes():
    kernel = build_kernel(problem(parse_shape("mb2ic16ih6oc16oh6kh3ph1"), "fwd", "f16"), None, "xehpg")
    assert all(n.attrs == () for n in walk(kernel.body) if isinstance(n, Alloc))
