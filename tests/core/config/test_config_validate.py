"""Validation issues, one situation at a time."""
import pytest

from kdd.core.config import ConfigIssue, KernelConfig, parse_config_line, resolve_config, validate_config
from kdd.core.problem import problem_from_text
from kdd.core.targets import TARGETS

CONV = "mb32ic64ih56oc64oh56kh3ph1"


def _issues(line, target="xehpg", shape=CONV, types="f16", prop="fwd"):
    p = problem_from_text(shape, types=types, prop=prop)
    t = TARGETS[target]
    return validate_config(p, resolve_config(p, t, parse_config_line(line)), t)


def _find(issues, knob, words, severity="error"):
    hits = [i for i in issues if i.knob == knob and words in i.message and i.severity == severity]
    assert hits, [str(i) for i in issues]
    return hits[0]


def test_default_config_has_no_issues():
    assert _issues("") == []


@pytest.mark.parametrize("line,target,types,knob,words", [
    ("fma=mma", "xehpg", "f16", "fma", "xehpg has no 'mma' instruction (has: dpas, dpasw, mad, dp4a)"),
    ("fma=dpasw", "xehpc", "f16", "fma", "xehpc has no 'dpasw'"),
    ("fma=dpas", "xehpg", "f32", "fma", "does not multiply f32*f32"),
    ("simd=32", "xehpg", "f16", "simd", "simd=32 is not a SIMD width of xehpg (widths: 8, 16)"),
    ("simd=16", "xehpg", "f16", "simd", "dpas on xehpg needs simd=8, got simd=16"),
    ("regs=192", "xehpg", "f16", "regs", "allowed: 128 or 256"),
    ("regs=300", "sm_90", "f16", "regs", "allowed: 16..255"),
    ("i=mb32oc32ic16 T=oc8ow8", "xehpc", "f16", "tg", "thread group 8x8x1 = 64 threads; xehpc allows 32"),
    ("fma=dpasw i=mb16oc8ic16 T=oc1ow4", "xehpg", "f16", "tg", "X=1 must be even"),
    ("i=mb16oc12ic16", "xehpg", "f16", "iter", "N=12 per thread, not a multiple of dpas's N=8"),
    ("i=mb12oc16ic16 S=a2", "xehpg", "f16", "iter", "M=12 per thread, not a multiple of dpas's M=8"),
    ("i=mb32oc8ic8", "xehpg", "f16", "iter", "K=8 per thread, not a multiple of dpas's K=16"),
    ("i=mb32oc8ic16 S=a2b2", "xehpg", "f16", "subtiles", "split A or B, not both"),
    ("i=mb32oc8ic16 S=b2", "xehpg", "f16", "subtiles", "not multiples of dpas's N=8"),
    ("i=mb32oc8ic16 T=oc4ow4 p=x2", "sm_90", "f16", "prefetch", "prefetch is an Xe knob"),
    ("i=mb32oc8ic16 T=oc4kh2 l=kh3", "xehpg", "f16", "loop", "loop runs 3 iterations of 2 'kh'"),
    ("i=mb32oc8ic16 l=ow2", "xehpg", "f16", "loop", "loop blocks 'ow', a M dim"),
    ("i=mb32oc8ic16 T=oc4ow4 u=ic3", "xehpg", "f16", "unroll", "unroll ic3 does not divide loop ic4"),
    ("i= T=oc4ow4", "xehpg", "f16", "iter", "N=1 per thread, not a multiple"),
    ("i=mb64ow8oc8ic64 T=oc8ow8 s=x3", "xehpg", "f16", "slm", "SLM overflow: 1597440 > 65536 bytes per thread group (slm_a: 4096*64*2*3"),
])
def test_errors(line, target, types, knob, words):
    _find(_issues(line, target, types=types), knob, words)


def test_k_slices_with_a_bias_gradient_are_refused():
    issues = _issues("fma=mad simd=16 i=ic16oc16 T=mb2", shape="mb4ic16ih6oc16oh6kh3ph1", types="f32", prop="bwd_w")
    assert not [i for i in issues if i.severity == "error"]
    p = problem_from_text("mb4ic16ih6oc16oh6kh3ph1", types="f32", prop="bwd_w", post_ops="bias")
    t = TARGETS["xehpg"]
    found = validate_config(p, resolve_config(p, t, parse_config_line("fma=mad simd=16 i=ic16oc16 T=mb2")), t)
    _find(found, "tg", "bias gradient of bwd_w is not summed")


def test_m_per_thread_is_padded_to_the_instruction():
    issues = _issues("i=mb12oc8ic16")
    _find(issues, "iter", "M=12 per thread, padded to 16 for dpas's M=8: 4 of 16 rows", "warning")
    assert not [i for i in issues if i.severity == "error"]


