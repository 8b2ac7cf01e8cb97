"""The check protocol: packing, tolerances, verdicts on right and wrong kernels, and built kernels."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.builder import Kernel, KernelArg
from kdd.core.interp.check import (CheckResult, check_kernel, default_tol, pack, random_values, run_check,
                                   unpack)
from kdd.core.interp.values import round_float
from kdd.core.ir import Alloc, Broadcast, For, FuncCall, Group, If, Let, MemKind, Store, const, seq, var
from kdd.core.ir.funcs import Mad, Send, SendKind, SendOp
from kdd.core.ir.types import Type, f32, u64
from kdd.core.layout.layout import Layout, parse_layout
from kdd.core.problem import problem_from_text

TYPES = [Type.parse(t) for t in ("f32", "f16", "bf16", "s8", "u8", "s32")]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(TYPES), st.integers(1, 40), st.integers(0, 2**32 - 1))
def test_random_values_are_nonzero_and_exact_in_their_type(t, n, seed):
    v = random_values(t, (n,), np.random.default_rng(seed))
    assert (v != 0).all()
    if t.is_float:
        np.testing.assert_array_equal(round_float(v, t).astype(np.float64), v)
    else:
        lo, hi = t.scalar.int_range()
        assert (v == np.round(v)).all() and (v >= lo).all() and (v <= hi).all()


@st.composite
def blocked_layouts(draw):
    """A dense layout over 2-3 dims with optional inner blocks (padding included)."""
    nd = draw(st.integers(2, 3))
    dims = tuple(draw(st.integers(1, 9)) for _ in range(nd))
    order = draw(st.permutations(range(nd)))
    blocks = [(d, 0) for d in order]
    inner = []
    for d in draw(st.lists(st.integers(0, nd - 1), max_size=2, unique=True)):
        inner.append((d, draw(st.sampled_from([2, 4]))))
    sizes = {d: math.prod(b for dd, b in inner if dd == d) for d in range(nd)}
    outer = [(d, -(-dims[d] // sizes[d])) for d, _ in blocks]
    t = draw(st.sampled_from(TYPES))
    return Layout.dense(t, dims, outer + inner, offset=draw(st.integers(0, 3)))


@settings(max_examples=200, deadline=None)
@given(blocked_layouts(), st.integers(0, 2**32 - 1))
def test_pack_then_unpack_is_identity_and_padding_stays_zero(layout, seed):
    t = layout.dtype
    values = random_values(t, layout.dims, np.random.default_rng(seed))
    buf = pack(values, t, layout)
    assert buf.size == layout.size_bytes()
    np.testing.assert_array_equal(unpack(buf, t, layout, layout.dims), values)
    # Exactly the logical elements are non-zero: every other byte is padding.
    nonzero_elems = np.count_nonzero(buf[: buf.size // t.size * t.size].view(np.uint8).reshape(-1, t.size).any(1))
    assert nonzero_elems == values.size


def test_pack_uses_the_layout_offsets():
    layout = parse_layout("ba", (2, 3), "s32")
    buf = pack(np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float64), Type.parse("s32"), layout)
    assert buf.view(np.int32).tolist() == [1, 4, 2, 5, 3, 6]


def test_default_tolerances():
    plain = problem_from_text("m4n4k4", types="s8:s8:s8")
    assert default_tol(plain, Type.parse("s8")) == 0.0
    assert default_tol(problem_from_text("m4n4k4", types="s8:s8:s8", post_ops="scale:0.25"),
                       Type.parse("s8")) == 0.0
    assert default_tol(problem_from_text("m4n4k4", types="s8:s8:s8", post_ops="relu"), Type.parse("s8")) > 0
    assert default_tol(plain, Type.parse("f32")) == 1e-5
    assert default_tol(plain, Type.parse("f16")) < default_tol(plain, Type.parse("bf16"))


# -- a hand-written GEMM kernel: one thread per row of C, simd 8 ---------------------------------------

M, N, K = 4, 8, 4
PROBLEM = problem_from_text(f"m{M}n{N}k{K}", types="f32", tags={"src": "ab", "wei": "ab", "dst": "ab"})


def _gemm_kernel(zero=True, rows=M, k_bound=K, store=True):
    A, B, C = var("src", u64), var("wei", u64), var("dst", u64)
    acc, a, b = var("acc", u64), var("a", u64), var("b", u64)
    m, k = var("m"), var("k")

    def send(op, buf, off, reg, n):
        return FuncCall.make(Send(op, SendKind.BLOCK, "global", f32, n), [buf, off, reg, 0, const(True)])
    body = seq(
        Store.make(acc, 0, Broadcast.make(const(0.0), N)) if zero else None,
        For.make(k, 0, k_bound, seq(
            send(SendOp.LOAD, A, (m * K + k) * 4, a, 1),
            send(SendOp.LOAD, B, k * N * 4, b, N),
            FuncCall.make(Mad(N, f32, f32, f32, 0), [acc, 0, acc, 0, b, 0, a, 0]))),
        If.make(m.lt(rows), send(SendOp.STORE, C, m * N * 4, acc, N)) if store else None)
    body = Let.make(m, var("thread_id1"), body)
    for buf, size in ((b, 32), (a, 32), (acc, 32)):
        body = Alloc.make(buf, size, MemKind.GRF, body)
    args = tuple(KernelArg(name, var(name, u64), f32, parse_layout("ab", dims, "f32"),
                           tuple(zip(names, dims)), role)
                 for name, dims, names, role in (("src", (M, K), "mk", "input"), ("wei", (K, N), "kn", "input"),
                                                 ("dst", (M, N), "mn", "output")))
    return Kernel(Group.make("kernel", body), args, (1, 1, 1), (1, M, 1), N, "xehpg", 32, 0, PROBLEM)


def test_correct_kernel_passes_within_one_f32_rounding_per_add():
    # f32 in, f32 out: the inputs fill the mantissa, so the f32 sums round (a little).
    r = check_kernel(_gemm_kernel())
    assert r == CheckResult(True, r.rel_err, 1e-5, None, PROBLEM.shape.canonical(), r.ms, "dst", 0, r.interp_ms)
    assert 0 < r.rel_err < 1e-6


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([Type.parse("f32"), Type.parse("f64")]), st.integers(8, 40), st.integers(0, 2**32 - 1))
def test_mantissa_inputs_are_exact_in_their_type_and_not_in_a_narrower_one(t, n, seed):
    v = random_values(t, (n,), np.random.default_rng(seed), mantissa=True)
    assert (v != 0).all()
    np.testing.assert_array_equal(round_float(v, t).astype(np.float64), v)
    narrower = Type.parse("f32" if t.size == 8 else "f16")
    assert (round_float(v, narrower).astype(np.float64) != v).any()


def test_uninitialized_accumulator_fails_at_the_first_element():
    r = check_kernel(_gemm_kernel(zero=False))
    assert not r.ok and r.first_bad_index == (0, 0) and math.isinf(r.rel_err)
    assert r.to_dict()["rel_err"] is None


def test_unwritten_rows_fail_even_when_values_would_match():
    r = check_kernel(_gemm_kernel(rows=3))
    assert not r.ok and r.unwritten == N and r.first_bad_index == (3, 0)


def test_an_output_the_kernel_never_names_is_all_unwritten():
    r = check_kernel(_gemm_kernel(store=False))  # `dst` appears nowhere in the body
    assert not r.ok and r.unwritten == M * N and r.first_bad_index == (0, 0)


def test_a_missing_reduction_step_is_a_mismatch():
    r = check_kernel(_gemm_kernel(k_bound=K - 1))
    assert not r.ok and r.rel_err > 1e-2 and r.first_bad_index is not None


def test_seed_changes_inputs_but_not_the_verdict():
    a, b = check_kernel(_gemm_kernel(), seed=1), check_kernel(_gemm_kernel(), seed=2)
    assert a.ok and b.ok


def test_tolerance_override():
    r = check_kernel(_gemm_kernel(k_bound=K - 1), tol=10.0)
    assert r.ok and r.tol == 10.0


def test_json_form_has_exactly_the_protocol_keys():
    d = check_kernel(_gemm_kernel()).to_dict()
    assert set(d) == {"ok", "rel_err", "tol", "first_bad_index", "shape", "ms", "tensor", "unwritten"}


# -- kernels from the builder ------------------------------------------------------------------------

@pytest.mark.parametrize("shape, options, target", [
    ("mb2ic16ih6oc16oh6kh3ph1", dict(types="f16", post_ops="relu"), "xehpg"),
    ("mb2ic16ih6oc16oh6kh3ph1", dict(types="f16", prop="bwd_d"), "xehpg"),
    ("mb2ic16ih6oc16oh6kh3ph1", dict(types="f32", prop="bwd_w"), "xehpg"),
    ("g2mb2ic16ih6oc16oh6kh3sh2ph1dh1", dict(types="f16"), "xehpg"),
    ("m33n17k19", dict(types="f32", post_ops="bias+mul:f32+sum"), "xehpg"),
    ("mb2ic16ih6oc16oh6kh3ph1", dict(types="bf16:bf16:f32", post_ops="sum:0.5+add:f32:per_oc"), "xehpg"),
    ("m32n32k64", dict(types="s8:s8:s32"), "sm_90"),
    ("mb2ic16ih6oc16oh6kh3ph1", dict(types="f16", post_ops="tanh"), "sm_90"),
])
def test_built_kernels_pass(shape, options, target):
    r = run_check(problem_from_text(shape, **options), None, target)
    assert r.ok, r
    assert r.rel_err <= r.tol and r.unwritten == 0


def test_equal_infinities_and_nans_compare_equal_and_a_finite_value_against_inf_does_not():
    """An output that overflows exactly as the reference does (exp past the type's range) is right: inf - inf
    is NaN, which once made such outputs wrong; a finite value where the reference is inf stays wrong."""
    from kdd.core.interp.check import compare

    ref = np.array([1.0, np.inf, -np.inf, np.nan])
    written = np.ones(4, dtype=bool)
    assert compare("dst", ref.copy(), ref, written, 1e-5).ok
    out = ref.copy()
    out[1] = 3.0e38
    assert not compare("dst", out, ref, written, 1e-5).ok


def test_an_infinite_reference_element_leaves_the_others_judged_on_their_own_scale():
    """One inf in the reference must not make the norm infinite (every other error relative to it
    would vanish, and any value would pass)."""
    from kdd.core.interp.check import compare

    ref = np.array([np.inf, 1.0, 2.0, 3.0])
    written = np.ones(4, dtype=bool)
    assert compare("dst", ref.copy(), ref, written, 1e-3).ok
    out = ref.copy()
    out[2] = 5.0
    wrong = compare("dst", out, ref, written, 1e-3)
    assert not wrong.ok and wrong.first_bad == (2,)


def test_a_post_op_chain_that_magnifies_rounding_widens_the_float_tolerance_and_says_why():
    """exp(exp(acc)) in f32 is as exact as f32 allows and still off the float64 reference by more than an
    accumulation's tolerance: the tolerance scales by the chain's measured amplification, and says so."""
    from kdd.core.interp.reference import post_op_amplification

    plain = run_check(problem_from_text("2x36x39:2x39x36", types="f32", post_ops="relu"), None, "xehpg")
    assert plain.ok and plain.tol == 1e-5 and plain.tol_reason is None
    chain = problem_from_text("2x36x39:2x39x36", types="f32", post_ops="exp+exp+sum")
    r = run_check(chain, None, "xehpg")
    assert r.ok and r.tol > 1e-5 and "magnify" in r.tol_reason, r
    assert post_op_amplification(problem_from_text("m8n8k8", types="f32"), {}) == 1.0


def test_the_amplification_is_that_of_the_chain_measured_on_the_inputs():
    """exp magnifies a relative error of its input x by |x|; on values near 10 about 10 times, on values near
    0.1 not at all (floored at 1)."""
    from kdd.core.interp.reference import post_op_amplification

    p = problem_from_text("m4n4k1", types="f32", post_ops="exp")
    near = lambda x: {"src": np.full((4, 1), x), "wei": np.ones((1, 4))}
    assert 9.0 < post_op_amplification(p, near(10.0)) < 11.0
    assert post_op_amplification(p, near(0.1)) == 1.0
