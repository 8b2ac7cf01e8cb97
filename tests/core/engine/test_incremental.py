"""The engine re-runs only what an edit touched, and a restarted engine is warm from disk."""
from pathlib import Path

import pytest

from kdd.core.engine import DiskCache, Engine, Source

EXAMPLE = Path(__file__).parents[3] / "examples" / "resnet50_3x3.kernel.toml"
TEXT = EXAMPLE.read_text()


def _compile(engine, text, emit="passes,stats"):
    out = engine.compile(Source(text, str(EXAMPLE)), emit)
    assert out["ok"], out
    return out


def test_a_comment_edit_runs_no_stage_past_parsing():
    engine = Engine()
    first = _compile(engine, TEXT)
    before = dict(engine.runs)
    second = _compile(engine, "# a comment\n" + TEXT)
    assert engine.runs["parse"] == before["parse"] + 1
    assert {s: engine.runs[s] for s in ("build", "passes")} == {s: before[s] for s in ("build", "passes")}
    assert second["trace"] == first["trace"]
    # the line map's knob ranges follow the text: every range moved one line down
    ir = engine.compile(Source("# a comment\n" + TEXT, str(EXAMPLE)), "ir")["ir"]["lines"]
    old = engine.compile(Source(TEXT, str(EXAMPLE)), "ir")["ir"]["lines"]
    moved = [(a["origin"]["range"]["start"]["line"], b["origin"]["range"]["start"]["line"])
             for a, b in zip(old, ir) if "range" in a.get("origin", {})]
    assert moved and all(new == was + 1 for was, new in moved)


def test_a_check_edit_runs_only_the_check():
    engine = Engine()
    text = TEXT + "\n[check]\nseed = 1\n" if "[check]" not in TEXT else TEXT
    _compile(engine, text)
    engine.check(Source(text, str(EXAMPLE)))
    before = dict(engine.runs)
    edited = text.replace("seed = 1", "seed = 2") if "seed = 1" in text else text + "\nseed = 2\n"
    _compile(engine, edited)
    verdict = engine.check(Source(edited, str(EXAMPLE)))
    assert verdict["ok"]
    assert engine.runs["check"] == before["check"] + 1
    assert engine.runs["passes"] == before["passes"] and engine.runs["build"] == before["build"]


def test_a_config_that_builds_the_same_ir_runs_no_pass():
    engine = Engine()
    _compile(engine, TEXT)
    before = dict(engine.runs)
    # "acdb" is "axb" spelled out for a 2D convolution: another problem to build, the same IR.
    edited = TEXT.replace('src = "axb"', 'src = "acdb"')
    assert edited != TEXT
    out = _compile(engine, edited)
    assert out["config"]  # still compiles
    assert engine.runs["build"] == before["build"] + 1
    assert engine.runs["passes"] == before["passes"]


def test_a_restarted_engine_serves_an_unchanged_config_from_disk(tmp_path):
    first = _compile(Engine(disk=DiskCache(tmp_path)), TEXT, "ir,passes,stats")
    restarted = Engine(disk=DiskCache(tmp_path))
    again = _compile(restarted, TEXT, "ir,passes,stats")
    assert restarted.runs["build"] == 0 and restarted.runs["passes"] == 0
    assert again == first


def test_a_damaged_cache_entry_is_recomputed_and_rewritten(tmp_path):
    _compile(Engine(disk=DiskCache(tmp_path)), TEXT, "ir")
    entries = list(tmp_path.glob("*/*.msgpack"))
    assert entries
    for i, path in enumerate(entries):
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2] if i % 2 == 0 else b"\x00garbage")
    engine = Engine(disk=DiskCache(tmp_path))
    assert _compile(engine, TEXT, "ir")["ir"]["text"].startswith("kernel {")
    assert engine.runs["build"] == 1
    fixed = Engine(disk=DiskCache(tmp_path))
    _compile(fixed, TEXT, "ir")
    assert fixed.runs["build"] == 0


def test_the_disk_cache_is_bounded_and_evicts_the_least_recently_used(tmp_path):
    cache = DiskCache(tmp_path, max_bytes=3000)
    for i in range(10):
        cache.put(f"{i:064x}", {"blob": "x" * 500, "i": i})
    total = sum(p.stat().st_size for p in tmp_path.glob("*/*.msgpack"))
    assert total <= 3000 and cache.evictions > 0
    assert cache.get(f"{9:064x}")["i"] == 9 and cache.get(f"{0:064x}") is None


