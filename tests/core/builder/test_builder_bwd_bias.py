"""Backward by weights with a ``bias`` post-op computes diff_bias alongside diff_weights.

The built kernels pass the check (both outputs, every element written) over
types, bias types, targets, groups, tails, strides and padding, default
configs and configs exercising each builder feature (split K, SLM, threads
along M, subtiles, batch tiles); mutations of the bias steps are caught; and
every optimization pass keeps the result exact.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from builder_cases import problem
from kdd.core.builder import BuildError, Origin, build_kernel
from kdd.core.builder import bias_grad
from kdd.core.config.defaults import resolve_config
from kdd.core.config.kernel_config import KernelConfig
from kdd.core.config.line import parse_config_line
from kdd.core.interp.check import check_kernel
from kdd.core.ir import Alloc, For, FuncCall, If, Let, walk
from kdd.core.ir.expr import BoolImm
from kdd.core.ir.funcs import Send, SendOp
from kdd.core.ir.stmt import seq
from kdd.core.problem import ConvShape, parse_post_ops, parse_shape
from kdd.core.spec import load_spec
from kernel_strategies import configs, shapes
from test_builder_random import assert_checks_if_built


def build(shape, types="f32", target="xehpg", post_ops="bias", line=""):
    p = problem(parse_shape(shape), "bwd_w", types, None, parse_post_ops(post_ops))
    gd = p.gemm_dims()
    return build_kernel(p, parse_config_line(line, [n for r in "bmnk" for n, _ in getattr(gd, r)]), target)


# (shape, types, bias post-op, target, config line; "" = default config)
CASES = [
    # default configs: f32/f16/bf16, bias in f32 or the source type, three targets
    ("mb2ic16ih6oc16oh6kh3ph1", "f32", "bias", "xehpg", ""),
    ("mb2ic16ih6oc16oh6kh3ph1", "f16", "bias:f16", "xehpg", ""),
    ("mb2ic16ih6oc16oh6kh3ph1", "bf16", "bias", "xehpg", ""),
    ("mb2ic16ih6oc32oh6kh3ph1", "f16", "bias", "sm_90", ""),
    ("mb2ic16ih6oc32oh6kh3ph1", "bf16", "bias:bf16", "sm_90", ""),
    ("mb2ic16ih6oc32oh6kh3ph1", "f32", "bias", "sm_90", ""),
    ("mb2ic16ih6oc17oh6kh3ph1", "bf16", "bias:bf16", "xehpc", ""),
    ("mb2ic16ih6oc17oh6kh3ph1", "f16", "bias", "xehpc", ""),
    # groups (bias index g * OC/G + oc) with an oc tail, strides, padding, dilation
    ("g2mb2ic8ih6oc34oh6kh3ph1", "f16", "bias:f16", "sm_90", ""),
    ("g3mb2ic6ih7oc51oh4kh3sh2ph1", "f32", "bias", "xehpg", ""),
    ("mb1ic8ih9oc17oh5kh3sh2dh1ph2", "bf16", "bias:bf16", "xehpc", ""),
    # integer diff_dst: exact s32 sums
    ("mb2ic16ih6oc32oh6kh3ph1", "s8", "bias:s32", "xehpg", ""),
    # split K across the grid: partial sums added atomically into a zeroed f32 bias
    ("ic32ih6oc16oh6kh3ph1", "f32", "bias", "sm_90", "fma=fma i=ic8oc32 l=mb1oh3ow6"),
    ("ic32ih6oc17oh6kh3ph1", "f16:f32:f16", "bias", "xehpg", "fma=mad simd=16 i=ic8kw3oc16ow2 T=ic2 l=oh3ow3"),
    # threads of a group along M and N sharing B through SLM; B subtiles; batch (group) tiles
    ("ic16ih6oc17oh6kh3ph1", "f32", "bias", "xehpg", "fma=mad simd=16 i=ic4kw3oc16ow6 T=ic2oc2 l=oh6 s=x1"),
    ("ic16ih6oc32oh6kh3ph1", "f16", "bias:f16", "xehpg", "fma=dpas simd=8 i=ic8kw3oc16mb2ow8 l=oh6 S=b2"),
    ("ic16ih6oc32oh6kh3ph1", "f16", "bias", "sm_90", "fma=mma i=ic16kw3oc16mb2ow8 l=oh6 S=b2"),
    ("g4mb2ic8ih6oc8oh6kh3ph1", "f32", "bias", "xehpg", "fma=mad simd=16 i=g2ic2oc16ow6 l=mb2oh6 u=oh2"),
]


@pytest.mark.parametrize("shape, types, post_ops, target, line", CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[2]}-{c[3]}-{c[4] or 'default'}" for c in CASES])
def test_bias_gradient_passes_the_check(shape, types, post_ops, target, line):
    kernel = build(shape, types, target, post_ops, line)
    bias = kernel.arg("bias")
    assert (bias.role, bias.dims, bias.dtype) == ("output", (("oc", kernel.problem.shape.oc),),
                                                  kernel.problem.post_ops[0].dt)
    result = check_kernel(kernel)
    assert result.ok, result
    assert result.unwritten == 0


def test_split_reduction_adds_the_bias_atomically_into_a_zeroed_buffer():
    kernel = build("ic32ih6oc16oh6kh3ph1", target="sm_90", line="fma=fma i=ic8oc32 l=mb1oh3ow6")
    bias_sends = [n for n in walk(kernel.body) if isinstance(n, FuncCall) and isinstance(n.func, Send)
                  and n.ops.mem.name == "bias"]
    assert bias_sends and all(s.func.op is SendOp.ATOMIC_ADD for s in bias_sends)
    assert kernel.arg("bias").zero_init and kernel.arg("wei").zero_init
    assert not build("ic32ih6oc16oh6kh3ph1", target="sm_90").arg("bias").zero_init  # whole K per group


def test_every_bias_step_has_an_origin_naming_post_ops():
    kernel = build("ic16ih6oc17oh6kh3ph1", line="fma=mad simd=16 i=ic4kw3oc16mb2ow6 T=ic2oc2 l=oh6 s=x1",
                   post_ops="bias:bf16")
    knobs = set(KernelConfig.__dataclass_fields__) | {"post_ops", None}
    steps = set()
    for n in walk(kernel.body):
        if isinstance(n, (Let, For, If, Alloc, FuncCall)):
            assert isinstance(n.origin, Origin) and n.origin.knob in knobs, n
            if n.origin.step.startswith("bias_grad"):
                assert n.origin.knob == "post_ops"
                steps.add(n.origin.step.split(".")[1])
    assert {"init", "reduce", "store", "bias_acc", "bias_part", "bias_out"} <= steps


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.filter_too_much,
                                                                 HealthCheck.too_slow])
@given(st.data())
def test_random_bwd_w_configs_with_bias_pass_the_check(data):
    """Random shapes, layouts, types, bias types and configs (SLM, subtiles, split K): every kernel the
    builder accepts computes both gradients."""
    shape = data.draw(shapes())
    assume(isinstance(shape, ConvShape))
    types = data.draw(st.sampled_from(["f32", "f16", "bf16", "s8", "f16:f32:f16", "bf16:f32:bf16"]))
    bias = data.draw(st.sampled_from(["bias", "bias:f16", "bias:bf16", "bias:s32"]))
    target = data.draw(st.sampled_from(["xehpg", "xehpc", "sm_90"]))
    tags = {t: data.draw(st.sampled_from(("any", "axb", "abx", "aBx16b"))) for t in ("src", "wei", "dst")}
    p = problem(shape, "bwd_w", types, tags, parse_post_ops(bias))
    assert_checks_if_built(p, data.draw(configs(p)), target)


def test_a_kernel_config_file_with_a_bwd_w_bias_checks():
    """What ``kdd check FILE`` does: the [check] problem, written knobs, defaults for the rest."""
    text = """[problem]
