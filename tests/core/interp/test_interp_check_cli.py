"""``kdd check``: exit codes, JSON output, diagnostics."""
import json

import pytest

from kdd.server.cli import main
from kdd.core.interp import check as interp_check

CONFIG = """\
[problem]
op = "conv"
prop = "fwd"
shape = "mb8ic32ih28oc32oh28kh3ph1"
types = "f16:f16:f16"
post_ops = ["relu"]

[target]
hw = "xehpg"

[config]
fma = "dpas"
simd = 8

[check]
shape = "mb2ic16ih5oc16oh5kh3ph1"
"""


@pytest.fixture
def config_file(tmp_path):
    path = tmp_path / "conv.kernel.toml"
    path.write_text(CONFIG)
    return path


def test_pass_prints_a_verdict_and_exits_0(config_file, capsys):
    assert main(["check", str(config_file)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok ic16ih5oc16oh5kh3ph1 (the assembled kernel in kdd's Xe simulator): rel_err")


def test_json_output_says_what_ran(config_file, capsys):
    assert main(["check", str(config_file), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) == {"ok", "rel_err", "tol", "first_bad_index", "shape", "ms", "tensor", "unwritten", "stage",
                           "artifact", "verdict", "asm"}
    assert (result["artifact"], result["stage"], result["verdict"]) == ("asm", "final", "ok")  # the code, by default
    assert result["ok"] is True and result["shape"] == "ic16ih5oc16oh5kh3ph1"
    assert result["tol"] == 4e-3 and result["first_bad_index"] is None


def test_stage_runs_that_ir_in_the_interpreter(config_file, capsys):
    assert main(["check", str(config_file), "--stage", "final", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["artifact"], result["stage"], result["verdict"]) == ("ir", "final", "ok")
    assert "asm" not in result
    assert main(["check", str(config_file), "--stage", "build"]) == 0
    assert "(the IR after build in the interpreter)" in capsys.readouterr().out


def test_shape_option_checks_another_shape(config_file, capsys):
    assert main(["check", str(config_file), "--shape", "mb1ic16iw7oc16ow7kw3pw1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["shape"] == "mb1ic16iw7oc16ow7kw3pw1"


def test_mismatch_exits_1_with_the_first_bad_index(config_file, capsys, monkeypatch):
    real = interp_check.check_kernel

    def strict(kernel, problem, seed, tol, max_macs):  # no kernel this side of exact f16 passes a negative tolerance
        return real(kernel, problem, seed=seed, tol=-1.0, max_macs=max_macs)
    monkeypatch.setattr(interp_check, "check_kernel", strict)
    assert main(["check", str(config_file), "--stage", "final", "--no-cache"]) == 1  # the patched check runs
    assert "WRONG ic16ih5oc16oh5kh3ph1" in capsys.readouterr().out


def test_invalid_config_exits_2_with_located_diagnostics(tmp_path, capsys):
    path = tmp_path / "bad.kernel.toml"
    path.write_text(CONFIG.replace('fma = "dpas"', 'fma = "dpaz"'))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:12:7: error:" in err and "dpaz" in err


def test_bad_shape_option_exits_2(config_file, capsys):
    assert main(["check", str(config_file), "--shape", "mb2ic16ihx"]) == 2
    assert "--shape" in capsys.readouterr().err


def test_unreadable_file_exits_2(tmp_path, capsys):
    assert main(["check", str(tmp_path / "missing.kernel.toml")]) == 2
    assert "cannot read" in capsys.readouterr().err
