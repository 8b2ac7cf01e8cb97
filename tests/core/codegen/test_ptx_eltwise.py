"""The sm_90 eltwise rules built from IEEE-exact PTX, run in the PTX simulator against float64 numpy:
``exp`` within a few ulp over the whole f32 range (subnormal results and overflow included), the
rules built on it (elu, swish, logistic, tanh, gelu_tanh) against :mod:`kdd.core.interp.eltwise_math`,
and small GEMM and conv kernels with each as a post-op checked in the simulator."""
import numpy as np
import pytest

from kdd.core.builder import build_kernel
from kdd.core.codegen.ptx import generate_ptx
from kdd.core.codegen.ptx.eltwise import eltwise_f32
from kdd.core.codegen.ptx.emitter import Emitter
from kdd.core.config.defaults import resolve_config
from kdd.core.interp.eltwise_math import apply_eltwise
from kdd.core.passes.kernel_pipeline import run_pipeline
from kdd.core.problem import problem_from_text
from kdd.core.ptxsim import check_ptx, run_ptx
from kdd.core.targets import get_target

WARPS = 64
X = np.concatenate([np.linspace(-110.0, 95.0, 32 * WARPS - 64), np.geomspace(1e-30, 1.0, 32) * np.tile([-1, 1], 16),
                    np.array([0.0, -0.0, 88.72, 88.73, -87.3, -103.2, -103.3, np.inf, -np.inf, np.nan] + [1.0] * 22)
                    ]).astype(np.float32)[: 32 * WARPS]


def _simulate(alg: str, alpha: float = 0.0) -> np.ndarray:
    em = Emitter()
    src, dst, at = em.new("rd"), em.new("rd"), em.new("rd")
    i, x = em.new("r"), em.new("f")
    em.op(f"ld.param.u64 {src}, [p_src]")
    em.op(f"ld.param.u64 {dst}, [p_dst]")
    em.op(f"mad.lo.s32 {i}, %ctaid.x, 32, %tid.x")
    em.op(f"mul.wide.u32 {at}, {i}, 4")
    em.op(f"add.s64 {src}, {src}, {at}")
    em.op(f"add.s64 {dst}, {dst}, {at}")
    em.op(f"ld.global.f32 {x}, [{src}]")
    em.op(f"st.global.f32 [{dst}], {eltwise_f32(em, alg, x, alpha, 0.0)}")
    ptx = (".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p_src, .param .u64 p_dst)\n{\n"
           + "\n".join(em.declarations()) + "\n" + "\n".join(line.text for line in em.lines) + "\n\tret;\n}\n")
    out = np.zeros(X.size, dtype=np.float32)
    run_ptx(ptx, {"grid": [WARPS, 1, 1], "block": [32, 1, 1], "shared_bytes": 0},
            [X.view(np.uint8).copy(), out.view(np.uint8)])
    return out


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in units of the f32 spacing at ``want`` (the subnormal spacing at the bottom)."""
    spacing = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want) / spacing


def test_exp_is_within_a_few_ulp_of_float64_exp_over_the_f32_range():
    got = _simulate("exp")
    with np.errstate(over="ignore"):
        want = np.exp(X.astype(np.float64))
        finite = np.isfinite(want.astype(np.float32))
    assert np.all(_ulps(got[finite], want[finite]) <= 2)
    assert np.all(np.isposinf(got[~finite & ~np.isnan(X)]))         # past ln(FLT_MAX): inf
    assert np.isnan(got[np.isnan(X)]).all() and got[X == -np.inf].tolist() == [0.0]
    assert (got[(X > -87.3) & (X < -87)] > 0).any() and 0 < got[X == np.float32(-103.2)][0] < 1e-44   # subnormals


@pytest.mark.parametrize("alg, alpha", [("elu", 0.5), ("swish", 1.5), ("logistic", 0.0), ("swish", -1.0), ("tanh", 0.0)])
def test_rules_on_exp_match_the_interpreters_definitions(alg, alpha):
    got = _simulate(alg, alpha)
    with np.errstate(all="ignore"):
        want = apply_eltwise(alg, X, alpha)
    finite = np.isfinite(X)
    # swish of a large |x| is x e / (1 + e), e = exp(-|alpha x|): once e is subnormal (results below
    # about |x| 2^-126) its absolute error of 2^-150 is multiplied by |x|
    normal = finite & (np.abs(want) >= 2.0 ** -119)
    assert np.all(_ulps(got[normal], want[normal]) <= 4), alg
    assert np.all(np.abs(got[finite & ~normal] - want[finite & ~normal]) <= 2.0 ** -140), alg
    assert np.array_equal(got[~finite], want[~finite].astype(np.float32), equal_nan=True)



def test_gelu_tanh_is_x_over_one_plus_exp_within_the_rounding_of_its_cubic_argument():
    # oneDNN's 0.5 x (1 + tanh u) cancels in float64 for x < -3; x / (1 + exp(-2u)) is the same function
    # without the cancellation. exp magnifies the f32 rounding of u = k x (1 + 0.044715 x^2) by |2u|.
    got = _simulate("gelu_tanh")
    x = X.astype(np.float64)
    with np.errstate(all="ignore"):
        u = np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)
        want = x / (1 + np.exp(-2 * u))
    finite = np.isfinite(x)
    ulps = _ulps(got[finite], want[finite])
    # below |x| 2^-126 the quotient also inherits the few bits of a subnormal exp(-2 |u|)
    tiny = np.abs(want[finite]) < 2.0 ** -119
    assert np.all((ulps <= 4 + 2 * np.abs(2 * u[finite])) | tiny & (np.abs(got[finite] - want[finite]) <= 2.0 ** -140))
    assert np.all(ulps[np.abs(x[finite]) < 3] <= 4)
    with np.errstate(invalid="ignore"):     # -inf (1 + tanh(-inf)) = -inf 0
        special = apply_eltwise("gelu_tanh", X[~finite]).astype(np.float32)
    assert np.array_equal(got[~finite], special, equal_nan=True)

@pytest.mark.slow
@pytest.mark.parametrize("post_op", ["exp", "elu:0.5", "swish:1.5", "logistic", "tanh", "gelu_tanh"])
@pytest.mark.parametrize("shape, types, tags", [
    ("m32n16k64", "f16:f16:f32", {}),
    ("mb2ic32ih6oc32oh6kh3ph1", "f16:f16:f32", {"src": "axb", "wei": "axcb", "dst": "axb"})])
def test_sm90_kernels_with_the_post_op_check_ok_in_the_ptx_simulator(post_op, shape, types, tags):
    target = get_target("sm_90")
    p = problem_from_text(shape, types=types, tags=tags, post_ops=[post_op])
    kernel = build_kernel(p, resolve_config(p, target), target)
    listing = generate_ptx(kernel, run_pipeline(kernel).final, target, check=False)
    assert "ex2" not in listing.asm      # no approximate instruction: the simulator runs what the GPU does
    out = check_ptx(kernel, {"asm": listing.asm, "launch": listing.launch})
    assert out["ok"] and out["unwritten"] == 0, out
