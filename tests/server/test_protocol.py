"""Real command outputs validate against the schemas in protocol/."""
import json
from pathlib import Path

import jsonschema
import pytest
from protocol_schemas import validator as schema

from kdd.server.cli import main


def run_json(capsys, *argv):
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("desc", ["mb2ic64ih8oc64oh8kh3ph1", 'ic3oc16_iw5ow5kw3pw1_n"1d"',
                                  "g2ic4oc4id5kd3", "mb50ic3ih224oc64oh112kh7sh2ph3"])
def test_shape_output_matches_schema(capsys, desc):
    schema("shape.schema.json").validate(run_json(capsys, "shape", desc))


def test_schema_rejects_a_wrong_output():
    bad = {"g": 1}
    with pytest.raises(jsonschema.ValidationError):
        schema("shape.schema.json").validate(bad)


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_any(capsys, *argv):
    code = main(list(argv))
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("example, emit", [("resnet50_1x1", "ir"), ("gemm_bert", "ir,passes,ir:cse,diff:hoist"),
                                           ("sm90_gemm", "passes")])
def test_compile_output_matches_schema(capsys, example, emit):
    code, doc = run_any(capsys, "compile", str(EXAMPLES / f"{example}.kernel.toml"), "--emit", emit, "--json")
    assert code == 0
    schema("compile.schema.json").validate(doc)


def test_compile_failure_matches_schema(capsys, tmp_path):
    bad = tmp_path / "bad.kernel.toml"
    bad.write_text('[problem]\nop = "conv"\nshape = "mb2ic16"\nfoo = 1\n')
    code, doc = run_any(capsys, "compile", str(bad), "--json")
    assert code == 2 and doc["diagnostics"]
    schema("compile.schema.json").validate(doc)


def test_check_outputs_match_schema(capsys, tmp_path):
    example = str(EXAMPLES / "gemm_bert.kernel.toml")
    for argv in (["check", example, "--json"], ["check", example, "--json", "--bisect"],
                 ["check", str(tmp_path / "missing.kernel.toml"), "--json"]):
        _, doc = run_any(capsys, *argv)
        schema("check.schema.json").validate(doc)


def test_compile_schema_rejects_a_pass_entry_without_its_ir():
    doc = {"file": "f", "ok": True, "problem": {"op": "gemm", "prop": "fwd", "shape": "m1n1k1", "types": "f32"},
           "target": "xehpg", "config": "", "diagnostics": [],
           "kernel": {"target": "xehpg", "grid": [1, 1, 1], "tg": [1, 1, 1], "simd": 16, "reg_bytes": 64,
                      "slm_bytes": 0, "args": []},
           "trace": {"build": {"name": "build", "nodes": 3, "ir": "kernel {\n}\n"},
                     "passes": [{"name": "cse", "changed": False, "ms": 0.1, "nodes": 3, "cached": False}]}}
    with pytest.raises(jsonschema.ValidationError):
        schema("compile.schema.json").validate(doc)


@pytest.mark.parametrize("example, emit", [("resnet50_3x3", "asm,stats"), ("sm90_gemm", "ptx,sass,stats")])
def test_assembly_outputs_match_schema(capsys, example, emit):
    code, doc = run_any(capsys, "compile", str(EXAMPLES / f"{example}.kernel.toml"), "--emit", emit, "--json")
    assert code == 0
    schema("compile.schema.json").validate(doc)
    listing = doc.get("asm") or doc["ptx"]
    assert listing["assembler"]["ok"] and doc["stats"]["registers"]["allocated"] is not None
    assert any((line.get("ir_node") or {}).get("knob") for line in listing["lines"])
    if example == "resnet50_3x3":  # writes its knobs: lines lead to them
        assert any("config_range" in line for line in listing["lines"])
    if "sass" in doc:
        assert doc["sass"]["lines"] and all(line["live_regs"] >= 0 for line in doc["sass"]["lines"])
