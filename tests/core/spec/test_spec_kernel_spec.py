"""``load_spec``: the spec of a config, and semantic diagnostics on the exact value or token at fault."""
from pathlib import Path

import pytest

from kdd.core.config import Buffering, Tile
from kdd.core.spec.diagnostics import Severity
from kdd.core.spec.document import Position, Range
from kdd.core.spec.kernel_spec import load_spec

FIXTURES = Path(__file__).parent / "fixtures"
CONV = (FIXTURES / "conv_fwd.kernel.toml").read_text()


def rng(line, start, end):
    return Range(Position(line, start), Position(line, end))


def edited(old, new, text=CONV):
    assert old in text
    return text.replace(old, new)


def test_the_conv_example_gives_a_complete_spec_and_no_diagnostics():
    spec, diagnostics = load_spec(CONV, str(FIXTURES / "conv_fwd.kernel.toml"))
    assert diagnostics == []
    assert spec.problem.op == "conv" and spec.problem.shape.oc == 64 and str(spec.problem.types) == "f16"
    assert [str(op.canonical()) for op in spec.problem.post_ops] == ["relu"]
    assert dict(spec.problem.tags) == {"src": "axb", "wei": "axcb", "dst": "axb"}
    assert set(spec.layouts) == {"src", "wei", "dst"}
    assert spec.target.name == "xehpg"
    assert spec.user_knobs == ("fma", "simd", "regs", "loop", "tg", "iter", "slm")
    assert spec.config.is_complete and spec.config.iter == Tile.parse("mb16oc32ic16")
    assert spec.config.slm == Buffering(3)
    assert spec.check.shape.mb == 2 and spec.check.shape.ih == 8 and spec.check.op == "conv"
    assert spec.source_map()["iter"] == rng(18, 7, 21)
    assert spec.source_map()["slm"] == rng(21, 6, 18)


def test_a_tag_of_any_lets_the_kernel_choose_as_a_missing_key_does():
    written, diagnostics = load_spec(edited('wei = "axcb"', 'wei = "any"'))
    assert diagnostics == []
    left_out, _ = load_spec(edited('wei = "axcb"\n', ''))
    assert written.problem.tags["wei"] == left_out.problem.tags["wei"] == "any"
    assert written.problem == left_out.problem


def test_knobs_from_a_config_line_map_to_their_tokens():
    text = edited('loop = "kh3kw3ic4"', 'line = "l=kh3kw3ic4 bufs=2"').replace("slm = { bufs = 3 }\n", "")
    spec, diagnostics = load_spec(text)
    assert diagnostics == []
    assert spec.config.slm == Buffering(2) and spec.config.loop == Tile.parse("kh3kw3ic4")
    sources = spec.knob_sources
    assert sources["loop"].range == rng(20, 8, 19) and sources["loop"].in_line
    assert sources["slm"].range == rng(20, 20, 26)


@pytest.mark.parametrize("old, new, where, message", [
    # A bad entry of the shape descriptor: just that token.
    ('shape = "mb32ic64ih56oc64oh56kh3ph1"', 'shape = "mb32ic64ih56xx64oh56kh3ph1"', rng(4, 21, 25),
     "unknown entry 'xx64'"),
    ('src = "axb"', 'src = "axq"', rng(6, 9, 10), "'q'"),
    ('types = "f16:f16:f16"', 'types = "f16:f61:f16"', rng(5, 13, 16), "unknown data type 'f61'"),
    ('post_ops = ["relu"]', 'post_ops = ["relu", "gelu_tan"]', rng(9, 21, 29), "unknown post-op 'gelu_tan'"),
    # Post-ops do not apply to backward-by-data: reported on the post-ops.
    ('prop = "fwd"', 'prop = "bwd_d"', rng(9, 11, 19), "does not apply to bwd_d"),
    ('slm = { bufs = 3 }', 'slm = { bufs = 5 }', rng(21, 15, 16), "slm.bufs must be between 0 and 3"),
    ('loop = "kh3kw3ic4"', 'line = "l=kh3kw3ic4 bufz=3"', rng(20, 20, 24), "did you mean 'bufs'"),
    ('loop = "kh3kw3ic4"', 'line = "l=kh3kw3ic4 simd=8"', rng(16, 7, 8), "'simd' is set both as a key and in line"),
    ('shape = "mb2ic64ih8oc64oh8kh3ph1"', 'shape = "m64n64k32"', rng(24, 9, 12), "unknown entry 'm64'"),
])
def test_reading_errors_point_into_the_value_and_give_no_spec(old, new, where, message):
    spec, diagnostics = load_spec(edited(old, new))
    assert spec is None
    assert len(diagnostics) == 1, diagnostics
    assert diagnostics[0].range == where and message in diagnostics[0].message
    assert diagnostics[0].severity == Severity.ERROR


