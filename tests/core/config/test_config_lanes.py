"""Useful multiply lanes (kdd.core.config.lanes): depthwise defaults keep at least half, and a config that does
not is warned about at the knob that wastes them, saying why."""
from __future__ import annotations

from dataclasses import replace
from math import prod
from pathlib import Path

import pytest
from benchdnn_data import shape_lines
from hypothesis import given
from hypothesis import strategies as st

from kdd.core.config import (KernelConfig, Tile, default_config, derive_tiling, parse_config_line, resolve_config,
                             validate_config)
from kdd.core.config.lanes import MIN_USEFUL, instruction_shape, lane_bound, lane_use
from kdd.core.config.tiling import mad_over_batch
from kdd.core.problem import problem_from_text
from kdd.core.problem.conv_shape import parse_conv_shape
from kdd.core.problem.lookup_entry import LookupEntry
from kdd.core.spec import Severity, load_spec
from kdd.core.targets import TARGETS

LOOKUP = Path(__file__).resolve().parents[2] / "data" / "onednn" / "conv_lookup_table.txt"


def _is_depthwise(text: str) -> bool:
    s = parse_conv_shape(text)
    return s.g > 1 and s.ic == s.oc == s.g


def depthwise_shapes() -> list[str]:
    """benchdnn's depthwise lines (shapes_basic's ``g16ic16oc16...``, ``g17...`` tails; shapes_mobilenet has
    none: its layers are all ``g1``) and the problems of oneDNN's depthwise lookup-table lines."""
    lines = [t for name in ("shapes_basic", "shapes_mobilenet") for t in shape_lines(f"conv/{name}")
             if _is_depthwise(t)]
    for text in LOOKUP.read_text().splitlines():
        if text.strip() and not text.startswith("#"):
            entry = LookupEntry.parse(text)
            if entry.prop == "fwd" and _is_depthwise(entry.shape):
                lines.append(entry.shape)
    return sorted(set(lines))


DEPTHWISE = depthwise_shapes()


def test_the_depthwise_sample_is_what_it_claims():
    assert len(DEPTHWISE) >= 12, DEPTHWISE
    assert any("g144" in s for s in DEPTHWISE) and any("g17" in s for s in DEPTHWISE)


def _lane_warnings(problem, config, target):
    return [i for i in validate_config(problem, config, target) if "multiply lanes" in i.message]


@pytest.mark.parametrize("hw,mad", [("xehpg", "mad"), ("xehpc", "mad"), ("sm_90", "fma")])
@pytest.mark.parametrize("types", ["f16", "bf16", "f32"])
def test_depthwise_defaults_put_the_channels_in_mad_lanes(hw, mad, types):
    target = TARGETS[hw]
    for shape in DEPTHWISE:
        p = problem_from_text(shape, types=types)
        c = default_config(p, target)
        t = derive_tiling(p, c)
        use = lane_use(p, c, target)
        assert c.fma == mad and mad_over_batch(c.fma, c.simd, t), (shape, c.line())
        # kw whole in registers, the other kernel dims in the loop; the weights straight from global memory
        kw = p.shape.axis("w").k
        assert t.k_iter == kw and c.iter.get("kw") == kw and not c.slm.enabled, (shape, c.line())
        assert use.fraction >= MIN_USEFUL, (shape, c.line(), use.reason())
        assert not _lane_warnings(p, c, target), (shape, c.line())


# The defaults of c0f6f57 for this problem, before they measured lanes.
BEFORE = "fma=dpas simd=8 regs=256 l=kh3 T=ow4 i=mb32ow2oc8kw16 s=x3.b"


