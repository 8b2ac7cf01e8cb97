"""Problem: validation, GEMM view, tensor dims and flops."""
from __future__ import annotations

from math import prod

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.ir.types import f16, f32
from kdd.core.problem import (Bias, Eltwise, GemmShape, Problem, ProblemError, Sum, detect_op,
                              parse_conv_shape, parse_data_types, parse_shape, problem_from_text)

F32 = parse_data_types("f32")


def conv(text, prop="fwd", **kw):
    return Problem("conv", prop, parse_conv_shape(text), F32, **kw)


def test_gemm_dims_of_a_grouped_2d_conv():
    p = conv("g2mb4ic8ih10oc6oh8kh3ph0")  # iw/ow/kw copy h; ic, oc per group 4 and 3
    fwd = p.gemm_dims()
    assert fwd.b == (("g", 2),)
    assert fwd.m == (("mb", 4), ("od", 1), ("oh", 8), ("ow", 8))
    assert fwd.n == (("oc", 3),)
    assert fwd.k == (("ic", 4), ("kd", 1), ("kh", 3), ("kw", 3))
    assert (fwd.B, fwd.M, fwd.N, fwd.K) == (2, 256, 3, 36)

    bwd_d = conv("g2mb4ic8ih10oc6oh8kh3ph0", "bwd_d").gemm_dims()
    assert bwd_d.m == (("mb", 4), ("id", 1), ("ih", 10), ("iw", 10))
    assert bwd_d.n == (("ic", 4),)
    assert bwd_d.k == (("oc", 3), ("kd", 1), ("kh", 3), ("kw", 3))

    bwd_w = conv("g2mb4ic8ih10oc6oh8kh3ph0", "bwd_w").gemm_dims()
    assert bwd_w.m == (("ic", 4), ("kd", 1), ("kh", 3), ("kw", 3))
    assert bwd_w.n == (("oc", 3),)
    assert bwd_w.k == (("mb", 4), ("od", 1), ("oh", 8), ("ow", 8))
    assert bwd_w.to_dict()["M"] == 36


def test_gemm_dims_of_a_batched_gemm():
    p = problem_from_text("56x16x384x64:56x16x64x128", types="f16:f16:f16")
    d = p.gemm_dims()
    assert d.b == (("b0", 56), ("b1", 16))
    assert (d.m, d.n, d.k) == ((("m", 384),), (("n", 128),), (("k", 64),))
    assert p.flops() == 2 * 56 * 16 * 384 * 128 * 64


def test_tensor_dims_follow_onednn_order():
    p1 = conv("ic16oc32iw20kw3")
    assert p1.tensor_dims("src") == (("mb", 2), ("ic", 16), ("iw", 20))
    assert p1.tensor_dims("wei") == (("oc", 32), ("ic", 16), ("kw", 3))
    assert p1.tensor_dims("dst") == (("mb", 2), ("oc", 32), ("ow", 18))
    p3 = conv("g4ic16oc32id5kd3")
    assert p3.tensor_dims("src") == (("mb", 2), ("ic", 16), ("id", 5), ("ih", 5), ("iw", 5))
    assert p3.tensor_dims("wei") == (("g", 4), ("oc", 8), ("ic", 4), ("kd", 3), ("kh", 3), ("kw", 3))
    g = problem_from_text("b3m4n5k6")
    assert g.tensor_dims("src") == (("b0", 3), ("m", 4), ("k", 6))
    assert g.tensor_dims("wei") == (("b0", 3), ("k", 6), ("n", 5))
    assert g.tensor_dims("dst") == (("b0", 3), ("m", 4), ("n", 5))
    with pytest.raises(ValueError, match="unknown tensor 'bias'"):
        g.tensor_dims("bias")


def test_flops_skip_padding_taps():
    # 3x3 kernel, 5x5 input, padding 1: 25 outputs, 9 taps each minus the
    # ones that fall on padding (border rows/cols see 6, corners 4) = 169 valid taps
    p = conv("mb1ic1ih5oc1oh5kh3ph1")
    assert p.flops() == 2 * 169
    assert conv("mb1ic1ih5oc1oh5kh3ph1", "bwd_w").flops() == 2 * 169


def test_validation():
    shape = parse_conv_shape("ic3oc3ih5kh3")
    with pytest.raises(ValueError, match="unknown op"):
        Problem("deconv", "fwd", shape, F32)
    with pytest.raises(ValueError, match="needs a GemmShape"):
        Problem("gemm", "fwd", shape, F32)
    with pytest.raises(ValueError, match="forward only"):
        Problem("gemm", "bwd_d", GemmShape((), 1, 2, 3), F32)
    with pytest.raises(ValueError, match="unknown tensor"):
        conv("ic3oc3ih5kh3", tags={"bia": "a"})
    with pytest.raises(ValueError, match="does not apply to bwd_d"):
        conv("ic3oc3ih5kh3", "bwd_d", post_ops=(Eltwise("relu"),))
    with pytest.raises(ValueError, match="does not apply to bwd_w"):
        conv("ic3oc3ih5kh3", "bwd_w", post_ops=(Sum(),))
    assert conv("ic3oc3ih5kh3", "bwd_w", post_ops=[Bias()]).post_ops == (Bias(),)


