"""``kdd compile``: IR text, the JSON line map back to config knobs, --shape, and exit status 2."""
from __future__ import annotations

import json

import pytest

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


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(["compile", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


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
    path.write_text(CONFIG.replace('tg = "oc2"', 'tg = "ic2"'))
    code, _, err = run(capsys, path)
    assert code == 2 and "ic" in err


def test_bad_shape_and_unknown_emit_exit_2(config_file, capsys):
    code, _, err = run(capsys, config_file, "--shape", "mb2xx3")
    assert code == 2 and "xx3" in err
    code, _, err = run(capsys, config_file, "--emit", "asm")
    assert code == 2 and "asm" in err


def test_unreadable_file_exits_2(tmp_path, capsys):
    code, _, err = run(capsys, tmp_path / "missing.kernel.toml")
    assert code == 2 and "cannot read" in err
