"""Weight decompression as benchdnn writes it: parsing, its errors, and the float64 reference's weights
against an independent per-element oracle."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.interp.reference import decompressed_weights
from kdd.core.ir.types import f16, s4, s8, u4, u8
from kdd.core.problem import Problem, ProblemError, parse_data_types, parse_shape
from kdd.core.problem.decompression import SCALES, ZERO_POINTS, Decompression, parse_decompression


def test_benchdnn_values_parse_and_print_back():
    d = parse_decompression("wei:per_ocic:f16:128x1", "wei:per_ocic:u8:128x1", "f16:true")
    assert d == Decompression(f16, u8, 128, 1, f16)
    assert d.canonical() == {"scales": "wei:per_ocic:f16:128x1", "zero_points": "wei:per_ocic:u8:128x1",
                             "fpmath": "f16:true"}
    assert d.groups(200, 7) == (2, 7)  # a group past the edge is cut short
    assert parse_decompression("wei:per_ocic:f16:32x4", None, "f16:true").zero_point is None


@pytest.mark.parametrize("scales,zps,fpmath,message,span", [
    ("src:per_ocic:f16:128x1", None, "f16:true", "decompresses the weights only", (0, 3)),
    ("wei:per_oic:f16:128x1", None, "f16:true", "policy 'per_oic'", (4, 11)),
    ("wei:per_oc:f16:128x1", None, "f16:true", "per_oc has no groups", (15, 20)),
    ("wei:per_ocic:u32:128x1", None, "f16:true", "grouped weight scales are floating point", None),
    ("wei:per_ocic:f16:128x4", "wei:per_ocic:u4:128x4", "f16:true", "one per column", None),
    ("wei:per_ocic:f16:128", None, "f16:true", "groups '128'", (17, 20)),
    ("wei:per_ocic:f16:128x1", "wei:per_ocic:u8:64x1", "f16:true", "differ from the scales' 128x1", None),
    ("wei:per_ocic:f16:128x1", None, None, "need fpmath", None),
    ("wei:per_ocic:f16:128x1", None, "f16", "does not apply to integer weights", None),
    ("wei:per_ocic:f16:128x1", None, "f32:true", "f16 or bf16", None),
])
def test_bad_values_name_the_field(scales, zps, fpmath, message, span):
    with pytest.raises(ProblemError, match=message) as err:
        parse_decompression(scales, zps, fpmath)
    if span is not None:
        assert (err.value.start, err.value.end) == span


def test_4_bit_weights_and_zero_points_parse_and_only_as_decompressed_weights():
    d = parse_decompression("wei:per_ocic:f16:128x1", "wei:per_ocic:s4:128x1", "f16:true")
    assert d == Decompression(f16, s4, 128, 1, f16)
    gemm = parse_shape("m8n8k128", "gemm")
    assert Problem("gemm", "fwd", gemm, parse_data_types("f16:u4:f16"), decompression=d).types.wei == u4
    with pytest.raises(ValueError, match="src of type u4"):
        Problem("gemm", "fwd", gemm, parse_data_types("u4:u4:f16"), decompression=d)


def test_problem_accepts_decompression_of_8_bit_gemm_weights_only():
    d = Decompression(f16, u8, 128, 1, f16)
    gemm = parse_shape("m8n8k128", "gemm")
    assert Problem("gemm", "fwd", gemm, parse_data_types("f16:u8:f16"), decompression=d).to_dict()[
        "decompression"]["scales"] == "wei:per_ocic:f16:128x1"
    with pytest.raises(ValueError, match="8- or 4-bit integer weights"):
        Problem("gemm", "fwd", gemm, parse_data_types("f16"), decompression=d)
    with pytest.raises(ValueError, match="types must give src f16"):
        Problem("gemm", "fwd", gemm, parse_data_types("bf16:s8:f16"), decompression=d)
    conv = parse_shape("mb1ic8ih4oc8oh4kh1ph0", "conv")
    with pytest.raises(ValueError, match="take per_oc scales"):
        Problem("conv", "fwd", conv, parse_data_types("f16:u8:f16"), decompression=d)
    per_oc = parse_decompression("wei:per_oc:f16", "wei:per_oc:u8", "f16:true")
    with pytest.raises(ValueError, match="forward convolutions, not bwd_d"):
        Problem("conv", "bwd_d", conv, parse_data_types("f16:u8:f16"), decompression=per_oc)
    assert Problem("conv", "fwd", conv, parse_data_types("f16:u8:f16"), decompression=per_oc).decompression.per_oc


def test_per_oc_is_one_per_output_channel_over_the_whole_reduction():
    d = parse_decompression("wei:per_oc:f16", "wei:per_oc:s4", "f16:true")
    assert (d.group_k, d.group_n, d.per_oc, d.groups(576, 64)) == (0, 1, True, (1, 64))
    assert d.canonical() == {"scales": "wei:per_oc:f16", "zero_points": "wei:per_oc:s4", "fpmath": "f16:true"}
    with pytest.raises(ProblemError, match="differ from the scales' per_oc"):
        parse_decompression("wei:per_oc:f16", "wei:per_ocic:u8:32x1", "f16:true")
    with pytest.raises(ProblemError, match="per_oc has no groups"):
        parse_decompression("wei:per_oc:f16:32x1", None, "f16:true")


@settings(max_examples=20, deadline=None)
@given(g=st.integers(1, 3), oc=st.integers(1, 5), ic=st.integers(1, 4), kh=st.integers(1, 3), zp=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_conv_reference_weights_match_a_per_element_oracle(g, oc, ic, kh, zp, seed):
    rng = np.random.default_rng(seed)
    d = parse_decompression("wei:per_oc:f16", "wei:per_oc:u8" if zp else None, "f16:true")
    problem = Problem("conv", "fwd", parse_shape(f"g{g}mb1ic{g * ic}ih4oc{g * oc}oh4kh{kh}ph0", "conv"),
                      parse_data_types("f16:u8:f16"), decompression=d)
    wei = rng.integers(0, 256, ((g,) if g > 1 else ()) + (oc, ic, kh, kh)).astype(float)
    inputs = {"wei": wei, SCALES: rng.uniform(-1, 1, (1, g * oc))}
    if zp:
        inputs[ZERO_POINTS] = rng.integers(0, 256, (1, g * oc)).astype(float)
    got = decompressed_weights(problem, inputs).reshape(g, oc, ic * kh * kh)
    flat = wei.reshape(g, oc, ic * kh * kh)
    for gi in range(g):
        for o in range(oc):
            c = gi * oc + o  # the output channel over every group
            z = inputs[ZERO_POINTS][0, c] if zp else 0.0
            assert (got[gi, o] == (flat[gi, o] - z) * inputs[SCALES][0, c]).all()


@settings(max_examples=40, deadline=None)
@given(k=st.integers(1, 40), n=st.integers(1, 12), gk=st.integers(1, 16), gn=st.integers(1, 5),
       batch=st.integers(1, 2), zp=st.booleans(), signed=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_reference_weights_match_a_per_element_oracle(k, n, gk, gn, batch, zp, signed, seed):
    rng = np.random.default_rng(seed)
    w_type = s8 if signed else u8
    d = Decompression(f16, w_type if zp else None, gk, gn, f16)
    rows, cols = d.groups(k, n)
    inputs = {"wei": rng.integers(-128 if signed else 0, 128 if signed else 256, (batch, k, n)).astype(float),
              SCALES: rng.uniform(-1, 1, (batch, rows, cols))}
    if zp:
        inputs[ZERO_POINTS] = rng.integers(0, 100, (batch, rows, cols)).astype(float)
    problem = Problem("gemm", "fwd", parse_shape(f"b{batch}m2n{n}k{k}", "gemm"),
                      parse_data_types(f"f16:{w_type}:f16"), decompression=d)
    got = decompressed_weights(problem, inputs)
    for b in range(batch):
        for i in range(k):
            for j in range(n):
                z = inputs[ZERO_POINTS][b, i // gk, j // gn] if zp else 0.0
                assert got[b, i, j] == (inputs["wei"][b, i, j] - z) * inputs[SCALES][b, i // gk, j // gn]


DOC = """[problem]
op = "gemm"
shape = "m16n32k64"
types = "f16:u8:f16"
{keys}
[target]
hw = "xe2"
"""


@pytest.mark.parametrize("keys,line,col,message", [
    ('scales = "wei:per_ocic:f16:12a8x1"\nfpmath = "f16:true"', 4, 27, "groups '12a8x1'"),
    ('scales = "wei:per_ocic:f16:32x1"', 4, 10, "need fpmath"),
    ('zero_points = "wei:per_ocic:u8:32x1"', 4, 14, "write scales too"),
    ('', 3, 8, "4-bit weights are decompressed in registers"),
    ('scales = "wei:per_ocic:f16:32x1"\nfpmath = "f16"', 5, 10, "does not apply to integer weights"),
    ('scales = "wei:per_ocic:f16:32x1"\nzero_points = "wei:per_ocic:u8:16x1"\nfpmath = "f16:true"', 5, 15,
     "differ from the scales' 32x1"),
])
def test_config_diagnostics_point_at_the_value(keys, line, col, message):
    from kdd.core.spec import load_spec
    spec, diagnostics = load_spec(DOC.format(keys=keys).replace("f16:u8:f16", "f16:u4:f16") if not keys else
                                  DOC.format(keys=keys))
    assert spec is None or spec.problem.decompression is None
    found = [d for d in diagnostics if message in d.message]
    assert found and (found[0].range.start.line, found[0].range.start.character) == (line, col), diagnostics


def test_a_config_with_decompression_loads_it():
    from kdd.core.spec import load_spec
    spec, diagnostics = load_spec(DOC.format(keys='scales = "wei:per_ocic:f16:32x1"\n'
                                                   'zero_points = "wei:per_ocic:u8:32x1"\nfpmath = "f16:true"'))
    assert not [d for d in diagnostics if d.severity.name == "ERROR"], diagnostics
    assert spec.problem.decompression == Decompression(f16, u8, 32, 1, f16)
    assert spec.check.decompression == spec.problem.decompression


def test_hover_on_scales_shows_the_tensors_and_the_arithmetic():
    from kdd.core.spec.hover import hover
    text = DOC.format(keys='scales = "wei:per_ocic:f16:32x1"\nzero_points = "wei:per_ocic:u8:32x1"\nfpmath = "f16:true"')
    md = hover(text, 4, 3)
    assert "B[k, n] = (wei[k, n] - zp[k / 32, n / 1]) * scale[k / 32, n / 1] in f16" in md
    assert "| `wei_scales` | f16 | 2 x 32 |" in md and "| `wei_zero_points` | u8 | 2 x 32 |" in md
