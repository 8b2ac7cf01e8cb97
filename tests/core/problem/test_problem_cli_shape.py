"""``kdd shape``: JSON for a valid descriptor, exit 2 and the token for a bad one."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kdd.core.problem import CONV_KEYS
from kdd.server.cli import main

KDD = Path(sys.executable).parent / "kdd"


def test_conv_descriptor_prints_all_benchdnn_fields(capsys):
    assert main(["shape", 'mb32_ic64oc64_ih56oh56kh3_n"res2a"']) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out) == [*CONV_KEYS, "ndims", "name", "canonical"]
    assert (out["iw"], out["ow"], out["kw"], out["ph"], out["pw"]) == (56, 56, 3, 1, 1)
    assert (out["id"], out["kd"], out["sd"], out["pd"], out["dd"]) == (1, 1, 1, 0, 0)
    assert (out["g"], out["ndims"], out["name"]) == (1, 4, "res2a")
    assert out["canonical"] == 'mb32ic64ih56oc64oh56kh3ph1n"res2a"'


def test_gemm_descriptor(capsys):
    assert main(["shape", "m64n32k16"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "batch": [], "m": 64, "n": 32, "k": 16, "name": None, "canonical": "64x16:16x32"}


def test_invalid_descriptor_exits_2_naming_the_token(capsys):
    assert main(["shape", "ic3oc3ih5kh3qq7"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "unknown entry 'qq7'" in captured.err
    # the marker line underlines the token under the echoed descriptor
    lines = captured.err.splitlines()
    assert lines[1].strip() == "ic3oc3ih5kh3qq7"
    assert lines[2].index("^") == lines[1].index("qq7") and lines[2].count("^") == 3


def test_forced_op(capsys):
    assert main(["shape", "--op", "gemm", "ic3oc3ih5kh3"]) == 2
    assert "unknown GEMM entry 'ic3oc3ih5kh3'" in capsys.readouterr().err


def test_installed_command():
    done = subprocess.run([str(KDD), "shape", "g2ic4oc4id5kd3"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (out["ndims"], out["ih"], out["iw"], out["oh"]) == (5, 5, 5, 3)
    assert out["canonical"] == "g2ic4id5oc4od3kd3pd0"
    bad = subprocess.run([str(KDD), "shape", "ic4oc4ih5kh3sh0"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "'sh0'" in bad.stderr
