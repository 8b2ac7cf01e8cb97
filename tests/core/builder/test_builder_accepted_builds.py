"""What validation accepts builds, for the problem and the check shape, and checks after every pass.

Random kernel config documents over every op and propagation kind, types
(f64 and mixed-signedness int8 included), post-op chains, targets and knobs
are read by ``load_spec``. When it reports no error, the kernel must build for
the problem and for the check problem, and the check kernel must compute the
right result after the build and after every pass. No exception escapes.
"""
from __future__ import annotations

from math import prod

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
import pytest

from kdd.core.builder import build_kernel
from kdd.core.engine import InterpreterCheck
from kdd.core.passes.pass_bisect import bisect, render_bisect
from kdd.core.spec import Severity, load_spec

TYPES = ("f32", "f16", "bf16", "f64", "f16:f16:f32", "bf16:bf16:f32", "s8:s8:s32", "u8:s8:s32", "s8:u8:s32",
         "u8:u8:s32", "s8:s8:f32", "u8:s8:f16")
POST_OPS = ("relu", "gelu_erf", "tanh", "linear:2:1", "scale:0.25", "scale:0.1", "bias", "bias:f16", "sum",
            "sum:0.5", "add:f32", "mul:f16:per_oc", "max:f32:common")
TARGETS = ("xehpg", "xehpc", "sm_90")


@st.composite
def gemm_shapes(draw, small: bool):
    top = 24 if small else 96
    batch = draw(st.sampled_from(["", "", "b2"]))
    return f"{batch}m{draw(st.integers(1, top))}n{draw(st.integers(1, top))}k{draw(st.integers(1, top))}"


@st.composite
def conv_shapes(draw, small: bool):
    g = draw(st.sampled_from([1, 1, 2]))
    mb, ic, oc = draw(st.integers(1, 2)), g * draw(st.integers(1, 8 if small else 24)), \
        g * draw(st.integers(1, 8 if small else 24))
    k, s, p = draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(0, 1))
    i = draw(st.integers(max(k - 2 * p, 1), 6 if small else 14))
    return f"g{g}mb{mb}ic{ic}ih{i}oc{oc}kh{k}sh{s}ph{p}"


@st.composite
def documents(draw):
    op = draw(st.sampled_from(["gemm", "conv"]))
    prop = "fwd" if op == "gemm" else draw(st.sampled_from(["fwd", "fwd", "bwd_d", "bwd_w"]))
    shapes = gemm_shapes if op == "gemm" else conv_shapes
    shape = draw(shapes(False))
    check = draw(st.one_of(st.none(), shapes(True)))
    types = draw(st.sampled_from(TYPES))
    post_ops = draw(st.lists(st.sampled_from(POST_OPS), max_size=3)) if prop == "fwd" else \
        draw(st.sampled_from([[], [], ["bias"]])) if prop == "bwd_w" else []
    hw = draw(st.sampled_from(TARGETS))
    knobs = []
    if draw(st.booleans()):
        knobs.append(f'fma = "{draw(st.sampled_from(["mad", "dpas", "dp4a", "fma", "mma"]))}"')
    k_dim = "k" if op == "gemm" else draw(st.sampled_from(["ic", "kh"]))
    if draw(st.booleans()):
        knobs.append(f'loop = "{k_dim}{draw(st.integers(1, 4))}"')
    if draw(st.booleans()):
        n_dim = "n" if op == "gemm" else ("oc" if prop != "bwd_d" else "ic")
        tg_dim = draw(st.sampled_from([n_dim, n_dim, k_dim]))  # K dims: K slicing through SLM
        knobs.append(f'tg = "{tg_dim}{draw(st.sampled_from([1, 2]))}"')
    ops = ", ".join(f'"{o}"' for o in post_ops)
    text = (f'[problem]\nop = "{op}"\nprop = "{prop}"\nshape = "{shape}"\ntypes = "{types}"\n'
            f'post_ops = [{ops}]\n[target]\nhw = "{hw}"\n[config]\n' + "\n".join(knobs) + "\n")
    if check is not None:
        text += f'[check]\nshape = "{check}"\n'
    return text


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(documents())
def test_accepted_configs_build_for_both_shapes_and_check_after_every_pass(text):
    spec, diagnostics = load_spec(text)
    assert not [d for d in diagnostics if d.code == "internal"], diagnostics
    errors = [d for d in diagnostics if d.severity == Severity.ERROR]
    assume(spec is not None and not errors)
    build_kernel(spec.problem, spec.config, spec.target)
    kernel = build_kernel(spec.check, spec.user_config, spec.target)
    # The interpreter runs every thread at once; keep launches small.
    assume(prod(kernel.grid) * prod(kernel.tg) <= 256)
    found = bisect(kernel, InterpreterCheck(spec.check, spec.check_seed, spec.check_tol))
    assert found.first_bad is None, (text, render_bisect(found.to_dict()))
