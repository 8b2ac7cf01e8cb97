"""Target data checked against independent arithmetic and published instruction semantics."""
from math import isclose

import pytest

from kdd.core.ir.types import bf16, f16, f32, f64, s8, s32, u8
from kdd.core.targets import FMA_KINDS, SM90, TARGETS, XE2, XEHPC, XEHPG, FmaShape, UnknownTargetError, get_target


def test_get_target_returns_each_known_target():
    names = ("xehpg", "xehpc", "xe2", "sm_90")
    assert [get_target(n).name for n in names] == list(names)
    assert set(TARGETS) == set(names)


def test_unknown_target_lists_known_names_and_suggests():
    with pytest.raises(UnknownTargetError) as err:
        get_target("xehpq")
    msg = str(err.value)
    assert "'xehpq'" in msg and "xehpg, xehpc, xe2, sm_90" in msg and "did you mean 'xehpg'" in msg
    with pytest.raises(KeyError):
        get_target("gfx942")


@pytest.mark.parametrize("target", [XEHPG, XEHPC, XE2], ids=lambda t: t.name)
def test_dpas_shape_matches_grf_width(target):
    # dpas: exec size = channels = one f32/s32 per channel in a dst row, and a dst row is one GRF;
    # systolic depth 8, each stage a dword per channel: K * element size = 32 bytes.
    shapes = target.shapes(fma="dpas")
    assert shapes
    grf = target.registers.reg_bytes
    for s in shapes:
        assert s.m == 8 and s.simd == s.n
        assert s.n * 4 == grf
        elem = 4 if s.math == "tf32" else s.a.size
        assert s.k * elem == 8 * 4
        # dst is rcount=8 rows of one GRF; src1 (B) is 8 dword rows of exec size: 8 GRFs.
        assert target.registers.regs_for(s.operand_bytes("c")) == 8
        assert target.registers.regs_for(s.operand_bytes("b")) == 8
        # src2 (A): 8 rows x 32 bytes = 256 B: 8 GRFs of 32 B, 4 of 64 B.
        assert s.operand_bytes("a") == 256
        assert s.flops == 2 * 8 * s.n * s.k


def test_dpas_k_per_type_on_xehpg():
    assert {(str(s.a), s.k) for s in XEHPG.shapes(fma="dpas")} == {("f16", 16), ("bf16", 16), ("s8", 32), ("u8", 32)}
    assert XEHPG.shapes(fma="dpas", a=f16, b=f16)[0].spelling == "dpas.8x8 (8|M0) :f :f :hf :hf"


# PTX ISA, mma.sync fragments: per lane, m16n8k16 .f16 A is four .f16x2 registers, B two, C/D four
# .f32; m16n8k32 .s8 A four .b32, B two, C four .s32; m16n8k8 .tf32 A four .b32, B two, C four .f32.
@pytest.mark.parametrize("a,b,acc,shape", [
    (f16, f16, f32, (16, 8, 16)), (bf16, bf16, f32, (16, 8, 16)), (s8, s8, s32, (16, 8, 32)),
    (u8, s8, s32, (16, 8, 32)), (f32, f32, f32, (16, 8, 8)),
])
def test_mma_fragments_per_lane(a, b, acc, shape):
    (s,) = SM90.shapes(fma="mma", a=a, b=b, acc=acc)
    assert (s.m, s.n, s.k) == shape
    regs = SM90.registers
    assert regs.reg_bytes == 32 * regs.lane_bytes
    assert [regs.regs_for(s.operand_bytes(op)) for op in "abc"] == [4, 2, 4]


def test_mma_f32_operands_compute_in_tf32():
    (s,) = SM90.shapes(fma="mma", a=f32)
    assert s.math == "tf32" and ".tf32.tf32." in s.spelling


def test_instruction_availability():
    assert "dpasw" in XEHPG.fma_kinds and "dpasw" not in XEHPC.fma_kinds  # no fused EUs on Xe-HPC
    assert not XEHPG.shapes(a=f64) and XEHPC.shapes(fma="mad", a=f64)  # DG2 has no FP64
    assert not [s for s in XEHPG.fma_shapes if s.math]  # no tf32 dpas on Xe-HPG
    assert XE2.simd_widths == (16, 32) and {s.simd for s in XE2.shapes(fma="dpas")} == {16}  # no SIMD8 on Xe2
    assert SM90.fma_kinds == ("mma", "fma")
    for t in TARGETS.values():
        assert set(t.fma_kinds) <= set(FMA_KINDS)
        assert set(t.fma_preference) <= set(t.fma_kinds)
        for s in t.fma_shapes:
            assert s.simd in t.simd_widths
        for fma in t.fma_kinds:
            assert t.simd_for(fma) in {s.simd for s in t.shapes(fma=fma)}


def test_simd_for_prefers_the_default_width():
    assert (XEHPG.simd_for("dpas"), XEHPG.simd_for("mad"), XEHPC.simd_for("dpas"), SM90.simd_for("mma")) \
        == (8, 16, 16, 32)
    with pytest.raises(ValueError, match="no 'mma'"):
        XEHPG.simd_for("mma")


