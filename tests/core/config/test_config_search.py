"""The tuning space (:func:`kdd.core.config.search.search_space`) and the tuned sm_90 examples it chose."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from kdd.core.config import default_config, estimate_budget, resolve_config
from kdd.core.config.line import parse_config_line
from kdd.core.config.search import search_space, split_k_variants, tuning_space
from kdd.core.targets import TARGETS
from kdd.core.config.tiling import derive_tiling
from kdd.core.spec import load_spec

ROOT = Path(__file__).resolve().parents[3]
TUNED = sorted((ROOT / "examples" / "sm90_tuned").glob("*.kernel.toml"))


@pytest.mark.parametrize("name", ["sm90_gemm.kernel.toml", "sm90_conv.kernel.toml"])
def test_search_space_starts_at_the_default_and_varies_tiles_groups_and_stages(name):
    path = ROOT / "examples" / name
    spec, _ = load_spec(path.read_text(), str(path))
    space = search_space(spec.problem, spec.target)
    lines = [c.line() for c in space]
    assert lines[0] == default_config(spec.problem, spec.target).line()
    assert len(set(lines)) == len(lines) >= 4
    for cfg in space:
        assert cfg.is_complete and not estimate_budget(spec.problem, cfg, spec.target).issues()
    assert len({str(c.iter) for c in space}) >= 2 and len({str(c.tg) for c in space}) >= 2
    assert len({c.slm.bufs for c in space}) >= 2


def test_tuned_examples_resolve_to_the_config_their_comment_times():
    assert len(TUNED) == 22         # every ResNet-50 fwd layer and both GEMMs
    for path in TUNED:
        text = path.read_text()
        spec, _ = load_spec(text, str(path))
        assert spec is not None and spec.target.name == "sm_90", path
        cfg = resolve_config(spec.problem, spec.target, spec.config)
        line = re.search(r'^line = "([^"]*)"', text, re.M).group(1)
        assert all(kv in cfg.line().split() for kv in line.split()), path
        assert re.search(r"\d+\.\d us", text), path            # the time it was chosen for, and on which card
        assert re.search(r"NVIDIA H[12]00", text), path


def test_tuner_splits_k_of_configs_with_few_groups_and_leaves_the_others():
    path = ROOT / "examples" / "sm90_tuned" / "res5a_branch2b.kernel.toml"
    spec, _ = load_spec(path.read_text(), str(path))
    line = "fma=mma l=ic16kh3kw3 T=oc2 i=mb32oc128ic32 s=x2.a"     # M32 x N256 groups over the whole K
    whole = resolve_config(spec.problem, spec.target, parse_config_line(line))
    base = derive_tiling(spec.problem, whole)
    assert not base.split_k and base.groups == 98
    variants = split_k_variants(spec.problem, whole, 264)
    assert [str(v.loop) for v in variants] == ["ic8kh3kw3", "ic4kh3kw3"]
    for parts, cfg in zip((2, 4), variants):
        tiling = derive_tiling(spec.problem, cfg)
        assert tiling.split_k and tiling.groups == parts * base.groups
        assert {d.name: d.grid for d in tiling.role("k")}["ic"] == parts
    assert split_k_variants(spec.problem, whole, 98) == []       # enough groups already
    assert split_k_variants(spec.problem, variants[0], 264) == []  # already split


def test_tuning_space_adds_split_k_where_the_grid_is_small():
    path = ROOT / "examples" / "sm90_tuned" / "res5a_branch2b.kernel.toml"
    spec, _ = load_spec(path.read_text(), str(path))
    space = tuning_space(spec.problem, spec.target)
    base = search_space(spec.problem, spec.target, 2)
    assert space[:len(base)] == base and len({c.line() for c in space}) == len(space)
    below = 2 * TARGETS["sm_90"].devices[0].cores
    split = [c for c in base if derive_tiling(spec.problem, c).groups < below]
    assert split and len(space) > len(base)
    assert all(derive_tiling(spec.problem, c).split_k for c in space[len(base):])
