"""Wrong results and builder/validation disagreements found by a hostile new user, one test each.

Each case is a kernel config as a user writes it, read by ``load_spec``; what
validation accepts must build and check, what cannot build must be an error
diagnostic at a position before building.
"""
from __future__ import annotations

import numpy as np
import pytest

from kdd.core.builder import build_kernel
from kdd.core.interp.check import CheckTooLarge, check_kernel
from kdd.core.interp.reference import reference
from kdd.core.ir.printer import to_text
from kdd.core.problem import parse_shape, problem_from_text
from kdd.core.problem.post_ops import post_op_arg_name
from kdd.core.spec import Severity, load_spec


def doc(shape, types="f32", hw="xehpg", op="gemm", post_ops=(), config="", check="", tags=""):
    ops = ", ".join(f'"{p}"' for p in post_ops)
    return (f'[problem]\nop = "{op}"\nshape = "{shape}"\ntypes = "{types}"\npost_ops = [{ops}]\n{tags}'
            f'[target]\nhw = "{hw}"\n[config]\n{config}\n[check]\n{check}\n')


def spec_of(text):
    spec, diagnostics = load_spec(text)
    errors = [d for d in diagnostics if d.severity == Severity.ERROR]
    return spec, errors, diagnostics


def checked(spec):
    kernel = build_kernel(spec.check, spec.user_config, spec.target)
    return kernel, check_kernel(kernel, spec.check, seed=spec.check_seed, tol=spec.check_tol)


# -- wrong results ------------------------------------------------------------------------------

@pytest.mark.parametrize("hw, op, shape, post_ops", [
    ("xehpc", "gemm", "m16n16k16", ["scale:0.1"]),
    ("sm_90", "gemm", "m16n16k16", ["scale:0.25"]),
    ("xehpc", "conv", "mb1ic8ih6oc8oh6kh3ph1", ["tanh"]),
])
def test_f64_problems_accumulate_and_post_process_in_f64(hw, op, shape, post_ops):
    spec, errors, diagnostics = spec_of(doc(shape, "f64", hw, op, post_ops))
    assert not errors and not [d for d in diagnostics if "precision" in d.message]
    kernel, result = checked(spec)
    assert ".f32" not in to_text(kernel.body)
    # Full-mantissa f64 inputs: an f32 step anywhere would miss 1e-12 by orders of magnitude.
    assert result.ok and result.tol == 1e-12, result


def test_two_bias_post_ops_read_two_arguments():
    spec, errors, _ = spec_of(doc("m16n16k16", "f16", post_ops=["bias", "bias:f16"]))
    assert not errors
    kernel, result = checked(spec)
    names = [a.name for a in kernel.args]
    assert len(names) == len(set(names)) and {"bias0", "bias1"} <= set(names)
    assert {a.name: str(a.dtype) for a in kernel.args if a.name.startswith("bias")} == {"bias0": "f32",
                                                                                          "bias1": "f16"}
    assert result.ok, result


def test_post_op_argument_names_are_unique_in_any_chain():
    p = problem_from_text("m8n8k8", post_ops="bias+add:f32+bias:f16+sum+mul:f32:per_oc+bias")
    names = [post_op_arg_name(p.post_ops, k) for k in range(len(p.post_ops))]
    tensors = [n for n in names if n not in (None, "dst")]
    assert len(tensors) == len(set(tensors)) == 5


def test_integer_destinations_round_like_the_kernel_s_f32_post_ops():
    spec, errors, _ = spec_of(doc("m8n18k3", "s8:s8:s32", post_ops=["gelu_erf", "scale:0.25"]))
    assert not errors
    _, result = checked(spec)
    assert result.ok and result.rel_err == 0, result


def test_the_integer_reference_rounds_each_post_op_step_to_f32():
    # gelu_erf(6) is 5.99999999408 in float64 and 6.0 in f32; times 0.25 that is 1.5: ties to even 2.
    p = problem_from_text("m1n1k1", types="s8:s8:s32", post_ops="gelu_erf+scale:0.25")
    out = reference(p, {"src": np.array([[2.0]]), "wei": np.array([[3.0]])})["dst"]
    assert out[0, 0] == 2


# -- validation agrees with the builder --------------------------------------------------------

@pytest.mark.parametrize("hw", ["xehpg", "xehpc", "sm_90"])
@pytest.mark.parametrize("types", ["u8:s8:s32", "s8:u8:s32", "u8:s8:f32"])
def test_mixed_signedness_int8_builds_with_the_matrix_instruction_and_checks(hw, types):
    spec, errors, _ = spec_of(doc("m16n16k64", types, hw))
    assert not errors and spec.config.fma in ("dpas", "mma")
    _, result = checked(spec)
    assert result.ok, result


