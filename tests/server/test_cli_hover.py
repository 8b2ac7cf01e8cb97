"""``kdd hover FILE LINE COL``: the hover markdown of a position, through main() and the installed script."""
import subprocess
import sys
from math import prod
from pathlib import Path

from kdd.core.config import estimate_budget
from kdd.core.spec.kernel_spec import load_spec
from kdd.server.cli import main

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "resnet50_3x3.kernel.toml"
LINES = EXAMPLE.read_text().split("\n")
SPEC, _ = load_spec(EXAMPLE.read_text(), str(EXAMPLE))
BUDGET = estimate_budget(SPEC.problem, SPEC.config, SPEC.target)


def position(prefix):
    """(line, character) of the first line of the example starting with ``prefix``, on its value."""
    line = next(i for i, text in enumerate(LINES) if text.startswith(prefix))
    return line, LINES[line].index("=") + 3


def test_a_layout_tag_prints_the_layout(capsys):
    line, col = position("src =")
    assert main(["hover", str(EXAMPLE), str(line), str(col)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("**src layout** `axb`: source, GEMM operand A, f16, dims mb32 ic64 ih56 iw56")
    assert "`(32,64,56,56):(200704,1,3584,64)`" in out and "| mb | 32 | 200704 | 401408 |" in out


def expected_grid():
    """The example's tg: threads along its N dim (oc) are X, along its M dims Y."""
    tg = SPEC.config.tg
    x, y = tg.get("oc"), prod(tg.get(d) for d in ("mb", "od", "oh", "ow"))
    return f"thread-group grid X x Y x Z = {x} x {y} x 1 = {x * y} threads"


def test_tg_prints_the_thread_group_grid_and_the_register_breakdown(capsys):
    line, col = position("tg =")
    assert main(["hover", str(EXAMPLE), str(line), str(col)]) == 0
    out = capsys.readouterr().out
    assert expected_grid() in out
    for budget_line in BUDGET.regs:  # the floor's lines (C, A, B) with their formulas
        shown = f"| `{budget_line.label}` |" in out and f"`{budget_line.formula}` | {budget_line.amount} |" in out
        assert shown == (budget_line.label in ("c", "a", "b"))
    assert f"**Floor: {BUDGET.reg_floor} of {BUDGET.reg_capacity}** GRFs (32 B) per thread" in out


def test_nothing_under_the_position_prints_nothing_and_exits_1(capsys):
    blank = LINES.index("")
    assert main(["hover", str(EXAMPLE), str(blank), "0"]) == 1
    assert capsys.readouterr().out == ""


def test_a_missing_file_exits_2_with_a_message(capsys, tmp_path):
    missing = tmp_path / "nope.kernel.toml"
    assert main(["hover", str(missing), "0", "0"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"cannot read {missing}: No such file or directory" in captured.err


def test_the_installed_script_prints_the_tg_hover():
    line, col = position("tg =")
    kdd = Path(sys.executable).parent / "kdd"
    done = subprocess.run([str(kdd), "hover", str(EXAMPLE), str(line), str(col)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert expected_grid() in done.stdout
    assert f"`{BUDGET.regs[0].formula}`" in done.stdout


def test_a_fifo_or_a_device_is_refused_not_waited_on_or_read_forever(tmp_path, capsys):
    """``kdd hover`` blocked on a FIFO and grew to GBs on /dev/zero."""
    import os

    fifo = tmp_path / "pipe.kernel.toml"
    os.mkfifo(fifo)
    big = tmp_path / "big.kernel.toml"
    with open(big, "wb") as f:
        f.truncate(300 * 2**20)  # sparse: 300 MB read as zeros
    for path in (fifo, "/dev/zero", big):
        assert main(["hover", str(path), "0", "0"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("kdd hover: error: cannot read") and len(err.splitlines()) == 1
