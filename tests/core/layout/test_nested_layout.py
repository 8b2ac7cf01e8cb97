"""Nested layouts: seed 001's examples and ownership properties against brute force."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.layout import NestedLayout


def seed_full_example():
    return NestedLayout(
        subgroup_tile=[2, 1], batch_tile=[2, 4], outer_tile=[1, 1], thread_tile=[16, 4],
        element_tile=[1, 4], subgroup_strides=[1, 0], thread_strides=[1, 16],
    )


def grid_layout(subgroup_tile, subgroup_strides):
    ones = [1] * len(subgroup_tile)
    return NestedLayout(subgroup_tile, ones, ones, ones, ones, subgroup_strides, [0] * len(ones))


def test_seed_subgroup_order_and_fold():
    layout = grid_layout([4, 2], [1, 4])
    assert layout.subgroup_grid().ravel().tolist() == [0, 4, 1, 5, 2, 6, 3, 7]
    assert layout.subgroup_grid(4).ravel().tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert [layout.virtual_subgroup_ids(s) for s in (0, 4, 1, 5)] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    # Folded onto 4 subgroups, each physical subgroup holds two elements, one per round.
    sg, _ = layout.lane_of(None, num_subgroups=4)
    assert sg.tolist() == [[0, 0], [1, 1], [2, 2], [3, 3]]
    assert layout.element_of(None, num_subgroups=4).tolist() == [[0, 1]] * 4
    assert layout.thread_indices(1, 0, num_subgroups=4).tolist() == [[1, 0], [1, 1]]


def test_seed_thread_picture_duplicated_by_outer():
    layout = NestedLayout([1, 1], [1, 1], [2, 1], [2, 5], [1, 1], [0, 0], [5, 1])
    assert layout.shape == (4, 5)
    _, thr = layout.lane_of()
    assert thr.tolist() == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]] * 2
    assert layout.thread_indices(0, 7).tolist() == [[1, 2], [3, 2]]


def test_seed_full_example_thread_vectors():
    layout = seed_full_example()
    assert str(layout) == (
        "nested_layout<subgroup_tile = [2, 1], batch_tile = [2, 4], outer_tile = [1, 1], "
        "thread_tile = [16, 4], element_tile = [1, 4], subgroup_strides = [1, 0], thread_strides = [1, 16]>"
    )
    assert layout.shape == (64, 64)
    assert layout.vector_shape == (2, 16)
    cols0 = [c for base in (0, 16, 32, 48) for c in range(base, base + 4)]

    def held(sg, thr):
        idx = layout.thread_indices(sg, thr)
        return sorted({int(r) for r in idx[:, 0]}), sorted({int(c) for c in idx[:, 1]}), len(idx)

    assert held(0, 0) == ([0, 16], cols0, 32)
    assert held(0, 1) == ([1, 17], cols0, 32)
    assert held(0, 16) == ([0, 16], [c + 4 for c in cols0], 32)
    assert held(1, 0) == ([32, 48], cols0, 32)
    # Four hardware subgroups: 2 and 3 repeat 0 and 1 (subgroup_tile covers 2).
    assert np.array_equal(layout.thread_indices(2, 5), layout.thread_indices(0, 5))
    assert np.array_equal(layout.thread_indices(3, 5), layout.thread_indices(1, 5))
    # Register order: batch-major, then element; rows of batch 0 first.
    assert layout.thread_indices(0, 0)[:6].tolist() == [[0, 0], [0, 1], [0, 2], [0, 3], [0, 16], [0, 17]]


def test_seed_full_example_matches_conceptual_slice():
    # vector<[2x1]x[2x4]x[1x1]x[16x4]x[1x4]>[s, :, :, :, :, t0, t1, :, :] per seed 001.
    layout = seed_full_example()
    full = np.arange(64 * 64).reshape(64, 64)
    split = full.reshape(five_level_shape(layout))
    rank = 2
    view = split.transpose([d * 5 + k for k in range(5) for d in range(rank)])
    for thread, (t0, t1) in [(0, (0, 0)), (1, (1, 0)), (16, (0, 1)), (63, (15, 3))]:
        expected = view[1, 0, :, :, :, :, t0, t1, :, :].ravel()
        got = layout.thread_indices(1, thread)
        assert np.array_equal(got[:, 0] * 64 + got[:, 1], expected)


def test_invalid_nested_layouts():
    with pytest.raises(ValueError, match="stride 0"):
        NestedLayout([2], [1], [1], [1], [1], [0], [0])
    with pytest.raises(ValueError, match="overlap"):
        NestedLayout([1, 1], [1, 1], [1, 1], [2, 2], [1, 1], [0, 0], [1, 1])
    with pytest.raises(ValueError, match="rank"):
        NestedLayout([1], [1, 1], [1], [1], [1], [0], [0])
    with pytest.raises(ValueError, match="cannot fold"):
        grid_layout([3], [1]).lane_of(None, num_subgroups=2)
    with pytest.raises(IndexError):
        grid_layout([3], [1]).lane_of(np.array([[3]]))


TILES = st.sampled_from([1, 1, 2, 3])


@st.composite
def level_strides(draw, tile, gaps):
    """Non-overlapping strides for ``tile``: dims in random order, each a multiple of the previous span."""
    strides = [0] * len(tile)
    need = 1
    for d in draw(st.permutations(range(len(tile)))):
        if tile[d] == 1:
            strides[d] = draw(st.sampled_from([0, need]))
            continue
        strides[d] = need * (draw(st.sampled_from([1, 2])) if gaps else 1)
        need = strides[d] * tile[d]
    return strides


@st.composite
def nested_layouts(draw, gaps=True):
    rank = draw(st.integers(1, 3))
    tiles = [[draw(TILES) for _ in range(rank)] for _ in range(5)]
    if math.prod(math.prod(t) for t in tiles) > 2048:
        tiles = [[1] * rank] + tiles[1:4] + [[1] * rank]
    sg_strides = draw(level_strides(tiles[0], gaps))
    thr_strides = draw(level_strides(tiles[3], gaps))
    return NestedLayout(*tiles, sg_strides, thr_strides)


def five_level_shape(layout: NestedLayout):
    """Per dim (outer dims first), its (subgroup, batch, outer, thread, element) tiles, flattened."""
    levels = (layout.subgroup_tile, layout.batch_tile, layout.outer_tile,
              layout.thread_tile, layout.element_tile)
    return [level[d] for d in range(layout.rank) for level in levels]


def brute_force_owner(layout: NestedLayout):
    """Smallest (subgroup, thread) whose virtual ids (seed formula) match each index's digits."""
    shape5 = five_level_shape(layout)
    digits = np.unravel_index(np.arange(math.prod(layout.shape)), shape5)
    digit = lambda d, k: digits[d * 5 + k]  # level k of dim d
    n = math.prod(layout.shape)
    owner_sg = np.full(n, -1)
    owner_thr = np.full(n, -1)
    for sg in reversed(range(layout.subgroup_count)):
        v = layout.virtual_subgroup_ids(sg)
        match = np.all([digit(d, 0) == v[d] for d in range(layout.rank)], axis=0)
        owner_sg[match] = sg
    for thr in reversed(range(layout.thread_count)):
        v = layout.virtual_thread_ids(thr)
        match = np.all([digit(d, 3) == v[d] for d in range(layout.rank)], axis=0)
        owner_thr[match] = thr
    return owner_sg.reshape(layout.shape), owner_thr.reshape(layout.shape)