op = "conv"
prop = "bwd_w"
shape = "mb32ic128ih28oc128oh28kh3ph1"
types = "bf16:bf16:bf16"
post_ops = ["bias:bf16"]

[target]
hw = "xehpc"

[config]
tg = "oc2"

[check]
shape = "mb2ic16ih6oc17oh6kh3ph1"
"""
    spec, diagnostics = load_spec(text, "bwd_w_bias.kernel.toml")
    assert spec is not None, diagnostics
    kernel = build_kernel(spec.check, resolve_config(spec.check, spec.target, spec.user_config), spec.target)
    assert kernel.arg("bias").dims == (("oc", 17),)
    result = check_kernel(kernel)
    assert result.ok and result.unwritten == 0, result


@pytest.mark.parametrize("post_ops, line, message", [
    ("bias+bias:f16", "", "one bias gradient"),
])
def test_unbuildable_bias_gradients_raise_a_build_error(post_ops, line, message):
    with pytest.raises(BuildError, match=message):
        build("ic32ih6oc16oh6kh3ph1", "f16:f32:f16", "xehpg", post_ops, line)


# -- mutations: the check sees a wrong or missing bias ------------------------------------------------

def count_b_twice(mp):
    original = bias_grad.BiasGradient.accumulate
    mp.setattr(bias_grad.BiasGradient, "accumulate", lambda self, s: seq(original(self, s), original(self, s)))


def every_m_tile_owns_the_bias(mp):
    mp.setattr(bias_grad.BiasGradient, "_owned", lambda self, stmt, origin: stmt)


def bias_store_skipped(mp):
    original = bias_grad.BiasGradient.store
    mp.setattr(bias_grad.BiasGradient, "store", lambda self: If.make(BoolImm.make(False), original(self)))


MUTATIONS = [
    (count_b_twice, "mb2ic16ih6oc17oh6kh3ph1", "f16", "xehpg", ""),
    (count_b_twice, "ic16ih6oc32oh6kh3ph1", "f16", "sm_90", "fma=mma i=ic16kw3oc16mb2ow8 l=oh6 S=b2"),
    # under split K every M tile's partial sums would be added into the bias
    (every_m_tile_owns_the_bias, "ic32ih6oc16oh6kh3ph1", "f32", "sm_90", "fma=fma i=ic8oc32 l=mb1oh3ow6"),
    (bias_store_skipped, "g2mb2ic8ih6oc34oh6kh3ph1", "f32", "xehpg", ""),
]


@pytest.mark.parametrize("mutate, shape, types, target, line", MUTATIONS,
                         ids=[f"{m[0].__name__}-{m[1]}-{m[3]}" for m in MUTATIONS])
def test_mutated_bias_gradients_fail_the_check(monkeypatch, mutate, shape, types, target, line):
    assert check_kernel(build(shape, types, target, line=line)).ok
    with monkeypatch.context() as mp:
        mutate(mp)
        kernel = build(shape, types, target, line=line)
    result = check_kernel(kernel)
    assert not result.ok
    assert result.tensor == "bias"
    if mutate is bias_store_skipped:
        assert result.unwritten == kernel.problem.shape.oc


# -- the optimization pipeline keeps the bias exact ---------------------------------------------------

def _passes_kernels():
    """``tests/core/passes/passes_kernels.py`` (test folders are not packages)."""
    if "passes_kernels" not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "passes" / "passes_kernels.py"
        spec = importlib.util.spec_from_file_location("passes_kernels", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["passes_kernels"] = module
        spec.loader.exec_module(module)
    return sys.modules["passes_kernels"]


@pytest.mark.parametrize("shape, types, post_ops, target, line", [
    ("ic16ih6oc17oh6kh3ph1", "f32", "bias", "xehpg", "fma=mad simd=16 i=ic4kw3oc16ow6 T=ic2oc2 l=oh6 s=x2"),
    ("ic16ih6oc17oh6kh3ph1", "f16", "bias:f16", "xehpg", "fma=mad simd=16 i=ic4kw3oc16mb2ow6 l=oh6 p=x2"),
    ("mb2ic16ih6oc32oh6kh3ph1", "bf16", "bias:bf16", "sm_90", ""),
])
def test_every_pass_keeps_the_bias_gradient_exact(shape, types, post_ops, target, line):
    """SLM multi-buffering, prefetching and the rest move and rewrite the guarded bias steps
    without changing a bit of either output."""
    _passes_kernels().check_example_pipeline(build(shape, types, target, post_ops, line))


@pytest.mark.slow
@pytest.mark.parametrize("types,target", [("bf16:f32:bf16", "xehpg"), ("f16:f32:f16", "xehpg"),
                                          ("bf16:bf16:bf16", "xehpc"), ("f16:f32:f16", "xehpc"),
                                          ("f16", "sm_90"), ("bf16:bf16:bf16", "sm_90")])
def test_the_bias_gradient_of_narrow_data_compiles_and_its_assembly_checks(types, target):
    """An f16/bf16 diff_dst is widened to the f32 accumulator before its K sums (a reduce keeps its type):
    the kernel's code (Xe assembly; sm_90 PTX, whose generator sums a reduce across the lanes holding its
    elements) runs in kdd's simulator and matches the reference."""
    from kdd.core.engine import Engine, Source

    text = (f'[problem]\nop = "conv"\nprop = "bwd_w"\nshape = "mb2ic16ih6oc16oh6kh3ph1"\ntypes = "{types}"\n'
            f'post_ops = ["bias"]\n\n[target]\nhw = "{target}"\n')
    out = Engine().check(Source(text))
    assert (out["artifact"], out["verdict"]) == ("ptx" if target == "sm_90" else "asm", "ok"), out
