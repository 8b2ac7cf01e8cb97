"""``kdd sweep`` on a local Ray cluster of 2 CPUs (one per module: Ray starts in seconds).

The runs are in-process (the sweep joins the fixture's cluster) except the interrupted one, which
is a separate ``kdd sweep`` process joining the same cluster by address, stopped with SIGINT as a
terminal's Ctrl-C would.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchdnn_data import BENCHDNN
from kdd.core.problem.batch_file import read_batch_file
from kdd.server.cli import main
from kdd.server.sweep.rows import read_rows

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "tests/data/onednn/conv_lookup_table.txt"
# Small descriptors (a few hundred multiply-adds per output point) in benchdnn's batch-file grammar:
# options, an include, a --mb override and a descriptor written twice.
BATCH = """# a few small convolutions
--dt=f16
mb2ic16ih8oc16oh8kh3ph1n"small:3x3"
--batch=inner
mb2ic16ih8oc16oh8kh3ph1n"small:3x3"
"""
INNER = """--dir=BWD_D
mb2ic32ih6oc16oh6kh1ph0
--mb=4 mb2ic8ih4oc8oh4kh1
"""


@pytest.fixture(scope="module")
def cluster():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


@pytest.fixture
def batch(tmp_path) -> Path:
    (tmp_path / "inner").write_text(INNER)
    path = tmp_path / "batch"
    path.write_text(BATCH)
    return path


def _sweep(capsys, *args) -> tuple[int, str]:
    code = main(["sweep", *map(str, args)])
    return code, capsys.readouterr().out


@pytest.mark.slow
def test_batch_file_one_row_per_descriptor_in_ray_workers_and_rerun_computes_nothing(cluster, batch, tmp_path,
                                                                                       capsys):
    out = tmp_path / "rows.jsonl"
    code, text = _sweep(capsys, batch, "--target", "xehpg", "--out", out)
    assert code == 0, text
    entries = read_batch_file(batch)
    rows = read_rows([out])         # in the order they finished
    by_label = {r["task"]["label"]: r for r in rows}
    assert len(rows) == len(by_label) == len(entries) == 4
    # each row is kdd compile --emit stats --json's object, with the problem benchdnn's options give
    for e in entries:
        r = by_label[f"{e.path}:{e.line} {e.text}"]
        assert (r["problem"]["prop"], r["problem"]["shape"]) == (e.problem.prop, e.problem.shape.canonical())
    assert [e.problem.prop for e in entries] == ["fwd", "bwd_d", "bwd_d", "fwd"]
    assert entries[2].problem.shape.mb == 4
    assert all(r["ok"] and r["stats"]["codegen"]["ok"] and r["verdict"]["outcome"] == "ok" for r in rows)
    # computed in Ray's worker processes, not this one; the descriptor written twice computed once
    assert {r["worker"].split(":")[1] for r in rows}.isdisjoint({str(os.getpid())})
    assert len({r["key"] for r in rows}) == len(entries) - 1
    assert f"{len(entries)} tasks: {len(entries) - 1} computed" in text
    code, text = _sweep(capsys, batch, "--target", "xehpg", "--out", out)
    assert code == 0 and f"{len(entries)} tasks: 0 computed" in text
    assert read_rows([out]) == rows


@pytest.mark.slow
def test_a_killed_run_resumes(cluster, batch, tmp_path, capsys):
    full = tmp_path / "full.jsonl"
    assert _sweep(capsys, batch, "--target", "xehpg", "--out", full)[0] == 0
    lines = full.read_text().splitlines()
    # what a run killed while writing its third row leaves: two rows and a cut line
    out = tmp_path / "rows.jsonl"
    out.write_text("\n".join(lines[:2]) + "\n" + lines[2][:40])
    missing = {json.loads(x)["key"] for x in lines} - {json.loads(x)["key"] for x in lines[:2]}
    code, text = _sweep(capsys, batch, "--target", "xehpg", "--out", out)
    assert code == 0 and f"{len(lines)} tasks: {len(missing)} computed" in text
    # one row per descriptor again (a twin of a saved row gets its row without computing)
    assert sorted(r["task"]["label"] for r in read_rows([out])) == sorted(json.loads(x)["task"]["label"]
                                                                        for x in lines)


def _interruptible() -> None:
    """In the child before exec: SIGINT as a terminal delivers it. An ignored or blocked SIGINT is inherited
    across exec, and a test runner started in the background by a non-interactive shell (``make test &``)
    has it ignored (POSIX): the sweep then ran to its end untouched by the signal."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
