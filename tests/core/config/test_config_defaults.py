"""The defaults heuristic: choices per target and types, completeness, fit, and user knobs kept."""
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kdd.core.config import (KernelConfig, default_config, derive_tiling, estimate_budget, operands,
                             parse_config_line, resolve_config, validate_config)
from kdd.core.config.defaults import MIN_FMAS_PER_ITER, spread
from kdd.core.problem import problem_from_text
from kdd.core.targets import TARGETS
from kdd_config_strategies import configs, problems


@pytest.mark.parametrize("target,types,fma,simd,regs", [
    ("xehpg", "f16", "dpas", 8, 256), ("xehpg", "bf16", "dpas", 8, 256), ("xehpg", "s8:s8:s32", "dpas", 8, 256),
    ("xehpg", "f32", "mad", 16, 128), ("xehpc", "f16", "dpas", 16, 256), ("xehpc", "f32", "mad", 16, 128),
    ("xehpc", "u8:s8:s32", "dpas", 16, 256), ("sm_90", "f16", "mma", 32, 255), ("sm_90", "s8:s8:s32", "mma", 32, 255),
    ("sm_90", "f32", "fma", 32, 255), ("sm_90", "bf16:bf16:f32", "mma", 32, 255),
])
def test_instruction_and_execution_choices(target, types, fma, simd, regs):
    c = default_config(problem_from_text("mb32ic64ih28oc64kh3ph1", types=types), TARGETS[target])
    assert (c.fma, c.simd, c.regs) == (fma, simd, regs)


def test_large_problem_on_xehpg():
    p = problem_from_text("mb32ic64ih56oc64oh56kh3ph1", types="f16")
    c = default_config(p, TARGETS["xehpg"])
    t = derive_tiling(p, c)
    # 8 dpas per iteration in large-GRF mode (rule 3), the 64 output channels over two threads of 32.
    assert c.regs == 256 and c.iter == parse_config_line("i=mb16oc32ic16").iter
    assert t.tg_grid[:2] == (2, 4) and t.efficiency == 1.0 and not t.split_k
    assert c.loop.product(["ic"]) * c.iter.get("ic") == 64 and c.loop.get("kh") == 3
    assert c.slm.bufs == 3 and c.slm.a and c.slm.b and c.pipeline.unroll


def test_small_problems_get_small_tiles():
    for name, target in TARGETS.items():
        small = derive_tiling(p := problem_from_text("m16n16k16", types="f16"), default_config(p, target))
        big = derive_tiling(q := problem_from_text("m4096n4096k4096", types="f16"), default_config(q, target))
        assert small.m_group * small.n_group <= big.m_group * big.n_group, name
        assert small.threads_per_group <= big.threads_per_group, name
        assert small.m_group * small.n_group <= 16 * 64, name


