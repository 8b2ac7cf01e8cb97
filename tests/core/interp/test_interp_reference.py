"""The float64 references against naive loop nests (seed 000's formulas) and against each other."""
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.interp.eltwise_math import apply_eltwise
from kdd.core.interp.reference import apply_post_ops, gemm, reference, round_to_type
from kdd.core.interp.reference_conv import conv_bwd_bias, conv_bwd_d, conv_bwd_w, conv_fwd
from kdd.core.ir.types import s8, u8
from kdd.core.problem import (Bias, Binary, Eltwise, Problem, Scale, Sum, compute_out,
                              parse_conv_shape, parse_data_types, problem_from_text)
from kdd.core.problem.data_types import parse_element_type

AXES = "dhw"


@st.composite
def conv_shapes(draw):
    ndims = draw(st.integers(1, 3))
    g = draw(st.integers(1, 2))
    text = f"g{g}mb{draw(st.integers(1, 2))}ic{g * draw(st.integers(1, 3))}oc{g * draw(st.integers(1, 3))}"
    for a in AXES[3 - ndims:]:
        i = draw(st.integers(1, 7 if ndims < 3 else 4))
        k, s, d = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(0, 2))
        p = draw(st.integers(0, 2))
        if compute_out(i, k, s, p, d) < 1:
            p = (k - 1) * (d + 1)  # enough padding for one output point
        text += f"i{a}{i}k{a}{k}s{a}{s}p{a}{p}d{a}{d}"
    return parse_conv_shape(text)


def _five(x, dims):
    return np.asarray(x).reshape(dims)


def _act_dims(s, prefix, channels):
    return (s.mb, channels, getattr(s, prefix + "d"), getattr(s, prefix + "h"), getattr(s, prefix + "w"))