def test_ctrl_c_cancels_and_keeps_finished_rows(cluster, tmp_path):
    batch = tmp_path / "batch"
    # forty tasks: on a loaded machine eight could all finish before the signal arrives
    batch.write_text("--dt=f32\n" + "".join(f"mb1ic{8 * k}ih6oc8oh6kh3ph1\n" for k in range(1, 41)))
    out = tmp_path / "rows.jsonl"
    proc = subprocess.Popen([str(Path(sys.executable).with_name("kdd")), "sweep", str(batch), "--target", "xehpg",
                             "--stage", "check", "--bisect", "--workers", "1", "--address", cluster,
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_interruptible)
    # generous bounds: on a loaded machine Ray's start and the first check can take minutes; a fast run
    # waits no longer for them
    deadline = time.monotonic() + 300
    while not (out.exists() and out.read_text().count("\n") >= 1) and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=180)
    rows = read_rows([out])
    assert proc.returncode == 130, err
    assert 1 <= len(rows) < 40 and out.read_text().count("\n") == len(rows)   # whole rows only
    assert "a rerun resumes" in err


@pytest.mark.slow
def test_failures_are_rows_and_types_targets_multiply_configs(cluster, tmp_path, capsys):
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "base.kernel.toml").write_text(
        '[problem]\nop = "conv"\nshape = "mb2ic16ih8oc16oh8kh3ph1"\ntypes = "f16"\n[target]\nhw = "xehpg"\n')
    (configs / "child.kernel.toml").write_text('extends = "base.kernel.toml"\n[config]\niter = "mb8oc16ic16"\n')
    (configs / "broken.kernel.toml").write_text('[problem]\nop = "conv"\n[target]\nhw = "xehpg"\n')
    out = tmp_path / "rows.jsonl"
    code, text = _sweep(capsys, configs, "--types", "f16,bf16", "--target", "xehpg,xehpc", "--out", out)
    rows = read_rows([out])
    by = {(Path(r["task"]["label"]).name, r["task"]["target"], r["task"]["type"]): r for r in rows}
    assert len(rows) == 9      # broken reads as no config: one row; the others 2 types x 2 targets
    assert by[("broken.kernel.toml", "", "")]["verdict"] == {"outcome": "refused",
                                                              "class": "invalid-config:missing-key"}
    assert code == 2 and "refused invalid-config:missing-key: 1" in text
    child = by[("child.kernel.toml", "xehpg", "bf16")]
    assert child["problem"]["types"] == "bf16" and child["target"] == "xehpg"
    assert "i=mb8oc16ic16" in child["config"].split()       # the knob its file writes
    assert by[("base.kernel.toml", "xehpc", "f16")]["target"] == "xehpc"


@pytest.mark.slow
def test_lookup_table_lines_and_summarize(cluster, tmp_path, capsys):
    out = tmp_path / "rows.jsonl"
    code, text = _sweep(capsys, f"onednn:{TABLE}", "--target", "xehpg", "--prop", "bwd_w", "--types", "f32",
                        "--out", out)
    rows = read_rows([out])
    lines = [line for line in TABLE.read_text().splitlines()
             if line.startswith("xehpg") and " bwd_w " in line and "f32" in line.split()[3]]
    assert code == 0 and len(rows) == len(lines) > 0 and {r["task"]["type"] for r in rows} == {"f32"}
    assert all(r["problem"]["prop"] == "bwd_w" and r["target"] == "xehpg" for r in rows)
    table_lines = [line for line in text.splitlines() if line.startswith(("xehpg", "all"))]
    # a second copy of the same rows counts once
    again = tmp_path / "again.jsonl"
    again.write_text(out.read_text())
    assert _sweep(capsys, "--summarize", out, again) == (0, "\n".join(
        text.splitlines()[:len(table_lines) + 1]) + "\n")


