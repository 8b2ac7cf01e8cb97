"""The command line's contract on bad input and on success: exit statuses, FILE:LINE:COL diagnostics,
warnings printed when compiling succeeds, the subcommand's own usage."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kdd.server.cli import SUBCOMMANDS, main
from protocol_schemas import validator

KDD = str(Path(sys.executable).parent / "kdd")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GEMM = '[problem]\nop = "gemm"\nshape = "m16n16k16"\ntypes = "f16"\n\n[target]\nhw = "xehpg"\n'


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_warnings_and_information_are_printed_when_compiling_succeeds(tmp_path, capsys):
    path = tmp_path / "big.kernel.toml"
    path.write_text(GEMM.replace("m16n16k16", "m4096n4096k4096"))
    code, out, err = run(capsys, "compile", path)
    assert code == 0 and out.startswith("kernel {")
    assert f"{path}:3:9: information: no [check] shape: this problem has 68719476736 multiply-adds, more than" in err


def test_a_build_error_points_at_its_knob(tmp_path, capsys):
    path = tmp_path / "bad.kernel.toml"
    path.write_text(GEMM.replace('hw = "xehpg"', 'hw = "xehpc"') + '\n[config]\nfma = "dpas"\nsimd = 8\n')
    code, out, err = run(capsys, "compile", path)
    assert code == 2 and out == ""
    located = [ln for ln in err.splitlines() if ln.startswith(f"{path}:")]
    assert located and all(ln.endswith("]") for ln in located)


def test_an_empty_shape_is_refused(capsys):
    code, _, err = run(capsys, "compile", EXAMPLES / "gemm_bert.kernel.toml", "--shape", "")
    assert code == 2 and "--shape is empty" in err


def test_an_unknown_option_prints_the_subcommands_usage(capsys):
    with pytest.raises(SystemExit) as info:
        main(["check", str(EXAMPLES / "gemm_bert.kernel.toml"), "--bogus"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.startswith("usage: kdd check") and "--bogus" in err


def test_an_over_large_check_is_not_checkable_with_exit_4(tmp_path, capsys):
    """A [check] shape over the bound is no verdict on the kernel: neither ok (0) nor wrong (1)."""
    path = tmp_path / "big.kernel.toml"
    path.write_text(GEMM + '\n[check]\nshape = "m1024n1024k1024"\n')
    code, out, _ = run(capsys, "check", path)
    assert code == 4 and out.startswith("not checkable 1024x1024:1024x1024") and "--unbounded" in out
    code, out, _ = run(capsys, "check", path, "--json")
    result = json.loads(out)
    assert code == 4 and (result["verdict"], result["code"], result["knob"]) == ("not-checkable", "check-too-large",
                                                                                 "shape")
    validator("check.schema.json").validate(result)


@pytest.mark.parametrize("content", [
    "[problem]\nx = " + "[" * 600 + "]" * 600 + "\n",
    '[problem]\nop = "gemm"\nshape = "m99999999999999999999999999n1k1"\n[target]\nhw = "xehpg"\n',
    "\x00\x01binary\xff",
    "[problem]\n" + "k = 1\n" * 20000,
])
def test_malformed_documents_exit_2_with_a_position(tmp_path, content):
    path = tmp_path / "bad.kernel.toml"
    path.write_bytes(content.encode("utf-8", "surrogateescape") if isinstance(content, str) else content)
    for command in ("compile", "check"):
        done = subprocess.run([KDD, command, str(path)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, (command, done.stderr[-500:])
        assert f"{path}:" in done.stderr or "cannot read" in done.stderr


def test_special_files_are_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.kernel.toml"
    os.mkfifo(fifo)
    for target in ("/dev/zero", str(fifo)):
        done = subprocess.run([KDD, "compile", target], capture_output=True, text=True, timeout=30)
        assert done.returncode == 2 and "not a regular file" in done.stderr


def test_the_shape_commands_op_choices_are_the_problem_ops():
    from kdd.core.problem import OPS
    from kdd.server.cli import build_parser

    sub = build_parser()._subparsers._group_actions[0].choices["shape"]
    op = next(a for a in sub._actions if a.dest == "op")
    assert tuple(op.choices) == OPS


def test_compiling_an_xe_kernel_loads_neither_package_metadata_nor_numpy_nor_other_commands():
    # What start-up pays for: package metadata serves --version only; the Xe-HPG code generator (which
    # every compile runs: a kernel it cannot lower is an error whatever is emitted) maps its reorders in
    # plain integers, since loading numpy costs more than the rest of a small compile's code generation;
    # a command line naming a subcommand registers that one alone (kdd --help still lists them all).
    # Xe-HPC's 2D block loads (gemm_bert) are planned in plain integers too.
    for example in ("resnet50_3x3", "gemm_bert"):
        probe = ("import sys, io, contextlib; from kdd.server.cli import main\n"
                 "with contextlib.redirect_stdout(io.StringIO()):\n"
                 f"    code = main(['compile', {str(EXAMPLES / f'{example}.kernel.toml')!r}, '--emit', 'passes,asm',"
                 " '--no-cache'])\n"
                 "print(code, sorted(m for m in ('importlib.metadata', 'numpy', 'kdd.server.cli.sweep')"
                 " if m in sys.modules))")
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
        assert done.stdout.split() == ["0", "[]"], (example, done.stderr)
    version = subprocess.run([KDD, "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("kdd ")
    listed = subprocess.run([KDD, "--help"], capture_output=True, text=True, timeout=60).stdout
    assert all(f"    {name.replace('_', '-')} " in listed for name in SUBCOMMANDS)


def test_a_command_ends_with_its_output_written_and_its_exit_handlers_run(tmp_path, capsys):
    """``kdd`` ends its process without the interpreter's teardown: everything the command printed still
    reaches the pipe, the exit status is the command's, and the ``atexit`` handlers ran (the table of
    generated code kdd keeps beside its bytecode is written by one)."""
    example = EXAMPLES / "resnet50_3x3.kernel.toml"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path / "pyc")
    done = subprocess.run([KDD, "compile", str(example), "--emit", "ir,stats", "--no-cache"], capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == run(capsys, "compile", example, "--emit", "ir,stats", "--no-cache")[1]
    assert list((tmp_path / "pyc").rglob("generated_code.*.code"))
    bad = tmp_path / "bad.kernel.toml"
    bad.write_text(GEMM.replace('"m16n16k16"', '"m0"'))
    done = subprocess.run([KDD, "compile", str(bad)], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2 and f"{bad}:" in done.stderr
