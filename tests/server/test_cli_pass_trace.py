"""``kdd compile --emit passes|ir:PASS|diff:PASS`` and ``kdd check --bisect`` through the CLI entry point."""
from __future__ import annotations

import json

import pytest

from kdd.core.passes.kernel_pipeline import KERNEL_PIPELINE
from kdd.server.cli import main

CONFIG = """\
[problem]
op = "conv"
prop = "fwd"
shape = "mb2ic16ih6oc16oh6kh3ph1"
types = "f16"

[target]
hw = "xehpg"

[config]
fma = "dpas"
simd = 8
iter = "ow8oc8ic16"
tg = "oc2"
loop = "kh3kw3"
slm = { bufs = 1 }
"""


@pytest.fixture
def config_file(tmp_path):
    path = tmp_path / "conv.kernel.toml"
    path.write_text(CONFIG)
    return path


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([*map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_emit_passes_prints_one_table_row_per_pass_then_the_final_ir(config_file, capsys):
    code, out, _ = run(capsys, "compile", config_file, "--emit", "passes")
    assert code == 0
    table, final = out.split("=== final IR\n")
    rows = [line.split()[0] for line in table.splitlines()[1:]]
    assert rows == ["build"] + KERNEL_PIPELINE.names()
    assert final.startswith("kernel {") and final.rstrip().endswith("}")


def test_emit_ir_after_a_pass_differs_from_the_build_when_the_pass_changed_it(config_file, capsys):
    _, built, _ = run(capsys, "compile", config_file, "--emit", "ir:build")
    _, unrolled, _ = run(capsys, "compile", config_file, "--emit", "ir:unroll")
    assert built.startswith("=== IR after build\n") and unrolled.startswith("=== IR after unroll\n")
    assert len(unrolled.splitlines()) > len(built.splitlines())


def test_emit_diff_is_a_unified_diff_of_the_pass(config_file, capsys):
    code, out, _ = run(capsys, "compile", config_file, "--emit", "diff:simplify")
    assert code == 0
    lines = out.splitlines()
    assert any(line.startswith("--- ") for line in lines) and any(line.startswith("+++ ") for line in lines)
    assert any(line.startswith("-") and not line.startswith("---") for line in lines)


def test_json_carries_the_trace_the_ir_after_and_the_diff(config_file, capsys):
    code, out, _ = run(capsys, "compile", config_file, "--emit", "passes,ir:cse,diff:hoist", "--json")
    assert code == 0
    doc = json.loads(out)
    assert "ir" not in doc  # only what was asked for
    assert doc["trace"]["build"]["ir"].startswith("kernel {")
    assert [p["name"] for p in doc["trace"]["passes"]] == KERNEL_PIPELINE.names()
    assert doc["ir_after"]["cse"].startswith("kernel {")
    assert "hoist" in doc["diff"]


def test_an_unknown_pass_is_named_with_its_span_and_a_suggestion(config_file, capsys):
    code, out, err = run(capsys, "compile", config_file, "--emit", "ir,diff:csee")
    assert code == 2 and out == ""
    assert "'csee'" in err and "at 8..12" in err and "did you mean 'cse'" in err


def test_bisect_reports_every_stage_right_on_a_correct_pipeline(config_file, capsys):
    code, out, _ = run(capsys, "check", config_file, "--bisect", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["first_bad"] is None
    assert [s["name"] for s in doc["stages"]] == ["build"] + KERNEL_PIPELINE.names()


def test_bisect_blames_the_build_when_the_skeleton_already_misses_the_tolerance(config_file, capsys):
    config_file.write_text(CONFIG + "\n[check]\ntol = 1e-30\n")
    code, out, _ = run(capsys, "check", config_file, "--bisect")
    assert code == 1
    assert out.splitlines()[0].startswith("build  WRONG  rel_err")
    assert out.splitlines()[-1] == "first wrong after: build"
