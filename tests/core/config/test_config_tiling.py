"""Derived tiling checked against a brute-force walk of the blocked iteration space."""
from collections import Counter
from itertools import product
from math import prod

from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.config import KernelConfig, Tile, derive_tiling
from kdd.core.config.tiling import group_count, tiling_of
from kdd.core.problem import problem_from_text

SMALL = ["m7n5k9", "m4n8k2", "2x3x5:2x5x4", "mb2ic4ih5oc3kh3ph1", "g2mb1ic4iw6oc2kw3pw1"]


@st.composite
def small_cases(draw):
    text = draw(st.sampled_from(SMALL))
    prop = "fwd" if text.startswith("m") or "x" in text else draw(st.sampled_from(["fwd", "bwd_d", "bwd_w"]))
    problem = problem_from_text(text, prop=prop)
    gemm = problem.gemm_dims()
    tiles = {"iter": {}, "tg": {}, "loop": {}}
    for role in "bmnk":
        for name, size in getattr(gemm, role):
            for knob in tiles:
                if draw(st.booleans()):
                    tiles[knob][name] = draw(st.integers(1, size + 2))
    config = KernelConfig(**{k: Tile.of(v) for k, v in tiles.items()})
    return problem, config, tiles


def _walk(dims, tiles):
    """Every (group, thread, loop step, element) of each dim; returns what each C/K point got."""
    per_dim = []
    for name, size in dims:
        i, t, lp = (tiles[k].get(name, 1) for k in ("iter", "tg", "loop"))
        block = i * t * lp
        groups = 0
        while groups * block < size:
            groups += 1
        coords = [(g, th, step, g * block + th * i * lp + step * i + e)
                  for g in range(groups) for th in range(t) for step in range(lp) for e in range(i)]
        per_dim.append((groups, t, lp, i, size, coords))
    return per_dim


@settings(max_examples=250, deadline=None)
@given(small_cases())
def test_tiling_matches_brute_force_walk(case):
    problem, config, tiles = case
    gemm = problem.gemm_dims()
    tiling = derive_tiling(problem, config)
    walked = {role: _walk(getattr(gemm, role), tiles) for role in "bmnk"}
    for role, dims in walked.items():
        for groups, t, lp, i, size, coords in dims:
            # The walk visits every padded index exactly once, and real ones are among them.
            hits = Counter(c[3] for c in coords)
            assert set(hits) == set(range(groups * t * lp * i)) and set(hits.values()) == {1}
            assert set(range(size)) <= set(hits)

    def total(roles, k):
        return prod(d[k] for r in roles for d in walked[r])

    assert tiling.kernel_grid == (total("n", 0), total("m", 0), total("bk", 0))
    assert tiling.tg_grid == (total("n", 1), total("m", 1), total("bk", 1))
    assert (tiling.m_thread, tiling.n_thread, tiling.k_iter) == (total("m", 3), total("n", 3), total("k", 3))
    assert tiling.k_iters == total("k", 2)
    assert (tiling.b_thread, tiling.k_slices) == (total("b", 3), total("k", 1))
    assert (tiling.m_group, tiling.n_group) == (total("m", 3) * total("m", 1), total("n", 3) * total("n", 1))
    assert tiling.k_group == total("k", 3) * total("k", 1) * total("k", 2)
    # Tilings are remembered by what the tiles mean: the same tiles written backwards with size-1 entries
    # give the same tiling.
    backwards = {k: Tile(tuple(reversed(tuple(v.items()) + (("unnamed", 1),)))) for k, v in tiles.items()}
    assert tiling_of(problem, backwards["iter"], backwards["tg"], backwards["loop"]) == tiling
    assert group_count(problem, *(Tile.of(tiles[k]) for k in ("iter", "tg", "loop"))) == tiling.groups
    assert tiling.groups * tiling.threads_per_group == total("bmnk", 0) * total("bmnk", 1)
    padded = prod(len(d[5]) for r in "bmnk" for d in walked[r])
    assert abs(tiling.efficiency - gemm.B * gemm.M * gemm.N * gemm.K / padded) < 1e-12
    assert tiling.split_k == (total("k", 0) > 1)
    # The C points all threads of all groups compute are the padded M x N, each once per K split.
    c_cells = Counter(tuple(c[3] for c in combo) for combo in product(*(d[5] for d in walked["m"] + walked["n"])))
    assert len(c_cells) == prod(d.padded for d in tiling.dims if d.role in "mn")


def test_roles_follow_the_problem():
    p = problem_from_text("mb32ic64ih56oc64oh56kh3ph1", prop="bwd_w")
    t = derive_tiling(p, KernelConfig(iter=Tile.parse("ic16oc32mb8"), tg=Tile.parse("ic2oc4"),
                                      loop=Tile.parse("mb4oh56ow56")))
    assert [d.name for d in t.role("m")] == ["ic", "kd", "kh", "kw"]
    assert (t.m_group, t.n_group, t.k_group, t.k_iters) == (32, 128, 32 * 56 * 56, 4 * 56 * 56)
    assert t.tg_grid == (4, 2, 1) and t.kernel_grid == (1, 2 * 3 * 3, 1)


def test_unset_tiles_block_nothing():
    p = problem_from_text("m6n4k3")
    t = derive_tiling(p, KernelConfig())
    assert t.kernel_grid == (4, 6, 3) and t.threads_per_group == 1 and t.split_k