@pytest.mark.parametrize("hw, fma, types", [("sm_90", "mma", "f32"), ("sm_90", "mma", "f64")])
def test_matrix_forms_not_generated_are_errors_on_the_fma_knob(hw, fma, types):
    text = doc("m64n64k64", types, hw, config=f'fma = "{fma}"')
    _, errors, _ = spec_of(text)
    assert [(e.range.start.line, e.code) for e in errors] == [(8, "feasibility")]
    assert f"kdd generates {fma} for f16, bf16 or 8-bit integer sources" in errors[0].message


def test_tf32_dpas_builds_and_checks_within_the_tf32_tolerance():
    spec, errors, _ = spec_of(doc("m64n64k64", "f32", "xehpc", config='fma = "dpas"'))
    assert not errors and spec.config.fma == "dpas"
    _, result = checked(spec)
    assert result.ok and 1e-5 < result.rel_err <= 4e-3, result


@pytest.mark.parametrize("hw, types", [("xehpc", "f32"), ("sm_90", "f32"), ("sm_90", "f64")])
def test_their_defaults_pick_an_instruction_that_builds(hw, types):
    spec, errors, _ = spec_of(doc("m32n32k32", types, hw))
    assert not errors
    assert checked(spec)[1].ok


@pytest.mark.parametrize("types, post_ops, words", [
    ("f32", ["relu"], "applies the post-ops"),
    ("f16", [], "converts them to f16"),
])
def test_split_k_that_atomics_cannot_finish_is_finished_by_the_last_group(types, post_ops, words):
    text = doc("m16n16k256", types, post_ops=post_ops, config='iter = "m8n16k16"\nloop = "k2"')
    spec, errors, diagnostics = spec_of(text)
    assert not errors
    assert any(words in d.message and d.range.start.line == 9 and d.severity == Severity.INFORMATION
               for d in diagnostics), diagnostics
    assert checked(spec)[1].ok


def test_knobs_that_fail_only_the_check_shape_say_so():
    text = doc("mb2ic32ih8oc16oh8kh3ph1", "f16:f16:f32", op="conv",
               config='loop = "kh3kw3ic2"\nglobal_reduction = false', check='shape = "mb2ic64ih8oc16oh8kh3ph1"')
    _, errors, _ = spec_of(text)
    assert len(errors) == 1 and errors[0].range.start.line == 9
    assert "global-reduction=0" in errors[0].message and "[check] shape" in errors[0].message


def test_layout_tags_are_validated_against_the_check_shape():
    text = doc("b2m16n16k16", tags='wei = "acb"\n', check='shape = "m16n16k16"')
    _, errors, _ = spec_of(text)
    assert [(e.range.start.line, e.code) for e in errors] == [(11, "problem")]
    assert "wei = 'acb' does not fit this shape" in errors[0].message


def test_a_loop_of_only_padding_is_an_error_before_building():
    text = doc("mb2ic8ih8oc8oh8kh3ph1", op="conv", config='loop = "kh1000000"')
    _, errors, _ = spec_of(text)
    assert [(e.range.start.line, e.range.start.character) for e in errors] == [(8, 7)]
    assert "999997 would compute only padding (at most kh3)" in errors[0].message


# -- bounded checks ---------------------------------------------------------------------------

def test_a_large_problem_without_check_is_checked_at_a_reduced_shape():
    spec, errors, diagnostics = spec_of(doc("m4096n4096k4096", "f16").replace("[check]\n", ""))
    assert not errors
    info = [d for d in diagnostics if d.severity == Severity.INFORMATION and "the check runs it at a reduced shape" in d.message]
    assert len(info) == 1 and info[0].range.start.line == 2
    assert spec.check.shape.canonical() == "128x128:128x128" and spec.problem.shape.m == 4096  # two blocks of 64
    assert checked(spec)[1].ok


def test_a_check_over_the_bound_is_refused_before_interpreting():
    spec, _, diagnostics = spec_of(doc("m16n16k16", check='shape = "m1024n1024k1024"'))
    assert any(d.severity == Severity.WARNING and d.range.start.line == 10 and "refused" in d.message
               for d in diagnostics)
    kernel = build_kernel(spec.check, spec.user_config, spec.target)
    with pytest.raises(CheckTooLarge, match="1073741824 multiply-adds"):
        check_kernel(kernel, spec.check)
