"""``kdd tune`` on a local Ray cluster of 2 CPUs (one per module): trials checked before they count,
the best written beside the file, the history reused by a rerun."""
from __future__ import annotations

import re

import pytest

from kdd.core.engine import Engine, Source
from kdd.server.cli import main
from kdd.server.sweep.rows import read_rows

CONFIG = """# a small f16 convolution
[problem]
op = "conv"
shape = "mb2ic32ih8oc32oh8kh3ph1"
types = "f16"

[target]
hw = "xehpg"

[config]
iter = "mb8oc16ic16"

[check]
shape = "mb1ic32ih4oc32oh4kh3ph1"
"""
# ic8 is not a whole dpas K (16 f16 on xehpg): those trials are refused and must not count
SPACE = "iter=mb8oc16ic16|mb8oc32ic16|mb8oc16ic8; slm.bufs=2|3"


@pytest.fixture(scope="module")
def cluster():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield
    ray.shutdown()


@pytest.mark.slow
def test_grid_trials_checked_best_written_and_history_reused(cluster, tmp_path, capsys):
    path = tmp_path / "small.kernel.toml"
    path.write_text(CONFIG)
    assert main(["tune", str(path), "--space", SPACE, "--sampler", "grid", "--budget", "10"]) == 0
    out = capsys.readouterr().out
    history = read_rows([tmp_path / "small.tune.jsonl"])
    trials = [r for r in history if r["trial"]["number"] is not None]
    assert len(trials) == 6 and len(history) == 7               # the grid's 6 points and the config as written
    assert all(r["check"]["ok"] for r in history if r["verdict"]["outcome"] == "ok")
    refused = [r for r in trials if r["trial"]["params"]["iter"] == "mb8oc16ic8"]
    assert [r["verdict"]["outcome"] for r in refused] == ["refused", "refused"]
    assert all(r["trial"]["value"] is None for r in refused)
    counted = [r for r in trials if r["trial"]["value"] is not None]
    best_value = min(r["trial"]["value"] for r in counted)
    # the best: a counted trial of the least figure, written as a config that reads, with its figures
    best = (tmp_path / "small.tuned.kernel.toml").read_text()
    params = dict(re.findall(r"with iter=(\S+), slm\.bufs=(\d)", best))
    winner = next(r for r in counted if r["trial"]["value"] == best_value
                  and (r["trial"]["params"]["iter"], r["trial"]["params"]["slm.bufs"]) in params.items())
    assert f"{best_value * 1e6:.2f} us by the roofline" in best and "4 checked right" in best
    parsed = Engine().parse(Source(best, str(tmp_path / "small.tuned.kernel.toml")))
    assert not parsed.errors
    assert parsed.spec.config.iter.as_dict() == {"mb": 8, "oc": 32, "ic": 16} == \
        dict((k, int(v)) for k, v in re.findall(r"([a-z]+)(\d+)", winner["trial"]["params"]["iter"]))
    assert parsed.spec.config.slm.bufs == int(winner["trial"]["params"]["slm.bufs"])
    assert "best: trial" in out
    # a rerun computes nothing: every trial comes from the history, none is appended
    assert main(["tune", str(path), "--space", SPACE, "--sampler", "grid", "--budget", "10"]) == 0
    assert capsys.readouterr().out.count("(from the history)") == 7
    assert len(read_rows([tmp_path / "small.tune.jsonl"])) == 7


def test_bad_space_or_file_exits_2(tmp_path, capsys):
    path = tmp_path / "small.kernel.toml"
    path.write_text(CONFIG)
    for space, said in (("iter=mb8oxx", "needs a size"), ("slm.bufx=2", "has no field 'bufx'"),
                        ("iter", "write KNOB=VALUE"), ("tiles=4", "unknown knob 'tiles'")):
        assert main(["tune", str(path), "--space", space]) == 2
        assert said in capsys.readouterr().err
    child = tmp_path / "child.kernel.toml"
    child.write_text('extends = "small.kernel.toml"\n')
    assert main(["tune", str(child), "--space", "slm.bufs=2"]) == 2
    assert "extends another" in capsys.readouterr().err
    sm90 = tmp_path / "sm90.kernel.toml"
    sm90.write_text(CONFIG.replace('"xehpg"', '"sm_90"'))
    assert main(["tune", str(sm90), "--space", "slm.bufs=2"]) == 2
    assert "--objective bench" in capsys.readouterr().err


@pytest.mark.slow
def test_space_auto_tries_the_heuristics_tuning_space(cluster, tmp_path, capsys):
    from kdd.core.config.search import tuning_space

    path = tmp_path / "small.kernel.toml"
    path.write_text(CONFIG)
    spec = Engine().parse(Source(CONFIG, str(path))).spec
    lines = [c.line() for c in tuning_space(spec.problem, spec.target)]
    assert main(["tune", str(path), "--space", "auto", "--sampler", "grid", "--budget", "50"]) == 0
    trials = [r for r in read_rows([tmp_path / "small.tune.jsonl"]) if r["trial"]["number"] is not None]
    assert [r["trial"]["params"]["line"] for r in trials] != [] and \
        sorted(r["trial"]["params"]["line"] for r in trials) == sorted(lines)
    assert all(r["config"] == r["trial"]["params"]["line"] for r in trials if r["ok"])   # compiled as proposed


@pytest.mark.slow
def test_nothing_is_written_when_no_trial_beats_the_config_as_written(cluster, tmp_path, capsys):
    """The grid holds the config as written and a refused variant: no trial is faster, so no "tuned"
    file appears (one slower than its source would mislead), and the command says so."""
    path = tmp_path / "small.kernel.toml"
    path.write_text(CONFIG)
    assert main(["tune", str(path), "--space", "iter=mb8oc16ic16|mb8oc16ic8", "--sampler", "grid"]) == 0
    assert "no trial beat it, nothing written" in capsys.readouterr().out
    assert not (tmp_path / "small.tuned.kernel.toml").exists()
