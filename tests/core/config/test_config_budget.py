"""Register and SLM budgets: seed-002 arithmetic, formulas, and overflow flags."""
from math import ceil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.config import (KernelConfig, estimate_budget, operands, parse_config_line, resolve_config)
from kdd.core.problem import problem_from_text
from kdd.core.targets import SM90, TARGETS, XEHPC, XEHPG
from kdd_config_strategies import problems


def _budget(shape, line, target, types="f16:f16:f32", prop="fwd"):
    p = problem_from_text(shape, types=types, prop=prop)
    return estimate_budget(p, resolve_config(p, target, parse_config_line(line)), target)


def test_seed_002_register_arithmetic():
    # Seed 002 (64-byte GRF): "C: 32*64*4/64=128", "i8->f16: 32*16*2/64=16"; 32x32 tile "C: 32*32*4/64=64".
    b = _budget("m512n2048k128", "i=m32n64k16", XEHPC)
    assert b.line("c").amount == 128 and str(b.line("c")) == "c: 32*64*4/64 = 128"
    assert str(b.line("a")) == "a: 32*16*2/64 = 16"
    assert _budget("m512n2048k128", "i=m32n32k16", XEHPC).line("c").formula == "32*32*4/64 = 64"


def test_sm90_counts_registers_per_lane():
    # A 64x64 f32 accumulator tile over a 32-lane warp is 128 f32 per lane.
    b = _budget("m1024n1024k1024", "i=m64n64k16", SM90)
    assert b.line("c").amount == 64 * 64 // 32 and b.reg_unit == "32-bit registers per lane"
    assert b.line("headers").title == "address registers"


def test_dpasw_shares_a_and_subtiles_split():
    base = _budget("m1024n1024k1024", "fma=dpas i=m32n32k16", XEHPG).line("a").amount
    assert _budget("m1024n1024k1024", "fma=dpasw i=m32n32k16", XEHPG).line("a").amount == base // 2
    b = _budget("m1024n1024k1024", "i=m32n32k16 S=b2", XEHPG)
    assert b.line("b").formula == "16*32*2/32/2 = 16"


def test_a_thread_tile_over_groups_holds_every_groups_tiles():
    # oneDNN's xehpg depthwise line i=g64kw3mb8: 64 groups of an 8x1 f32 C each, 8x3 f16 A, 3x1 f16 B.
    b = _budget("mb128g144ic144ih151oc144oh75kh3sh2ph0", "simd=8 fma=mad l=kh3 T=x i=g64kw3mb8 s=x0", XEHPG,
                types="f16")
    assert str(b.line("c")) == "c: 64*8*1*4/32 = 64" and b.line("a").amount == 64 * 8 * 3 * 2 // 32
    assert b.reg_total > 128  # over the default registers: the config takes large-GRF mode as oneDNN retries


def test_headers_and_temps():
    b = _budget("m1024n1024k1024", "i=m32n32k16 T=m2n2 s=x3 P=r", XEHPG, types="f16")
    assert b.line("headers").amount == 7  # A, B, C, gmem and SLM copies of A and B, one header each
    assert b.line("temps").formula == "min(32*32*2,256)/32 = 8"  # f32 accumulators stored as f16
    assert _budget("m1024n1024k1024", "i=m32n32k16", XEHPG, types="f32").line("temps").amount == 0


def test_slm_lines_and_overflow():
    b = _budget("m4096n4096k4096", "i=m32n32k32 T=m4n4 s=x3", XEHPC)
    assert str(b.line("slm_a")) == "slm_a: 128*32*2*3 = 24576"
    assert b.slm_total == 2 * 24576 and not b.issues()
    big = _budget("m4096n4096k4096", "i=m64n64k64 T=m4n4 s=x3", XEHPG)
    kinds = {i.knob for i in big.issues()}
    assert kinds == {"regs", "slm"}
    assert "register budget overflow" in str(big.issues()[0]) and "(c 512, a 256, b 256)" in big.issues()[0].message
    assert "all:" in str(big) and "slm:" in str(big)