@settings(max_examples=300, deadline=None)
@given(nested_layouts())
def test_every_index_has_exactly_one_canonical_owner(layout):
    sg, thr = layout.lane_of()
    elem = layout.element_of()
    assert np.array_equal(np.stack([sg, thr]), np.stack(brute_force_owner(layout)))
    triples = set(zip(sg.ravel().tolist(), thr.ravel().tolist(), elem.ravel().tolist()))
    assert len(triples) == math.prod(layout.shape)
    assert elem.min() == 0 and elem.max() == layout.elements_per_thread - 1
    assert sg.max() < layout.subgroup_count and thr.max() < layout.thread_count


@settings(max_examples=300, deadline=None)
@given(nested_layouts())
def test_thread_indices_inverts_lane_of(layout):
    for s in np.unique(layout.subgroup_grid()):
        for t in np.unique(layout.thread_grid()):
            idx = layout.thread_indices(int(s), int(t))
            assert idx.shape == (layout.elements_per_thread, layout.rank)
            sg, thr = layout.lane_of(idx)
            assert (sg == s).all() and (thr == t).all()
            assert layout.element_of(idx).tolist() == list(range(layout.elements_per_thread))


@settings(max_examples=300, deadline=None)
@given(nested_layouts(gaps=False), st.data())
def test_dense_layouts_fold_and_replicate(layout, data):
    # Dense strides: owners fill the whole (subgroup, thread, element) box.
    assert layout.subgroup_count == math.prod(layout.subgroup_tile)
    assert layout.thread_count == math.prod(layout.thread_tile)
    values = np.arange(math.prod(layout.shape)).reshape(layout.shape)
    regs = layout.distribute(values, num_threads=2 * layout.thread_count)
    assert regs.shape == (layout.subgroup_count, 2 * layout.thread_count, layout.elements_per_thread)
    assert np.array_equal(regs[:, layout.thread_count:], regs[:, : layout.thread_count])  # replicas
    assert np.array_equal(layout.collect(regs), values)
    divisors = [k for k in range(1, layout.subgroup_count + 1) if layout.subgroup_count % k == 0]
    num = data.draw(st.sampled_from(divisors))
    folded = layout.distribute(values, num_subgroups=num)
    rounds = layout.subgroup_count // num
    assert folded.shape == (num, layout.thread_count, rounds * layout.elements_per_thread)
    assert sorted(folded.ravel().tolist()) == values.ravel().tolist()
    assert np.array_equal(layout.collect(folded, num_subgroups=num), values)
