"""The PTX simulator on hand-written PTX: conversions round and saturate as the PTX ISA says, and what
it does not model is a SimulatorGap naming the line, never a result."""
import numpy as np
import pytest

from kdd.core.ptxsim import run_ptx
from kdd.core.ptxsim.alu import alu, read, write
from kdd.core.xesim.errors import Fault, SimulatorGap

LAUNCH = {"grid": [1, 1, 1], "block": [32, 1, 1], "shared_bytes": 0}


def _kernel(body: str) -> str:
    return (".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p_src, .param .u64 p_dst)\n"
            "{\n\t.reg .b32 %r<9>;\n\t.reg .f32 %f<9>;\n\t.reg .b64 %rd<9>;\n"
            "\tld.param.u64 %rd1, [p_src];\n\tld.param.u64 %rd2, [p_dst];\n"
            "\tmov.u32 %r1, %tid.x;\n\tmul.wide.u32 %rd3, %r1, 4;\n" + body + "\tret;\n}\n")


def _run(body: str, src: np.ndarray) -> np.ndarray:
    dst = np.full(32 * 4, 0xFF, dtype=np.uint8)
    run_ptx(_kernel(body), LAUNCH, [src.astype(np.float32).view(np.uint8).copy(), dst])
    return dst.view(np.int32)


def test_float_to_int_conversions_round_as_named_and_saturate():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4999, -2.6, 127.5, 128.0, -129.0, 1e10, np.nan] + [0.0] * 20,
                 dtype=np.float32)
    bits = write(x, "f32")
    assert list(read(alu("cvt.rni.s32.f32", [bits]), "s32")[:12]) == \
        [0, 2, 2, 0, -2, 2, -3, 128, 128, -129, 2**31 - 1, 0]
    assert list(read(alu("cvt.rzi.s32.f32", [bits]), "s32")[:7]) == [0, 1, 2, 0, -1, 2, -2]
    assert list(read(alu("cvt.rni.sat.s8.f32", [bits]), "s8")[:10]) == [0, 2, 2, 0, -2, 2, -3, 127, 127, -128]
    assert list(read(alu("cvt.rni.u8.f32", [bits]), "u8")[:10]) == [0, 2, 2, 0, 0, 2, 0, 128, 128, 0]
    assert list(read(alu("cvt.rmi.s32.f32", [bits]), "s32")[:4]) == [0, 1, 2, -1]


def test_int_to_int_wraps_unless_saturating():
    v = write(np.array([300, -200, 127, -1] + [0] * 28), "s32")
    assert list(read(alu("cvt.s8.s32", [v]), "s8")[:4]) == [44, 56, 127, -1]
    assert list(read(alu("cvt.sat.s8.s32", [v]), "s8")[:4]) == [127, -128, 127, -1]
    assert list(read(alu("cvt.u16.u32", [v]), "u16")[:2]) == [300, 65336]


def test_a_kernel_stores_converted_values_through_global_memory():
    body = ("\tadd.s64 %rd4, %rd1, %rd3;\n\tadd.s64 %rd5, %rd2, %rd3;\n\tld.global.f32 %f1, [%rd4];\n"
            "\tcvt.rni.s32.f32 %r2, %f1;\n\tst.global.b32 [%rd5], %r2;\n")
    src = np.arange(32) - 15.5
    assert list(_run(body, src)) == list(np.rint(src).astype(np.int32))


def test_an_opcode_outside_the_model_is_a_gap_naming_its_line():
    body = "\tex2.approx.f32 %f2, %f1;\n"
    with pytest.raises(SimulatorGap, match=r"line 1\d: ex2.approx.f32 %f2, %f1;"):
        _run(body, np.zeros(32))


def test_a_store_outside_the_buffers_is_a_fault_not_a_gap():
    body = "\tadd.s64 %rd5, %rd2, 4096;\n\tst.global.b32 [%rd5], %r1;\n"
    with pytest.raises(Fault, match="out of bounds") as info:
        _run(body, np.zeros(32))
    assert not isinstance(info.value, SimulatorGap)


@pytest.mark.parametrize("types", ["u8", "s8:s8:s8"])
def test_sm90_code_saturates_sums_past_the_narrow_destination(types):
    """u8 sums of 64 products of 1..8 pass 255: the PTX clamps them (cvt.sat.u8.s32), as the IR's
    reorder does; before, cvt.sat.u32.s32 then cvt.u32.u8 kept the low byte (found by the differential
    sweep)."""
    from kdd.core.builder import build_kernel
    from kdd.core.codegen.ptx import generate_ptx
    from kdd.core.config.defaults import resolve_config
    from kdd.core.passes.kernel_pipeline import run_pipeline
    from kdd.core.problem import problem_from_text
    from kdd.core.ptxsim import check_ptx
    from kdd.core.targets import get_target

    target = get_target("sm_90")
    p = problem_from_text("m16n8k64", types=types)
    kernel = build_kernel(p, resolve_config(p, target), target)
    listing = generate_ptx(kernel, run_pipeline(kernel).final, target, check=False)
    assert "cvt.sat." + types[:2] + ".s32" in listing.asm
    out = check_ptx(kernel, {"asm": listing.asm, "launch": listing.launch})
    assert out["ok"] and out["unwritten"] == 0, out


def test_fma_rounds_once_where_float64_then_f32_would_round_twice():
    # 2^-24 (1 + 2^-18) (1 - 2^-18) + (1 + 2^-23) = 1 + 2^-23 + 2^-24 - 2^-60: just below the midpoint of
    # 1 + 2^-23 and 1 + 2^-22, so fma gives the first; float64 would round to the midpoint, f32 then to even
    a, b, c = (write(np.full(32, v), "f32") for v in (2.0 ** -24 * (1 + 2.0 ** -18), 1 - 2.0 ** -18, 1 + 2.0 ** -23))
    assert read(alu("fma.rn.f32", [a, b, c]), "f32")[0] == np.float32(1 + 2.0 ** -23)
    minus_a, minus_c = (write(-read(v, "f32"), "f32") for v in (a, c))
    assert read(alu("fma.rn.f32", [minus_a, b, minus_c]), "f32")[0] == np.float32(-1 - 2.0 ** -23)
