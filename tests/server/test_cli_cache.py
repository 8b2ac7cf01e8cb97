"""``kdd compile``/``kdd check`` over the on-disk cache: a repeat is answered from ``$KDD_CACHE_DIR`` without the
compiler, ``--no-cache`` neither reads nor writes it, and a reply is only served for exactly what it was
computed from (the config, the files it extends, the tools)."""
from __future__ import annotations

import json

import pytest

from kdd.core import toolchain
from kdd.core.engine import engine as engine_module
from kdd.server.cli import main
from test_cli_compile import CONFIG

PARENT = CONFIG   # the parent every test config here extends


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("KDD_CACHE_DIR", str(root))
    return root


@pytest.fixture
def config(tmp_path):
    (tmp_path / "parent.kernel.toml").write_text(PARENT)
    path = tmp_path / "child.kernel.toml"
    path.write_text('extends = "parent.kernel.toml"\n\n[config]\ntg = "oc1"\n')
    return path


def compile_json(capsys, path, *extra) -> dict:
    assert main(["compile", str(path), "--emit", "passes", "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def no_engine(monkeypatch):
    """From here on, any compile or check the engine runs fails the test."""
    def boom(*args, **kwargs):
        raise AssertionError("the engine ran: the reply was not served from the cache")
    monkeypatch.setattr(engine_module.Engine, "compile", boom)
    monkeypatch.setattr(engine_module.Engine, "check", boom)


def test_a_repeated_compile_is_answered_from_the_cache_dir(cache, config, capsys, monkeypatch):
    first = compile_json(capsys, config)
    assert any(cache.rglob("*.msgpack"))
    no_engine(monkeypatch)
    assert compile_json(capsys, config) == first


def test_no_cache_neither_reads_nor_writes_the_cache(cache, config, capsys, monkeypatch):
    compile_json(capsys, config, "--no-cache")
    assert not cache.exists()
    compile_json(capsys, config)
    no_engine(monkeypatch)
    with pytest.raises(AssertionError, match="the engine ran"):
        main(["compile", str(config), "--emit", "passes", "--no-cache"])


def test_an_edited_parent_is_compiled_again(cache, config, capsys):
    first = compile_json(capsys, config)
    parent = config.parent / "parent.kernel.toml"
    parent.write_text(PARENT.replace("ih6oc16oh6", "ih7oc16oh7"))
    second = compile_json(capsys, config)
    assert "ih6" in first["problem"]["shape"] and "ih7" in second["problem"]["shape"]


def test_a_changed_tool_is_a_miss(cache, config, capsys, monkeypatch):
    compile_json(capsys, config)
    real = toolchain.stamp
    monkeypatch.setattr(toolchain, "stamp", lambda name: (*real(name), "upgraded"))
    no_engine(monkeypatch)
    with pytest.raises(AssertionError, match="the engine ran"):
        main(["compile", str(config), "--emit", "passes"])


def test_a_repeated_check_reuses_only_the_verdict_the_engine_verified(cache, config, capsys, monkeypatch):
    """A check's verdict is never answered from the CLI's reply cache (a reply planted under its computable key
    could pass a wrong kernel): the engine rebuilds the kernel and serves the stored verdict only for the very
    code it judged, without simulating it again; other inputs to the check are a new check."""
    assert main(["check", str(config), "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["verdict"] == "ok"

    def simulated_again(*args, **kwargs):
        raise AssertionError("the code was simulated again")
    monkeypatch.setattr(engine_module.Engine, "_code_check", simulated_again)
    assert main(["check", str(config), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == verdict
    config.write_text(config.read_text() + "\n[check]\nseed = 7\n")
    with pytest.raises(AssertionError, match="simulated again"):
        main(["check", str(config)])