@pytest.mark.parametrize("old, new, where, severity, message", [
    ('fma = "dpas"', 'fma = "mma"', rng(15, 6, 11), Severity.ERROR, "xehpg has no 'mma' instruction"),
    ('types = "f16:f16:f16"', 'types = "f32"', rng(15, 6, 12), Severity.ERROR, "does not multiply f32*f32"),
    ('tg = "oc2ow8"', 'tg = "oc2ow5"', rng(19, 5, 13), Severity.WARNING, "block 5 of 'ow' does not divide 56"),
    ('tg = "oc2ow8"', 'tg = "oc2ow8ih2"', rng(19, 5, 16), Severity.ERROR, "did you mean 'oh'"),
])
def test_feasibility_issues_land_on_the_knob_and_keep_the_spec(old, new, where, severity, message):
    spec, diagnostics = load_spec(edited(old, new))
    assert spec is not None
    assert [(d.range, d.severity, d.code) for d in diagnostics] == [(where, severity, "feasibility")]
    assert message in diagnostics[0].message


def test_a_register_overflow_names_its_breakdown_on_the_regs_value():
    spec, diagnostics = load_spec(edited('iter = "mb16oc32ic16"', 'iter = "mb64oc64ic16"'))
    overflow = next(d for d in diagnostics if "register budget overflow" in d.message)
    assert overflow.range == rng(17, 7, 10)
    # 64x64 f32 accumulators in 32-byte GRFs: 512 of them, listed first in the breakdown.
    assert "(c 512, " in overflow.message and "> 256" in overflow.message


def test_an_issue_of_a_default_knob_lands_on_the_config_header():
    text = edited('iter = "mb16oc32ic16"', 'iter = "mb64oc64ic16"').replace("regs = 256", "")
    _, diagnostics = load_spec(text)
    overflow = next(d for d in diagnostics if "register budget overflow" in d.message)
    assert overflow.range == rng(14, 1, 7) and "from the defaults for 'regs'" in overflow.message


def test_inherited_values_are_reported_on_the_extends_value():
    files = {"/cfg/base.kernel.toml": (FIXTURES / "base.kernel.toml").read_text().replace(
        'src = "axb"', 'src = "axq"')}
    text = 'extends = "base.kernel.toml"\n'
    spec, diagnostics = load_spec(text, "/cfg/child.kernel.toml", read_text=files.__getitem__)
    assert spec is None and len(diagnostics) == 1
    d = diagnostics[0]
    assert d.range == rng(0, 10, 28)
    assert d.message.startswith("base.kernel.toml:6:10: ") and "'q'" in d.message
    assert d.related[0].path == "/cfg/base.kernel.toml" and d.related[0].range == rng(5, 9, 10)


def test_a_variant_inherits_and_overrides_its_base():
    path = FIXTURES / "variant.kernel.toml"
    spec, diagnostics = load_spec(path.read_text(), str(path))
    # The base has no [check]: its large problem is checked at a reduced shape, said on `extends`.
    assert [(d.severity, d.range) for d in diagnostics] == [(Severity.INFORMATION, rng(1, 10, 28))]
    assert "the check runs it at a reduced shape that keeps the config's tiles" in diagnostics[0].message
    assert spec.check.shape.canonical() == "mb4ic64ih4iw8oc64oh4ow8kh3kw3ph1pw1"  # by default units, under 2^22
    assert spec.config.slm == Buffering(3) and spec.config.simd == 8
    assert spec.knob_sources["simd"].inherited and spec.knob_sources["simd"].path == str(FIXTURES / "base.kernel.toml")
    assert set(spec.source_map()) == {"slm"}
    assert [op.canonical() for op in spec.problem.post_ops] == ["relu"]


def test_a_gemm_config_reads_its_check_seed_and_tolerance():
    spec, diagnostics = load_spec((FIXTURES / "gemm.kernel.toml").read_text())
    assert diagnostics == []
    assert spec.problem.op == "gemm" and spec.target.name == "xehpc"
    assert (spec.check.shape.m, spec.check.shape.n, spec.check.shape.k) == (64, 64, 32)
    assert spec.check_seed == 7 and spec.check_tol == pytest.approx(0.01)
    assert spec.user_knobs == ("simd",) and spec.knob_sources["simd"].in_line


def test_missing_required_keys_and_schema_errors_give_no_spec():
    spec, diagnostics = load_spec('[problem]\nop = "conv"\n[config]\nsimdd = 8\n')
    assert spec is None
    assert [(d.code, d.range) for d in diagnostics] == [
        ("missing-key", rng(0, 0, 0)),  # no [target]
        ("missing-key", rng(0, 1, 8)),  # [problem] without shape
        ("unknown-key", rng(3, 0, 5)),
    ]
