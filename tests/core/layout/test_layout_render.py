"""Text renderings: CuTe form, offset tables, hover text and nested-layout thread grids."""
import re

import pytest
from hypothesis import given, settings

from kdd.core.ir.types import f16, f32
from kdd.core.layout import (
    Block, Layout, NestedLayout, cute, describe, lane_grid, outer_grids, parse_layout, slice_table,
)
from layout_strategies import strided_layouts

ACT4 = ("mb", "ic", "ih", "iw")


def test_cute_seed_layout():
    layout = parse_layout("NChw32n32c", (128, 64, 7, 7), f16, dim_names=ACT4)
    assert cute(layout) == "((32,4),(32,2),7,7):((32,100352),(1,50176),7168,1024)"


def test_cute_unblocked_dim_and_offset():
    layout = Layout(f32, (4, 1, 3), (Block(0, 4, 1), Block(2, 3, 4)), offset=7)
    assert cute(layout) == "7 + (4,1,3):(1,0,4)"


@settings(max_examples=300, deadline=None)
@given(strided_layouts())
def test_cute_text_rebuilds_the_layout(layout):
    # Read the rendering back: each mode lists its dim's blocks inner to outer.
    text = cute(layout)
    offset = int(text.split(" + ")[0]) if " + " in text else 0
    shapes, strides = text.split(" + ")[-1].split(":")
    modes = lambda s: re.findall(r"\([\d,]+\)|\d+", s[1:-1])
    ints = lambda m: [int(v) for v in m.strip("()").split(",")]
    rebuilt = {}
    for d, (shape, stride) in enumerate(zip(modes(shapes), modes(strides))):
        rebuilt[d] = list(zip(ints(shape), ints(stride)))
    assert offset == layout.offset
    for d in range(layout.ndims):
        assert rebuilt[d] == [(b.size, b.stride) for b in layout.blocks if b.dim == d]


def test_slice_table_nhwc_channels_by_width():
    layout = parse_layout("nhwc", (2, 3, 4, 5), f16, dim_names=ACT4)
    table = slice_table(layout, rows=3, cols=1, at=(1, 0, 2, 0), dim_names=ACT4)
    assert table.splitlines() == [
        "| iw\\ic | 0 | 1 | 2 |",
        "| --- | --- | --- | --- |",
        "| 0 | 90 | 91 | 92 |",  # n=1, h=2: 1*60 + 2*15, then 3 per w and 1 per c
        "| 1 | 93 | 94 | 95 |",
        "| 2 | 96 | 97 | 98 |",
        "| 3 | 99 | 100 | 101 |",
        "| 4 | 102 | 103 | 104 |",
    ]


def test_slice_table_clips_and_single_row():
    layout = parse_layout("ab", (10, 12), f32)
    lines = slice_table(layout, 0, 1, limit=2).splitlines()
    assert lines == [
        "| a\\b | 0 | 1 | … |",
        "| --- | --- | --- | --- |",
        "| 0 | 0 | 1 | … |",
        "| 1 | 12 | 13 | … |",
        "| … | … | … | … |",
    ]
    assert slice_table(layout, None, 0, at=(0, 3), limit=3).splitlines()[2] == "|  | 3 | 15 | 27 | … |"
    with pytest.raises(ValueError):
        slice_table(layout, 1, 1)


def test_describe_seed_layout():
    layout = parse_layout("NChw32n32c", (128, 64, 7, 7), f16, dim_names=ACT4)
    text = describe(layout, ACT4)
    assert text.startswith("**NChw32n32c** f16 128x64x7x7\n")
    assert "`4n2c7h7w32n32c`" in text
    assert "802816 bytes, dense" in text
    # Columns walk the innermost block's dim (ic), rows the next one (mb).
    assert "| mb\\ic | 0 | 1 |" in text and "| 1 | 32 | 33 |" in text


def test_describe_padded_custom_layout():
    layout = Layout(f32, (3, 5), (Block(1, 8, 1), Block(0, 3, 10)))
    text = describe(layout)
    assert text.startswith("**custom layout** f32 3x5 (padded 3x8)")
    assert "with holes or overlaps" in text


def test_seed_outer_picture():
    layout = NestedLayout([1, 1], [1, 1], [2, 1], [2, 5], [1, 1], [0, 0], [5, 1])
    assert outer_grids(layout) == (
        "outer = 0,0 :\n[0 1 2 3 4]\n[5 6 7 8 9]\n\n"
        "outer = 1,0 :\n[0 1 2 3 4]\n[5 6 7 8 9]"
    )
    assert lane_grid(layout) == "[0 1 2 3 4]\n[5 6 7 8 9]\n[0 1 2 3 4]\n[5 6 7 8 9]"


def test_lane_grid_subgroups_elements_and_clipping():
    seed = NestedLayout([2, 1], [2, 4], [1, 1], [16, 4], [1, 4], [1, 0], [1, 16])
    lines = lane_grid(seed, limit=6).splitlines()
    assert lines[0] == "[ 0  0  0  0 16 16 …]"
    assert lines[1] == "[ 1  1  1  1 17 17 …]"
    assert lines[-1] == "…" and len(lines) == 7
    folded = NestedLayout([4, 2], [1, 1], [1, 1], [1, 1], [1, 1], [1, 4], [0, 0])
    assert lane_grid(folded, "subgroup") == "[0 4]\n[1 5]\n[2 6]\n[3 7]"
    assert lane_grid(folded, "subgroup", num_subgroups=4) == "[0 0]\n[1 1]\n[2 2]\n[3 3]"
    assert lane_grid(folded, "element", num_subgroups=4) == "[0 1]\n[0 1]\n[0 1]\n[0 1]"
    with pytest.raises(ValueError):
        lane_grid(folded, "lane")