def test_dpas_on_a_depthwise_convolution_is_warned_at_fma_with_the_reason():
    p = problem_from_text("mb32g32ic32oc32ih112oh112kh3ph1", types="f16")
    c = resolve_config(p, TARGETS["xehpg"], parse_config_line(BEFORE))
    use = lane_use(p, c, TARGETS["xehpg"])
    assert use.fraction < 0.03  # N 1 -> 8, K 9 -> 16 (kw 3 -> 16): 1/8 * 3/16
    [issue] = _lane_warnings(p, c, TARGETS["xehpg"])
    assert issue.knob == "fma" and issue.severity == "warning"
    assert "dpas's N=8, K=16 exceeds the problem's N=1, K=9" in issue.message
    assert "oc 1 -> 8" in issue.message and "kw 3 -> 16" in issue.message
    assert 'fma = "mad" with iter over the batch dims' in issue.message


def test_a_padding_tile_is_warned_at_iter_and_the_diagnostic_sits_on_the_knob():
    text = ('[problem]\nop = "conv"\nshape = "mb2ic16ih13oc33oh13kh3ph1"\ntypes = "f32"\n[target]\nhw = "xehpg"\n'
            '[config]\nfma = "mad"\nsimd = 16\niter = "mb2ow16oc32"\n')
    spec, diagnostics = load_spec(text)
    [d] = [d for d in diagnostics if "multiply lanes" in d.message]
    assert d.severity == Severity.WARNING and "padded oc 33 -> 64 (iter)" in d.message
    assert text.splitlines()[d.range.start.line].startswith("iter")


def test_full_tiles_and_dpas_sized_problems_are_not_warned():
    p = problem_from_text("mb32ic64ih56oc64oh56kh3ph1", types="f16")
    for hw in ("xehpg", "xehpc", "sm_90"):
        c = default_config(p, TARGETS[hw])
        assert lane_use(p, c, TARGETS[hw]).fraction == 1.0 and not _lane_warnings(p, c, TARGETS[hw])


def test_a_small_n_problem_without_a_batch_keeps_the_instruction_that_wastes_least_and_says_why():
    p = problem_from_text("mb1ic1ih64oc4oh64kh3ph1", types="f16")  # oneDNN's ic1...oc4 line: N=4, K=9
    c = default_config(p, TARGETS["xehpg"])
    use = lane_use(p, c, TARGETS["xehpg"])
    best = max(lane_bound(p, instruction_shape(p, replace(c, fma=f, simd=TARGETS["xehpg"].simd_for(f)),
                                                   TARGETS["xehpg"]), TARGETS["xehpg"]) for f in ("dpas", "mad"))
    assert best < MIN_USEFUL and use.fraction < MIN_USEFUL
    [issue] = _lane_warnings(p, c, TARGETS["xehpg"])
    assert "exceeds the problem's" in issue.message


@given(st.sampled_from(DEPTHWISE[:6] + ["mb4ic24ih9oc40oh9kh3ph1", "m40n24k72", "m7n100k3"]),
       st.sampled_from(["xehpg", "xehpc"]), st.integers(0, 3), st.integers(0, 3), st.integers(0, 2))
def test_no_tile_beats_the_instruction_bound_and_issued_covers_useful(shape, hw, mi, ni, ki):
    """lane_bound (the problem's extents against the instruction) bounds every tile's figure from above, and
    issued lanes never fall short of the problem's multiply-adds."""
    p = problem_from_text(shape, types="f16")
    target = TARGETS[hw]
    base = default_config(p, target)
    gemm = p.gemm_dims()
    shape_ = instruction_shape(p, base, target)
    over = mad_over_batch(base.fma, base.simd, derive_tiling(p, base))
    m = {gemm.m[-1][0]: 2 ** mi}
    n = {} if over else {gemm.n[-1][0]: shape_.n * 2 ** ni}
    k = {gemm.k[-1][0]: shape_.k * 2 ** ki}
    b = {gemm.b[0][0]: base.simd} if over else {}
    cfg = resolve_config(p, target, KernelConfig(iter=Tile.of({**b, **m, **n, **k}.items())))
    use = lane_use(p, cfg, target)
    assert use.useful == prod(size for r in "bmnk" for _, size in getattr(gemm, r))
    assert use.issued >= use.useful
    assert use.fraction <= lane_bound(p, shape_, target, over) + 1e-12