def test_k_slices_widen_the_group_tile_and_add_partial_c_tiles():
    # T=k4: four threads split each K block of 4*32; three of them park a 32x32 f32 C tile in SLM.
    b = _budget("m4096n4096k4096", "i=m32n32k32 T=m2n2k4 s=x2", XEHPC)
    assert str(b.line("slm_a")) == "slm_a: 64*128*2*2 = 32768"
    assert str(b.line("slm_c")) == "slm_c: 3*4*32*32*4 = 49152"
    assert b.tiling.k_slices == 4 and b.tiling.tg_grid == (2, 2, 4) and b.tiling.k_group == 4096


def test_needs_a_complete_config():
    p = problem_from_text("m64n64k64")
    with pytest.raises(ValueError, match="unset: fma"):
        estimate_budget(p, KernelConfig(), XEHPG)


@settings(max_examples=200, deadline=None)
@given(problems(), st.sampled_from(sorted(TARGETS)))
def test_lines_follow_independent_arithmetic(problem, name):
    target = TARGETS[name]
    config = resolve_config(problem, target)
    b = estimate_budget(problem, config, target)
    gemm, ops = problem.gemm_dims(), operands(problem)
    m = config.iter.product(d for d, _ in gemm.m)
    n = config.iter.product(d for d, _ in gemm.n)
    k = config.iter.product(d for d, _ in gemm.k)
    bt = config.iter.product(d for d, _ in gemm.b)  # every batch element (group) its own C, A and B
    unit = target.registers.reg_bytes
    assert b.line("c").amount == ceil(bt * m * n * ops.acc.size / unit)
    assert b.line("a").amount == ceil(bt * m * k * ops.a.size / unit)
    assert b.line("b").amount == ceil(bt * k * n * ops.b.size / unit)
    assert b.line("reserved").amount == target.registers.reserved
    assert b.reg_total == sum(x.amount for x in b.regs)
    for x in b.regs:
        assert x.formula.split()[-1] == str(x.amount)
    slm = config.slm
    tg_m = m * config.tg.product(d for d, _ in gemm.m)
    tg_n = n * config.tg.product(d for d, _ in gemm.n)
    expect = slm.bufs * (slm.a * tg_m * k * ops.a.size + slm.b * k * tg_n * ops.b.size)
    assert b.slm_total == expect
    assert bool(b.issues()) == (b.reg_total > config.regs or b.slm_total > target.slm.per_group)


def test_post_op_operand_tiles_count_beyond_the_main_loop_buffers():
    # A binary post-op loads a whole C tile in C's layout: 128 f32 x 16 = 128 GRFs on xehpc beside C's 128,
    # of which the main loop's A and B buffers give back only part.
    p = problem_from_text("mb4096ic16ih3oc16oh3kh3ph1", types="f16", post_ops=["add:f32:per_tensor", "sum"])
    b = estimate_budget(p, resolve_config(p, XEHPC, parse_config_line("fma=dpas simd=16 i=mb128oc16ic16")), XEHPC)
    main = sum(b.line(x).amount for x in ("a", "b", "slm_load"))
    assert b.line("post_ops").amount == 128 - main > 0, b
    assert b.reg_total > b.reg_capacity      # so the defaults would not pick this tile
    plain = problem_from_text("mb4096ic16ih3oc16oh3kh3ph1", types="f16", post_ops=["relu"])
    with pytest.raises(KeyError):           # an eltwise chain loads nothing: no line
        estimate_budget(plain, resolve_config(plain, XEHPC, parse_config_line("i=mb128oc16ic16")), XEHPC).line("post_ops")


def test_defaults_with_binary_post_ops_fit_the_allocation():
    from kdd.core.engine import Engine
    from kdd.core.engine.engine import Source
    text = ('[problem]\nop = "conv"\nshape = "mb4096ic16ih3oc16oh3kh3ph1"\ntypes = "f16"\n'
            'post_ops = ["add:f32:per_tensor", "mul:f32:common", "max:f32:per_oc", "sum"]\n[target]\nhw = "xehpc"\n')
    out = Engine().compile(Source(text), emit="stats")
    assert not [d for d in out["diagnostics"] if d["severity"] == "error"], out["diagnostics"]