def _inputs(s, rng):
    src = rng.standard_normal((s.mb, s.ic) + tuple(getattr(s, "i" + a) for a in s.used_axes))
    wei_dims = ((s.g,) if s.g > 1 else ()) + (s.oc // s.g, s.ic // s.g) + tuple(getattr(s, "k" + a) for a in s.used_axes)
    wei = rng.standard_normal(wei_dims)
    dst = rng.standard_normal((s.mb, s.oc) + tuple(getattr(s, "o" + a) for a in s.used_axes))
    return src, wei, dst


def _loops(s):
    """Every (mb, g, oc, ic, output point, tap, input point) that reads a real input: seed 000's
    ``i = o * S + k * (D + 1) - P`` with the bounds check of ``load_src``."""
    icg, ocg = s.ic // s.g, s.oc // s.g
    for n, g, oc, ic in itertools.product(range(s.mb), range(s.g), range(ocg), range(icg)):
        for od, oh, ow, kd, kh, kw in itertools.product(range(s.od), range(s.oh), range(s.ow),
                                                        range(s.kd), range(s.kh), range(s.kw)):
            i_d = od * s.sd + kd * (s.dd + 1) - s.pd
            i_h = oh * s.sh + kh * (s.dh + 1) - s.ph
            i_w = ow * s.sw + kw * (s.dw + 1) - s.pw
            if 0 <= i_d < s.id and 0 <= i_h < s.ih and 0 <= i_w < s.iw:
                yield n, g, oc, ic, (od, oh, ow), (kd, kh, kw), (i_d, i_h, i_w)


@settings(max_examples=120, deadline=None)
@given(conv_shapes(), st.integers(0, 2**32 - 1))
def test_conv_references_match_naive_loops(s, seed):
    src, wei, dst = _inputs(s, np.random.default_rng(seed))
    icg, ocg = s.ic // s.g, s.oc // s.g
    S = _five(src, _act_dims(s, "i", s.ic))
    D = _five(dst, _act_dims(s, "o", s.oc))
    W = _five(wei, (s.g, ocg, icg, s.kd, s.kh, s.kw))
    fwd = np.zeros(D.shape)
    bwd_d = np.zeros(S.shape)
    bwd_w = np.zeros(W.shape)
    for n, g, oc, ic, o, k, i in _loops(s):
        fwd[(n, g * ocg + oc) + o] += S[(n, g * icg + ic) + i] * W[(g, oc, ic) + k]
        bwd_d[(n, g * icg + ic) + i] += D[(n, g * ocg + oc) + o] * W[(g, oc, ic) + k]
        bwd_w[(g, oc, ic) + k] += S[(n, g * icg + ic) + i] * D[(n, g * ocg + oc) + o]
    np.testing.assert_allclose(conv_fwd(src, wei, s), fwd.reshape(dst.shape), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(conv_bwd_d(dst, wei, s), bwd_d.reshape(src.shape), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(conv_bwd_w(src, dst, s), bwd_w.reshape(wei.shape), rtol=1e-12, atol=1e-12)


@settings(max_examples=120, deadline=None)
@given(conv_shapes(), st.integers(0, 2**32 - 1))
def test_backward_passes_are_adjoints_of_forward(s, seed):
    x, w, y = _inputs(s, np.random.default_rng(seed))
    lhs = np.vdot(conv_fwd(x, w, s), y)
    assert math.isclose(lhs, np.vdot(x, conv_bwd_d(y, w, s)), rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(lhs, np.vdot(w, conv_bwd_w(x, y, s)), rel_tol=1e-9, abs_tol=1e-9)


def test_bias_gradient_sums_over_batch_and_points():
    s = parse_conv_shape("mb3ic2oc4ih5kh3")
    dd = np.random.default_rng(0).standard_normal((3, 4, 3, 3))
    want = [sum(dd[n, c, h, w] for n in range(3) for h in range(3) for w in range(3)) for c in range(4)]
    np.testing.assert_allclose(conv_bwd_bias(dd, s), want)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 3), max_size=2), st.integers(1, 5), st.integers(1, 5), st.integers(1, 5),
       st.integers(0, 2**32 - 1))
def test_gemm_reference_matches_naive_loops(batch, m, n, k, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((*batch, m, k)), rng.standard_normal((*batch, k, n))
    want = np.zeros((*batch, m, n))
    for idx in itertools.product(*(range(x) for x in batch)):
        for i, j in itertools.product(range(m), range(n)):
            want[idx + (i, j)] = sum(a[idx + (i, kk)] * b[idx + (kk, j)] for kk in range(k))
    np.testing.assert_allclose(gemm(a, b), want, rtol=1e-12, atol=1e-12)


_SCALAR_ELTWISE = {
    "relu": lambda x, a, b: x if x > 0 else a * x,
    "gelu_tanh": lambda x, a, b: 0.5 * x * (1 + math.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
    "gelu_erf": lambda x, a, b: 0.5 * x * (1 + math.erf(x / math.sqrt(2))),
    "swish": lambda x, a, b: x / (1 + math.exp(-a * x)),
    "tanh": lambda x, a, b: math.tanh(x),
    "logistic": lambda x, a, b: 1 / (1 + math.exp(-x)),
    "elu": lambda x, a, b: x if x > 0 else a * (math.exp(x) - 1),
    "linear": lambda x, a, b: a * x + b,
    "abs": lambda x, a, b: abs(x),
    "square": lambda x, a, b: x * x,
    "sqrt": lambda x, a, b: math.sqrt(x),
    "exp": lambda x, a, b: math.exp(x),
}


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(_SCALAR_ELTWISE)), st.floats(-20, 20), st.floats(-2, 2), st.floats(-2, 2))
def test_eltwise_math_matches_scalar_formulas(alg, x, alpha, beta):
    if alg == "sqrt":
        x = abs(x)
    got = float(apply_eltwise(alg, np.array([x]), alpha, beta)[0])
    assert math.isclose(got, _SCALAR_ELTWISE[alg](x, alpha, beta), rel_tol=1e-12, abs_tol=1e-12)


def test_post_op_chain_in_order_with_broadcast_policies():
    acc = np.arange(-6.0, 6.0).reshape(2, 3, 2)  # (mb, oc, ow): channel axis 1
    inputs = {"bias": np.array([1.0, 2.0, 3.0]), "binary2": np.array([10.0, 20.0, 30.0]),
              "binary4": np.array([0.5]), "dst": np.ones((2, 3, 2))}
    ops = (Bias(), Scale(2.0), Binary("add", parse_element_type("f32"), "per_oc"), Eltwise("relu"),
           Binary("mul", parse_element_type("f32"), "common"), Sum(3.0))
    got = apply_post_ops(acc, ops, inputs, channel_axis=1)
    x = (acc + np.array([1, 2, 3])[None, :, None]) * 2 + np.array([10, 20, 30])[None, :, None]
    want = np.maximum(x, 0) * 0.5 + 3.0
    np.testing.assert_array_equal(got, want)


def test_integer_outputs_round_to_nearest_even_and_saturate():
    x = np.array([-300.0, -2.5, -0.5, 0.5, 1.5, 2.4, 127.6, 300.0])
    assert round_to_type(x, s8).tolist() == [-128, -2, -0, 0, 2, 2, 127, 127]
    assert round_to_type(x, u8).tolist() == [0, 0, 0, 0, 2, 2, 128, 255]


@pytest.mark.parametrize("name, largest", [("f32", 3.4028234663852886e38), ("f16", 65504.0),
                                            ("bf16", 3.3895313892515355e38)])
def test_float_outputs_past_their_type_are_infinite_and_stay_float64_inside(name, largest):
    """What a kernel stores: a value the type cannot hold rounds to inf (exp(91) in bf16), one inside keeps
    its float64 value (the comparison's tolerance covers its rounding)."""
    t = parse_element_type(name)
    x = np.array([largest, -largest, largest * 1.01, -largest * 1.01, 1.0 / 3.0])
    got = round_to_type(x, t)
    assert got[0] == largest and got[1] == -largest and got[4] == 1.0 / 3.0
    assert got[2] == np.inf and got[3] == -np.inf


def test_reference_dispatch_by_problem():
    p = problem_from_text("mb1ic2oc2iw4kw3pw1", prop="bwd_w", types="f32", post_ops="bias")
    rng = np.random.default_rng(3)
    src, dd = rng.standard_normal((1, 2, 4)), rng.standard_normal((1, 2, 4))
    out = reference(p, {"src": src, "dst": dd})
    np.testing.assert_allclose(out["wei"], conv_bwd_w(src, dd, p.shape))
    np.testing.assert_allclose(out["bias"], dd.sum(axis=(0, 2)))
    g = Problem("gemm", "fwd", problem_from_text("m2n3k4").shape, parse_data_types("f32:f32:s8"),
                post_ops=(Scale(100.0),))
    a, b = rng.standard_normal((2, 4)), rng.standard_normal((4, 3))
    np.testing.assert_array_equal(reference(g, {"src": a, "wei": b})["dst"],
                                  np.clip(np.rint(100 * a @ b), -128, 127))


def test_unknown_eltwise_is_rejected():
    with pytest.raises(ValueError, match="unknown eltwise algorithm 'foo'"):
        apply_eltwise("foo", np.zeros(1))