@pytest.mark.slow
def test_bad_inputs_exit_2(cluster, batch, tmp_path, capsys):
    out = tmp_path / "rows.jsonl"
    assert main(["sweep", str(batch), "--out", str(out)]) == 2           # descriptors need a target
    assert "give --target" in capsys.readouterr().err
    assert main(["sweep", str(tmp_path / "nothing"), "--target", "xehpg", "--out", str(out)]) == 2
    assert main(["sweep", str(BENCHDNN / "conv/shapes_1x1"), "--target", "xehpg", "--types", "f17",
                 "--out", str(out)]) == 2
    assert "--types 'f17'" in capsys.readouterr().err
    assert not out.exists()
    # a process of its own: this one is connected to the module's cluster already
    ran = subprocess.run([str(Path(sys.executable).with_name("kdd")), "sweep", str(batch), "--target", "xehpg",
                          "--out", str(out), "--address", "127.0.0.1:1"], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 2 and "no Ray cluster answers at 127.0.0.1:1" in ran.stderr


# ---- without Ray: verdicts, the rows file, task keys ----------------------------------------------------------

from kdd.server.sweep.rows import RowWriter                                       # noqa: E402
from kdd.server.sweep.summary import table                                        # noqa: E402
from kdd.server.sweep.tasks import Selection, StageOptions, read_tasks            # noqa: E402
from kdd.server.sweep.work import lost, verdict                                   # noqa: E402


def _failure(code, internal=False, diagnostics=()):
    return {"ok": False, "failure": {"stage": "build", "message": "m", "code": code, "internal": internal},
            "diagnostics": list(diagnostics)}


def test_verdicts_name_what_ended_a_task():
    ok = {"ok": True, "stats": {}}
    assert verdict(ok) == {"outcome": "ok", "class": None}
    assert verdict(ok | {"check": {"ok": False}}) == {"outcome": "wrong", "class": "mismatch"}
    assert verdict(ok | {"check": {"first_bad": "cse", "stages": []}}) == {"outcome": "wrong", "class": "cse"}
    assert verdict(ok | {"check": {"first_bad": None, "stages": []}})["outcome"] == "ok"
    timed_wrong = {"ok": False, "verdict": "wrong", "timed": False}     # kdd bench's full-shape check failed
    assert verdict(ok | {"check": {"ok": True}, "bench": timed_wrong}) == \
        {"outcome": "wrong", "class": "wrong at the timed shape"}
    assert verdict(ok | {"check": _failure("too-large")}) == {"outcome": "refused", "class": "too-large"}
    diag = {"severity": "error", "code": "feasibility", "message": "m"}
    assert verdict(_failure("invalid-config", diagnostics=[{"severity": "warning", "code": "w"}, diag])) == \
        {"outcome": "refused", "class": "invalid-config:feasibility"}
    assert verdict(_failure("pass-error", internal=True)) == {"outcome": "error", "class": "pass-error"}
    assert verdict(lost("died")) == {"outcome": "lost", "class": "worker-lost"}


def test_rows_file_survives_a_cut_line(tmp_path):
    path = tmp_path / "rows.jsonl"
    row = {"key": "k1", "task": {"label": "a", "target": "xehpg", "prop": "fwd", "type": "f16"},
           "verdict": {"outcome": "ok", "class": None}, "wall_s": 1.5, "cpu_s": 1.0}
    path.write_text(json.dumps(row) + "\n" + json.dumps(row | {"key": "k2"})[:30])
    assert [r["key"] for r in read_rows([path])] == ["k1"]
    writer = RowWriter(path)
    writer.write(row | {"key": "k3", "verdict": {"outcome": "refused", "class": "build-error"}})
    writer.close()
    rows = read_rows([path])
    assert [r["key"] for r in rows] == ["k1", "k3"]
    [entry] = table(rows)
    assert (entry["tasks"], entry["ok"], entry["refused"], entry["classes"], entry["wall_s"]) == \
        (2, 1, 1, {"refused build-error": 1}, 3.0)


def test_task_keys_follow_content_stage_and_parents(tmp_path):
    base = tmp_path / "base.kernel.toml"
    base.write_text('[problem]\nop = "conv"\nshape = "mb2ic16ih8oc16oh8kh3ph1"\ntypes = "f16"\n'
                    '[target]\nhw = "xehpg"\n')
    child = tmp_path / "child.kernel.toml"
    child.write_text('extends = "base.kernel.toml"\n')
    [a] = read_tasks([str(child)], Selection(), StageOptions("compile"))
    assert dict(a.files) == {str(base): base.read_text(), str(child): child.read_text()}
    assert [t.key for t in read_tasks([str(child)], Selection(), StageOptions("compile"))] == [a.key]
    assert read_tasks([str(child)], Selection(), StageOptions("check"))[0].key != a.key
    base.write_text(base.read_text().replace("ic16", "ic32"))          # a parent's edit changes the key
    assert read_tasks([str(child)], Selection(), StageOptions("compile"))[0].key != a.key
    lines = [t for t in read_tasks([f"onednn:{TABLE}"], Selection(("xehpc",), ("tf32",)), StageOptions())]
    assert lines and all(t.target == "xehpc" and t.type == "tf32" for t in lines)
    assert len(lines) == sum(line.startswith("xehpc") and "tf32" in line.split()[3]
                             for line in TABLE.read_text().splitlines())


@pytest.mark.slow
def test_a_worker_that_dies_is_a_lost_row_and_runs_again(cluster):
    import ray

    from kdd.server.sweep.ray_pool import map_unordered
    from kdd.server.sweep.rows import done_keys
    from kdd.server.sweep.work import row

    def task(n):            # defined here, so that Ray ships it by value
        if n == 2:
            os._exit(1)     # the worker process dies mid-task
        return n * 10
    results, losses = {}, {}
    map_unordered(ray, task, [(1,), (2,), (3,)], workers=2, on_result=lambda a, r: results.update({a[0]: r}),
                  on_lost=lambda a, why: losses.update({a[0]: why}))
    assert results == {1: 10, 3: 30} and list(losses) == [2] and "Worker" in losses[2]
    [t] = read_tasks([f"onednn:{TABLE}"], Selection(("xehpg",), ("f16",), ("bwd_d",)), StageOptions())[:1]
    rows = [row(t, lost(losses[2]), 0, 0)]
    assert rows[0]["verdict"]["outcome"] == "lost" and done_keys(rows) == set()     # a rerun computes it


@pytest.mark.slow
def test_rows_follow_their_schema_and_hold_the_clis_object(cluster, batch, tmp_path, capsys):
    from protocol_schemas import validator

    out = tmp_path / "rows.jsonl"
    assert _sweep(capsys, batch, "--target", "xehpg", "--out", out)[0] == 0
    sweep_fields = ("key", "task", "verdict", "wall_s", "cpu_s", "worker", "same_as")
    for r in read_rows([out]):
        validator("sweep.schema.json").validate(r)
        validator("compile.schema.json").validate({k: v for k, v in r.items() if k not in sweep_fields})


@pytest.mark.slow
def test_asm_stage_rows_carry_the_assemblers_report_not_the_listing(cluster, tmp_path, capsys):
    batch = tmp_path / "batch"
    batch.write_text("--dt=f16 mb2ic16ih8oc16oh8kh3ph1\n")
    out = tmp_path / "rows.jsonl"
    assert _sweep(capsys, batch, "--target", "xehpg", "--stage", "asm", "--out", out)[0] == 0
    [r] = read_rows([out])
    assert r["asm"]["assembler"]["tool"] == "iga64" and r["asm"]["assembler"]["ok"] is True
    assert r["asm"]["registers"]["peak"] > 0 and r["asm"]["mix"]
    assert not {"asm", "lines", "listing"} & set(r["asm"]) and "allocations" not in r["asm"]["registers"]