def test_larger_register_mode_for_few_multiplies_per_iteration():
    """Rule 3: a mode whose best tile issues fewer than MIN_FMAS_PER_ITER FMA instructions per iteration
    gives way to the larger mode's best tile of at most that many; no larger mode is taken where the
    small one reaches it, has no more to give (small problems), or is already the largest."""
    xehpg, xehpc = TARGETS["xehpg"], TARGETS["xehpc"]

    def fmas(problem, target):
        c = default_config(problem, target)
        t = derive_tiling(problem, c)
        shape = next(s for s in target.shapes(fma=c.fma, simd=c.simd, a=operands(problem).a) if not s.math)
        return c.regs, (t.m_thread // shape.m) * (t.n_thread // shape.n) * (t.k_iter // shape.k)

    assert fmas(problem_from_text("mb50ic256ih14oc256oh14kh3ph1", types="f16"), xehpg) == (256, MIN_FMAS_PER_ITER)
    assert fmas(problem_from_text("m16n16k16", types="f16"), xehpg)[0] == 128  # too small for more
    assert default_config(problem_from_text("mb50ic256ih14oc256oh14kh3ph1"), xehpg).regs == 128  # f32 mad
    assert fmas(problem_from_text("m4096n4096k4096", types="f16"), xehpc)[0] == 256  # the default already


def test_larger_mode_takes_the_squarest_tile():
    """In the larger mode the fewest A and B bytes per FMA win, then the fewer A bytes: M16 x N32, not
    M8 x N64 (the same multiplies, a third more bytes) nor M32 x N16."""
    c = default_config(problem_from_text("mb50ic256ih14oc256oh14kh3ph1", types="f16"), TARGETS["xehpg"])
    assert c.iter == parse_config_line("i=mb4oh2ow2oc32ic16").iter


def test_spread_prefers_divisors_and_inner_dims():
    assert spread(32, (("mb", 32), ("od", 1), ("oh", 56), ("ow", 56))) == {"mb": 32, "od": 1, "oh": 1, "ow": 1}
    assert spread(32, (("mb", 1), ("od", 1), ("oh", 56), ("ow", 56))) == {"mb": 1, "od": 1, "oh": 4, "ow": 8}
    # what divides no dim pads least split: kh 7 -> 8 and kw 7 -> 8 (77 % useful), not kw 7 -> 16 (44 %)
    assert spread(16, (("ic", 3), ("kh", 7), ("kw", 7))) == {"ic": 1, "kh": 2, "kw": 8}
    assert spread(16, (("ic", 3), ("kh", 3), ("kw", 3))) == {"ic": 1, "kh": 4, "kw": 4}
    assert spread(16, (("oh", 13), ("ow", 13))) == {"oh": 1, "ow": 16}


def test_user_iter_reshapes_the_rest():
    p = problem_from_text("mb32ic64ih56oc64oh56kh3ph1", types="f16")
    c = resolve_config(p, TARGETS["xehpc"], parse_config_line("i=mb16oc32ic32"))
    assert c.loop.get("ic") == 2  # 64 / 32: the loop follows the user's K block
    assert c.iter == parse_config_line("i=mb16oc32ic32").iter


@settings(max_examples=200, deadline=None)
@given(problems(), st.sampled_from(sorted(TARGETS)))
def test_defaults_are_complete_valid_and_fit(problem, name):
    target = TARGETS[name]
    ops = operands(problem)
    # Mixed A/B types (bwd_d of f16:f16:f32 multiplies f32 by f16) have no instruction: validation says so.
    assume(target.shapes(a=ops.a, b=ops.b))
    c = default_config(problem, target)
    assert c.is_complete
    errors = [i for i in validate_config(problem, c, target) if i.severity == "error"]
    assert not errors, (c.line(), errors)
    b = estimate_budget(problem, c, target)
    assert b.reg_total <= c.regs and b.slm_total <= target.slm.per_group
    assert resolve_config(problem, target, c) == c


@settings(max_examples=200, deadline=None)
@given(problems(), st.sampled_from(sorted(TARGETS)), configs)
def test_user_knobs_are_kept_and_anything_resolves(problem, name, user):
    target = TARGETS[name]
    c = resolve_config(problem, target, user)
    assert c.is_complete
    for key in user.set_keys():
        assert getattr(c, key) == getattr(user, key)
    issues = validate_config(problem, c, target)  # never raises, whatever the user wrote
    assert all(i.severity in ("error", "warning", "info") for i in issues)


def test_mixed_operand_types_are_reported_not_hidden():
    p = problem_from_text("mb2ic16ih8oc16kh3ph1", prop="bwd_d", types="f16:f16:f32")
    issues = validate_config(p, default_config(p, TARGETS["xehpg"]), TARGETS["xehpg"])
    assert any(i.knob == "fma" and "f32*f16" in i.message for i in issues)


def test_resolve_without_user_is_default():
    p = problem_from_text("m256n256k256", types="bf16")
    assert resolve_config(p, TARGETS["sm_90"]) == resolve_config(p, TARGETS["sm_90"], KernelConfig())


def test_unsupported_simd_still_resolves_and_is_reported():
    from kdd.core.config import KernelConfig, resolve_config, validate_config
    from kdd.core.problem import Problem, parse_conv_shape, parse_data_types
    from kdd.core.targets import get_target

    problem = Problem("conv", "fwd", parse_conv_shape("mb2ic64ih8oc64oh8kh3ph1"), parse_data_types("f16"))
    target = get_target("xehpc")
    cfg = resolve_config(problem, target, KernelConfig(simd=864))
    assert cfg.simd == 864 and cfg.is_complete
    assert any(i.knob == "simd" for i in validate_config(problem, cfg, target))


def test_spread_remembered_hands_each_caller_its_own_split():
    dims = (("ic", 3), ("kh", 7), ("kw", 7))
    first = spread(16, dims)
    first["kw"] = 99  # a caller changing its split changes no later answer
    assert spread(16, dims) == {"ic": 1, "kh": 2, "kw": 8}
