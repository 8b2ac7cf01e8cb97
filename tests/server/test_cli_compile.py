"""``kdd compile``: IR text, the JSON line map back to config knobs, --shape, exit status 2; the pass
trace (``--emit passes|ir:PASS|diff:PASS``) and ``kdd check --bisect``."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kdd.core.passes import Pass, Pipeline
from kdd.core.passes.kernel_pipeline import KERNEL_PIPELINE
from kdd.core.passes.options import kernel_options
from kdd.core.engine import engine as engine_module
from kdd.server.cli import SUBCOMMANDS, main

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


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([*map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def run(capsys, *argv) -> tuple[int, str, str]:
    return run_cli(capsys, "compile", *argv)


def test_compile_is_a_subcommand():
    assert "compile" in SUBCOMMANDS


def test_plain_output_is_the_ir_text(config_file, capsys):
    code, out, _ = run(capsys, config_file)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "kernel {" and lines[-1] == "}"
    assert any(line.strip().startswith("dpas.8x8.f32.f16.f16(") for line in lines)
    assert sum(line.strip() == "barrier()" for line in lines) == 2


def test_json_maps_every_line_to_its_node_and_origin(config_file, capsys):
    code, out, _ = run(capsys, config_file, "--emit", "ir", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["ok"] and doc["target"] == "xehpg"
    assert doc["kernel"]["tg"] == [2, 1, 1] and doc["kernel"]["simd"] == 8
    text_lines = doc["ir"]["text"].splitlines()
    mapping = doc["ir"]["lines"]
    assert [m["line"] for m in mapping] == list(range(len(text_lines)))
    by_line = dict(zip(range(len(text_lines)), mapping))
    dpas = next(i for i, t in enumerate(text_lines) if t.strip().startswith("dpas"))
    assert by_line[dpas]["kind"] == "FuncCall"
    assert by_line[dpas]["origin"]["knob"] == "fma"
    # the knob's range points at its value in the file: line 12 is `fma = "dpas"`
    assert by_line[dpas]["origin"]["range"]["start"]["line"] == CONFIG.splitlines().index('fma = "dpas"')
    barrier = next(i for i, t in enumerate(text_lines) if t.strip() == "barrier()")
    assert by_line[barrier]["origin"] == {"step": "slm.barrier", "knob": "slm", "range": by_line[barrier][
        "origin"]["range"]}
    assert by_line[barrier]["origin"]["range"]["start"]["line"] == CONFIG.splitlines().index("slm = { bufs = 1 }")


def test_shape_overrides_the_problem(config_file, capsys):
    code, out, _ = run(capsys, config_file, "--shape", "mb1ic16ih4oc16oh2kh3ph0", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["problem"]["shape"] == "mb1ic16ih4oc16oh2kh3ph0"
    src = next(a for a in doc["kernel"]["args"] if a["name"] == "src")
    assert src["dims"] == [["mb", 1], ["ic", 16], ["ih", 4], ["iw", 4]]


def test_invalid_config_exits_2_with_diagnostics(tmp_path, capsys):
    path = tmp_path / "bad.kernel.toml"
    path.write_text(CONFIG.replace('simd = 8', 'simd = "eight"'))
    code, out, err = run(capsys, path)
    assert code == 2
    assert "simd" in err and f"{path}:" in err
    code, out, _ = run(capsys, path, "--json")
    doc = json.loads(out)
    assert code == 2 and not doc["ok"] and doc["diagnostics"]


def test_unbuildable_config_exits_2(tmp_path, capsys):
    path = tmp_path / "k.kernel.toml"
    path.write_text(CONFIG.replace('tg = "oc2"', 'tg = "g2"'))
    code, _, err = run(capsys, path)
    assert code == 2 and "'g', a batch dim" in err


def test_bad_shape_and_unknown_emit_exit_2(config_file, capsys):
    code, _, err = run(capsys, config_file, "--shape", "mb2xx3")
    assert code == 2 and "xx3" in err
    code, _, err = run(capsys, config_file, "--emit", "sas")
    assert code == 2 and "'sas'" in err


def test_unreadable_file_exits_2(tmp_path, capsys):
    code, _, err = run(capsys, tmp_path / "missing.kernel.toml")
    assert code == 2 and "cannot read" in err


def test_emit_passes_prints_one_table_row_per_pass_then_the_final_ir(config_file, capsys):
    code, out, _ = run_cli(capsys, "compile", config_file, "--emit", "passes")
    assert code == 0
    table, final = out.split("=== final IR\n")
    rows = [line.split()[0] for line in table.splitlines()[1:]]
    assert rows == ["build"] + KERNEL_PIPELINE.names()
    assert final.startswith("kernel {") and final.rstrip().endswith("}")


def test_emit_ir_after_a_pass_differs_from_the_build_when_the_pass_changed_it(config_file, capsys):
    _, built, _ = run_cli(capsys, "compile", config_file, "--emit", "ir:build")
    _, unrolled, _ = run_cli(capsys, "compile", config_file, "--emit", "ir:unroll")
    assert built.startswith("=== IR after build\n") and unrolled.startswith("=== IR after unroll\n")
    assert len(unrolled.splitlines()) > len(built.splitlines())


def test_emit_diff_is_a_unified_diff_of_the_pass(config_file, capsys):
    code, out, _ = run_cli(capsys, "compile", config_file, "--emit", "diff:simplify")
    assert code == 0
    lines = out.splitlines()
    assert any(line.startswith("--- ") for line in lines) and any(line.startswith("+++ ") for line in lines)
    assert any(line.startswith("-") and not line.startswith("---") for line in lines)


def test_json_carries_the_trace_the_ir_after_and_the_diff(config_file, capsys):
    code, out, _ = run_cli(capsys, "compile", config_file, "--emit", "passes,ir:cse,diff:hoist", "--json")
    assert code == 0
    doc = json.loads(out)
    assert "ir" not in doc  # only what was asked for
    assert doc["trace"]["build"]["ir"].startswith("kernel {")
    assert [p["name"] for p in doc["trace"]["passes"]] == KERNEL_PIPELINE.names()
    assert doc["ir_after"]["cse"].startswith("kernel {")
    assert "hoist" in doc["diff"]


def test_an_unknown_pass_is_named_with_its_span_and_a_suggestion(config_file, capsys):
    code, out, err = run_cli(capsys, "compile", config_file, "--emit", "ir,diff:csee")
    assert code == 2 and out == ""
    assert "'csee'" in err and "at 8..12" in err and "did you mean 'cse'" in err


def test_bisect_reports_every_stage_right_on_a_correct_pipeline(config_file, capsys):
    code, out, _ = run_cli(capsys, "check", config_file, "--bisect", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["first_bad"] is None and (doc["verdict"], doc["artifact"]) == ("ok", "asm")
    assert [s["name"] for s in doc["stages"]] == ["build"] + KERNEL_PIPELINE.names() + ["assembly"]  # then the code
    code, out, _ = run_cli(capsys, "check", config_file, "--bisect", "--stage", "final", "--json")
    assert code == 0 and [s["name"] for s in json.loads(out)["stages"]] == ["build"] + KERNEL_PIPELINE.names()


def test_bisect_blames_the_build_when_the_skeleton_already_misses_the_tolerance(config_file, capsys):
    config_file.write_text(CONFIG + "\n[check]\ntol = 1e-30\n")
    code, out, _ = run_cli(capsys, "check", config_file, "--bisect")
    assert code == 1
    assert out.splitlines()[0].split()[:3] == ["build", "WRONG", "rel_err"]
    assert out.splitlines()[-1] == "first wrong after: build"


def test_a_failing_pass_is_named_and_exits_3(config_file, capsys, monkeypatch):
    def broken_cse(ir, options):
        raise ZeroDivisionError("division by zero")

    passes = tuple(Pass("cse", broken_cse) if p.name == "cse" else p for p in KERNEL_PIPELINE.passes)
    monkeypatch.setattr(engine_module, "run_pipeline",
                        lambda kernel, pipeline, cache: Pipeline(passes).run(kernel.body, kernel_options(kernel)))
    # --no-cache: the broken pipeline must run, not an answer cached by an earlier test
    code, out, err = run_cli(capsys, "compile", config_file, "--emit", "passes", "--no-cache")
    assert code == 3 and out == ""
    assert "pass 'cse' failed: ZeroDivisionError: division by zero" in err
    code, out, _ = run_cli(capsys, "compile", config_file, "--emit", "passes", "--json", "--no-cache")
    assert code == 3 and "pass 'cse' failed" in json.loads(out)["error"]


def test_emit_ptx_prints_plain_ptx_that_ptxas_assembles_and_asm_keeps_the_annotated_listing(capsys):
    from kdd.core.codegen.ptx.tools import ptxas

    example = Path(__file__).resolve().parents[2] / "examples" / "sm90_gemm.kernel.toml"
    code, out, _ = run_cli(capsys, "compile", example, "--emit", "ptx")
    assert code == 0 and out.startswith(".version ") and "// target sm_90: ptxas allocated" not in out
    assembled = ptxas(out)
    assert assembled.cubin is not None, assembled.report.messages
    code, out, _ = run_cli(capsys, "compile", example, "--emit", "asm")
    assert code == 0 and out.startswith("// target sm_90: ptxas allocated")


def test_emit_stats_prints_the_main_loop_of_the_ir_and_of_the_assembly(config_file, capsys):
    code, out, _ = run(capsys, config_file, "--emit", "stats", "--no-cache")
    assert code == 0
    ir = next(ln for ln in out.splitlines() if ln.startswith("main loop") and ln.endswith("(source: IR)"))
    asm = next(ln for ln in out.splitlines() if ln.startswith("main loop") and ln.endswith("(source: assembly)"))
    assert " dpas," in ir and " ALU per dpas " in asm
    lanes = next(ln for ln in out.splitlines() if ln.startswith("multiply lanes:"))
    code, out, _ = run(capsys, config_file, "--emit", "stats", "--json")
    stats = json.loads(out)["stats"]
    assert (stats["loop"]["source"], stats["asm_loop"]["source"]) == ("IR", "assembly")
    assert f"{stats['asm_loop']['alu_per_dpas']:g} ALU per dpas" in asm
    assert lanes == (f"multiply lanes: {stats['lanes']['fraction']:.1%} useful ({stats['lanes']['useful']} "
                     f"multiply-adds of {stats['lanes']['issued']} issued by dpas; "
                     f"{stats['lanes']['config']['reason']}) (source: IR)")