def test_tags_default_to_any_and_problem_is_hashable():
    p = conv("ic3oc3ih5kh3", tags={"src": "axb"})
    assert dict(p.tags) == {"src": "axb", "wei": "any", "dst": "any"}
    same = conv("ic3ih5oc3kh3", tags={"dst": "any", "src": "axb"})
    assert p == same and hash(p) == hash(same)
    assert p != conv("ic3oc3ih5kh3", tags={"src": "abx"})


def test_problem_from_text_and_to_dict():
    p = problem_from_text("mb32ic64ih56oc64oh56kh3ph1", types="f16:f16:f16",
                          tags={"src": "axb", "wei": "axcb", "dst": "axb"}, post_ops=["relu"])
    assert p.op == "conv" and p.types.src == f16 and p.types.acc == f32
    assert p.post_ops == (Eltwise("relu"),)
    d = p.to_dict()
    assert d["shape"]["canonical"] == "mb32ic64ih56oc64oh56kh3ph1"
    assert d["post_ops"] == "relu" and d["types"]["acc"] == "f32" and d["gemm"]["N"] == 64
    with pytest.raises(ProblemError) as info:
        problem_from_text("ic3oc3ih5kh3", post_ops="relu+frob")
    assert (info.value.start, info.value.end) == (5, 9)


@pytest.mark.parametrize("text, op", [
    ("1x2:2x3", "gemm"), ("m1n2k3", "gemm"), ("b2m1n2k3", "gemm"), ("k3m1n2", "gemm"),
    ("mb2ic3oc3ih5kh3", "conv"), ("ic3oc3ih5kh3", "conv"), ("g2ic4oc4ih5kh3", "conv"),
])
def test_detect_op(text, op):
    assert detect_op(text) == op
    assert type(parse_shape(text)).__name__ == {"conv": "ConvShape", "gemm": "GemmShape"}[op]


@st.composite
def conv_texts(draw):
    g = draw(st.integers(1, 3))
    text = f"g{g}mb{draw(st.integers(1, 3))}ic{g * draw(st.integers(1, 4))}oc{g * draw(st.integers(1, 4))}"
    for a in draw(st.sampled_from(["w", "hw", "dhw"])):
        k, s, d = draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(0, 1))
        p = draw(st.integers(0, 2))
        i = draw(st.integers(max(1, (k - 1) * (d + 1) + 1 - 2 * p), 7))
        text += f"i{a}{i}k{a}{k}s{a}{s}d{a}{d}p{a}{p}"
    return text


@settings(max_examples=300, deadline=None)
@given(conv_texts())
def test_flops_equal_a_direct_mac_count(text):
    """2 x the multiply-accumulates a direct convolution loop performs on real input."""
    p = conv(text)
    s = p.shape
    macs = 0
    for o_d in range(s.od):
        for o_h in range(s.oh):
            for o_w in range(s.ow):
                for k_d in range(s.kd):
                    for k_h in range(s.kh):
                        for k_w in range(s.kw):
                            i = (o_d * s.sd - s.pd + k_d * (s.dd + 1), o_h * s.sh - s.ph + k_h * (s.dh + 1),
                                 o_w * s.sw - s.pw + k_w * (s.dw + 1))
                            if all(0 <= x < n for x, n in zip(i, (s.id, s.ih, s.iw))):
                                macs += s.mb * s.g * (s.oc // s.g) * (s.ic // s.g)
    assert p.flops() == 2 * macs


@settings(max_examples=300, deadline=None)
@given(conv_texts())
def test_gemm_view_is_consistent_with_tensor_dims(text):
    fwd, bwd_d, bwd_w = (conv(text, prop) for prop in ("fwd", "bwd_d", "bwd_w"))
    f, d, w = fwd.gemm_dims(), bwd_d.gemm_dims(), bwd_w.gemm_dims()
    size = {t: prod(n for _, n in fwd.tensor_dims(t)) for t in ("src", "wei", "dst")}
    # fwd: dst = B*M*N, wei = B*N*K; bwd_d: src = B*M*N; bwd_w: wei = B*M*N, dst = B*N*K
    assert size["dst"] == f.B * f.M * f.N
    assert size["wei"] == f.B * f.N * f.K == d.B * d.N * d.K == w.B * w.M * w.N
    assert size["src"] == d.B * d.M * d.N
    assert size["dst"] == w.B * w.N * w.K
    # every problem lists all three spatial dims in M/K
    assert len(f.m) == len(d.m) == len(w.k) == 4
    # no padding: every tap is real, so flops are the GEMM's 2*B*M*N*K
    s = fwd.shape
    if all(s.axis(a).pl == 0 and s.axis(a).pr <= 0 for a in "dhw"):
        assert fwd.flops() == 2 * f.B * f.M * f.N * f.K


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 9), max_size=3), st.integers(1, 50), st.integers(1, 50), st.integers(1, 50))
def test_gemm_tensor_dims_match_gemm_dims(batch, m, n, k):
    p = Problem("gemm", "fwd", GemmShape(tuple(batch), m, n, k), F32)
    d = p.gemm_dims()
    size = {t: prod(x for _, x in p.tensor_dims(t)) for t in ("src", "wei", "dst")}
    assert (size["src"], size["wei"], size["dst"]) == (d.B * d.M * d.K, d.B * d.K * d.N, d.B * d.M * d.N)