def test_an_entry_under_another_key_is_not_trusted(tmp_path):
    cache = DiskCache(tmp_path)
    cache.put("a" * 64, {"v": 1})
    src = next(tmp_path.glob("*/*.msgpack"))
    dst = cache._path("b" * 64)
    dst.parent.mkdir(exist_ok=True)
    dst.write_bytes(src.read_bytes())
    assert cache.get("b" * 64) is None and not dst.exists()
    assert cache.get("a" * 64) == {"v": 1}


def test_an_edited_parent_is_seen_through_extends(tmp_path):
    parent = tmp_path / "base.kernel.toml"
    parent.write_text(TEXT)
    child = tmp_path / "child.kernel.toml"
    child.write_text('extends = "base.kernel.toml"\n')
    engine = Engine()
    first = engine.compile(Source(child.read_text(), str(child)), "ir")
    assert first["ok"]
    parent.write_text(TEXT.replace('op = "conv"', 'op = "convv"'))
    second = engine.compile(Source(child.read_text(), str(child)), "ir")
    assert not second["ok"] and any(d["code"] == "extends" for d in second["diagnostics"])


def test_assembly_is_memoized_and_sass_is_sm90s():
    engine = Engine()
    out = engine.compile(Source(TEXT, str(EXAMPLE)), "asm")
    assert out["ok"] and out["asm"]["assembler"]["ok"] and engine.runs["codegen"] == 1
    engine.compile(Source("# edit\n" + TEXT, str(EXAMPLE)), "asm")
    assert engine.runs["codegen"] == 1  # a comment lowers nothing again
    failed = engine.compile(Source(TEXT, str(EXAMPLE)), "sass")
    assert failed["ok"] is False and failed["failure"]["code"] == "bad-emit" and "sm_90" in failed["error"]


def test_sm90_disassembles_only_for_what_shows_live_registers(monkeypatch):
    import kdd.core.codegen.ptx as ptx
    from kdd.core.codegen.ptx.tools import find_tool

    if find_tool("ptxas") is None or find_tool("nvdisasm") is None:
        pytest.skip("ptxas/nvdisasm (PyPI nvidia-cuda-nvcc/-nvdisasm) not installed")
    runs, real = [], ptx.tools.sass
    monkeypatch.setattr(ptx, "sass", lambda cubin: runs.append(1) or real(cubin))  # nvdisasm's runner
    text = ('[problem]\nop = "gemm"\nshape = "m64n64k64"\ntypes = "f16:f16:f32"\n'
            '[target]\nhw = "sm_90"\n')
    engine, source = Engine(), Source(text, "small.kernel.toml")
    assert engine.compile(source, "passes")["ok"] and runs == [] and engine.runs["codegen"] == 1  # ptxas alone
    shown = engine.compile(source, "sass")
    assert shown["ok"] and shown["sass"]["lines"] and runs == [1] and engine.runs["codegen"] == 2
    assert engine.compile(source, "ir")["ok"] and runs == [1] and engine.runs["codegen"] == 2  # the full one serves
    stats = Engine().compile(source, "stats")["stats"]
    assert stats["codegen"]["peak"] == shown["sass"]["registers"]["peak"] > 0


def test_xe_maps_ir_lines_and_models_registers_only_for_what_shows_them(monkeypatch):
    """A compile that shows no listing and no stats (``passes``) still generates and assembles the code
    (a kernel it cannot generate is an error whatever is emitted) but neither maps IR lines nor runs the IR
    register model; ``asm`` then makes the full listing, which later compiles reuse."""
    import kdd.core.codegen.xe as xe

    models, real = [], xe.ir_model_registers
    monkeypatch.setattr(xe, "ir_model_registers", lambda *a: models.append(1) or real(*a))
    engine, source = Engine(), Source(TEXT, str(EXAMPLE))
    light = engine.compile(source, "passes")
    assert light["ok"] and models == [] and engine.runs["codegen"] == 1
    shown = engine.compile(source, "asm,stats")
    assert shown["ok"] and models == [1] and engine.runs["codegen"] == 2
    assert any("ir_node" in line for line in shown["asm"]["lines"])
    assert engine.compile(source, "ir")["ok"] and engine.runs["codegen"] == 2  # the full one serves
    assert shown["stats"] == Engine().compile(source, "stats")["stats"]
