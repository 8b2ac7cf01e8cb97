"""The tuning space (:func:`kdd.core.config.search.search_space`) and the tuned sm_90 examples it chose."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from kdd.core.config import default_config, estimate_budget, resolve_config
from kdd.core.config.search import search_space
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
        assert re.search(r"ratio \d\.\d{3}", text), path