def _onednn_max_tg(eus_per_core, regs, simd, max_wg=1024):
    # oneDNN hw_t::max_tg_size: min(EUs per core x threads per EU, work-group size / SIMD),
    # with 4 threads per EU and half the work-group size in large-GRF mode.
    large = regs > 128
    return min(eus_per_core * (4 if large else 8), (max_wg // 2 if large else max_wg) // simd)


@pytest.mark.parametrize("target,eus", [(XEHPG, 16), (XEHPC, 8), (XE2, 8)], ids=["xehpg", "xehpc", "xe2"])
def test_xe_group_limit_matches_onednn(target, eus):
    for regs in target.registers.modes:
        for simd in target.simd_widths:
            assert target.max_group_threads(regs, simd) == _onednn_max_tg(eus, regs, simd)


@pytest.mark.parametrize("regs", [16, 32, 40, 64, 96, 128, 168, 200, 255])
def test_sm90_group_limit_from_register_file(regs):
    # 64K registers per SM, allocated per warp in units of 256 (8 per thread); at most 1024 threads.
    per_warp = -(-regs // 8) * 8 * 32
    assert SM90.max_group_threads(regs, 32) == min(65536 // per_warp, 1024 // 32)


def test_register_allocation_rules():
    assert SM90.registers.allocated(255) == 256 and SM90.registers.allocated(17) == 24
    assert SM90.registers.allocation_unit == 256 and XEHPG.registers.allocation_unit == 1
    assert SM90.registers.allows(255) and not SM90.registers.allows(256)
    assert XEHPG.registers.allows(256) and not XEHPG.registers.allows(192)
    assert XEHPC.registers.regs_for(65) == 2 and XEHPG.registers.regs_for(64) == 2


def _rate(target, dtype, engine="matrix", device=0):
    return target.devices[device].peak(dtype, engine).value


def test_peaks_match_published_figures():
    # Intel ARK / press: Max 1550 839 TFLOPS BF16 XMX, 52.4 TFLOPS FP64 vector; Arc A770 at
    # 2.1 GHz: 32 Xe-cores x 16 XMX x 128 FP16 ops/clk; NVIDIA H100 SXM5 whitepaper figures.
    assert isclose(_rate(XEHPC, "bf16"), 839e12, rel_tol=1e-3)
    assert isclose(_rate(XEHPC, "f64", "vector"), 52.4e12, rel_tol=1e-3)
    assert isclose(_rate(XEHPG, "f16"), 32 * 16 * 128 * 2.1e9)
    assert isclose(_rate(XEHPG, "f32", "vector"), 512 * 8 * 2 * 2.1e9)
    # Hopper: tensor rates at 1.83 GHz, FMA rates at 1.98 GHz, 132 SMs.
    assert isclose(_rate(SM90, "f16"), 132 * 4096 * 1.83e9, rel_tol=1e-3)
    assert isclose(_rate(SM90, "s8"), 2 * _rate(SM90, "f16"), rel_tol=1e-3)
    assert isclose(_rate(SM90, "f32", "vector"), 132 * 128 * 2 * 1.98e9, rel_tol=1e-3)
    # The seed's B580 roofline: 2.9G x 20 Xe-cores x 8 x 32 x 4 x 2 = 118 T/s; ARK's 456 GB/s.
    assert isclose(_rate(XE2, "f16"), 2.9e9 * 20 * 8 * 32 * 4 * 2) and _rate(XE2, "s8") == 2 * _rate(XE2, "f16")
    assert XE2.device.name == "Arc B580" and XE2.device.bandwidth.value == 456e9
    assert [d.name for d in SM90.devices] == ["H200 SXM", "H100 SXM"]
    assert SM90.devices[0].bandwidth.value == 4.8e12 and SM90.devices[1].bandwidth.value == 3.35e12
    assert _rate(SM90, "f16", device=0) == _rate(SM90, "f16", device=1)


def test_every_figure_has_a_source():
    for t in TARGETS.values():
        assert t.registers.source and t.registers.reserved_source and t.slm.source
        for d in t.devices:
            for fig in (d.clock_mhz, d.bandwidth, *(p.rate for p in d.peaks)):
                assert fig.source and fig.value > 0


def test_missing_peak_names_what_exists():
    with pytest.raises(KeyError, match="no matrix peak for f64.*matrix:f16"):
        XEHPG.device.peak("f64")


def test_slm_and_assemblers():
    assert (XEHPG.slm.per_group, XEHPC.slm.per_group, SM90.slm.per_group) == (64 << 10, 128 << 10, 227 << 10)
    assert SM90.slm.per_core == 228 << 10
    assert "-p=12p71" in XEHPG.assembler and "-p=12p72" in XEHPC.assembler
    assert XE2.assembler[:3] == ("iga64-xe2", "-a", "-p=2") and XE2.slm.per_group == 128 << 10
    assert SM90.assembler[0] == "ptxas"


def test_fma_shape_rejects_bad_values():
    with pytest.raises(ValueError, match="unknown fma kind"):
        FmaShape("wmma", f16, f16, f32, 16, 16, 16, 32, "x")
    with pytest.raises(ValueError, match="positive"):
        FmaShape("mad", f32, f32, f32, 0, 8, 1, 8, "mad")
    with pytest.raises(ValueError, match="operand must be"):
        SM90.fma_shapes[0].operand_bytes("d")