def test_knobs_read_from_onednn_lines():
    p = problem_from_text(CONV, types="f16", tags={"src": "axb"})
    t = TARGETS["xehpg"]

    def issues(line):
        return [i for i in validate_config(p, resolve_config(p, t, parse_config_line(line)), t) if i.knob != "regs"]
    assert issues("src=acdb") == []  # acdb is axb for a 2D convolution
    _find(issues("src=abx"), "src_layout", 'src=abx disagrees with [problem] src = "axb"')
    _find(issues("dst=aBx16b"), "dst_layout", "kept but not generated", "warning")
    _find(issues("l=ic2 global-reduction=0 s=x0"), "global_reduction", "loop leaves K to the kernel grid")
    assert issues("simd=8 vec=8") == [] and issues("simd=8") == []  # vec defaults to simd
    for line, knob in (("walk-order=oc4,mb2,", "walk_order"), ("pad-slm=1", "pad_slm"), ("simd=8 vec=16", "vec"),
                       ("bwd-d-optimize=skip_strided_dh", "bwd_d_optimize"), ("s=x3.g0.v1", "slm")):
        found = issues(line)
        _find(found, knob, "kept but not generated", "warning")
        assert not [i for i in found if i.severity == "error"]


def test_unknown_dims_suggest_the_closest():
    issue = _find(_issues("i=mb32oc8ic16 l=icc4"), "loop", "'icc', which is not a dimension of this conv problem")
    assert "did you mean 'ic'" in issue.message


def test_register_overflow_is_an_error():
    # the floor: C 128 + A 32 + B 32 GRFs > 128
    _find(_issues("i=mb32oc32ic16 T=oc4ow4 regs=128"), "regs", "alone need 192 > 128")


def test_a_written_iter_over_the_default_registers_takes_large_grf_mode():
    p = problem_from_text(CONV, types="f16", prop="fwd")
    t = TARGETS["xehpg"]
    assert resolve_config(p, t, parse_config_line("i=mb32oc32ic16 T=oc4ow4")).regs == 256
    assert resolve_config(p, t, parse_config_line("i=mb8oc32ic16 T=oc4ow4")).regs == 128  # its estimate fits
    assert [i for i in _issues("i=mb32oc32ic16 T=oc4ow4") if i.knob == "regs"] == []


def test_padding_and_split_k_are_not_errors():
    issues = _issues("i=mb32oc8ic16 T=oc4ow4 l=ic2kh3kw3 s=x3", shape=CONV)
    _find(issues, "loop", "split across 2 thread groups", "info")
    padded = _issues("i=mb32oc8ic16 T=oc3ow4")
    _find(padded, "tg", "block 24 of 'oc' does not divide 64", "warning")
    assert all(i.severity != "error" for i in padded)
    big = _issues("i=mb64oc8ic16 T=oc4ow2", shape="mb16ic64ih8oc32oh8kh3ph1")
    _find(big, "iter", "covers 64 of 'mb' but it is 16: 48 of 64 computed 'mb' are padding (25% useful)", "warning")


@pytest.mark.parametrize("line, hw, types, words", [
    ("fma=mma", "sm_90", "f32", "not f32*f32 (computed in tf32); use fma=fma"),
    ("fma=mma", "sm_90", "f64", "not f64*f64; use fma=fma"),
])
def test_matrix_forms_the_builder_does_not_generate_are_errors_at_the_fma_knob(line, hw, types, words):
    _find(_issues(line, hw, types=types, shape="m1024n1024k1024"), "fma", words)


def test_tf32_dpas_on_xehpc_builds_with_a_precision_warning():
    issues = _issues("fma=dpas", "xehpc", types="f32", shape="m1024n1024k1024")
    _find(issues, "fma", "dpas computes f32*f32 in tf32: reduced precision", "warning")
    assert not [i for i in issues if i.severity == "error"], [str(i) for i in issues]


def test_f16_mad_accumulates_in_f32_as_built_so_nothing_warns_of_precision():
    issues = _issues("fma=mad i=n16k8", "xehpg", types="f16", shape="m1024n1024k1024")
    assert not [i for i in issues if i.knob == "fma"], [str(i) for i in issues]


def test_needs_a_complete_config():
    p = problem_from_text("m64n64k64")
    with pytest.raises(ValueError, match="complete config"):
        validate_config(p, KernelConfig(fma="mad"), TARGETS["xehpg"])


def test_issue_rejects_unknown_severity():
    with pytest.raises(ValueError, match="severity"):
        ConfigIssue("fma", "x", "fatal")
    assert str(ConfigIssue("tg", "too big")) == "error: tg: too big"


@pytest.mark.parametrize("line,target,knob", [
    ("tile=m128n128k64", "xehpg", "tile"), ("cluster=m2n1", "sm_90", "cluster"), ("stages=6", "xehpc", "stages"),
    ("epilogue=tma", "sm_90", "epilogue"), ("swizzle=4", "xehpg", "swizzle"), ("splits=2", "sm_90", "splits")])
def test_schedule_knobs_under_the_classic_schedule_warn_that_nothing_reads_them(line, target, knob):
    issue = _find(_issues(line, target), knob, "has no effect with schedule=classic", "warning")
    assert issue.message.startswith(f"{knob}=")
    assert not [i for i in _issues("stages=4", target) if i.knob == "stages"]  # the default says nothing
    p = problem_from_text("m256n256k256", types="f16:f16:f32")
    t = TARGETS["sm_90"]
    read = validate_config(p, resolve_config(p, t, parse_config_line(f"schedule=tma {line}")), t)
    assert not [i for i in read if "no effect" in i.message]
