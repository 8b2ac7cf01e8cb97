"""Emit items: validated with the span of a bad pass name; each item yields its field."""
from pathlib import Path

import pytest

from kdd.core.engine import Engine, Source, StageFailed
from kdd.core.engine.emit import needs_trace, parse_emit

GEMM = Path(__file__).parents[3] / "examples" / "gemm_bert.kernel.toml"


def test_items_parse_from_a_string_or_a_list():
    assert parse_emit("ir, passes,diff:hoist,ir:build") == ("ir", "passes", "diff:hoist", "ir:build")
    assert parse_emit(["stats", "check"]) == ("stats", "check")
    assert needs_trace(("ir:cse",)) and needs_trace(("passes",)) and needs_trace(("diff:hoist",))
    assert not needs_trace(("ir", "check")) and not needs_trace(("asm", "stats", "verify"))


@pytest.mark.parametrize("emit, words", [
    ("passes, ir:csee", ["'csee' at 11..15", "did you mean 'cse'"]),
    ("diff:build", ["'build'"]),  # the builder's IR has nothing before it
    ("ir,bogus", ["cannot emit 'bogus'"]),
    (" , ", ["nothing to emit"]),
    (["ir", 3], ["is a string"]),
])
def test_bad_items_fail_with_a_clear_message(emit, words):
    with pytest.raises(StageFailed) as info:
        parse_emit(emit)
    assert info.value.failure.stage == "input" and info.value.failure.code == "bad-emit"
    assert all(w in info.value.failure.message for w in words)


def test_each_item_fills_its_field_from_one_trace():
    engine = Engine()
    source = Source(GEMM.read_text(), str(GEMM))
    out = engine.compile(source, "passes,ir:build,ir:peephole,diff:unroll,diff:barrier-opt")
    assert out["ok"]
    passes = out["trace"]["passes"]
    assert out["ir_after"]["build"] == out["trace"]["build"]["ir"]
    assert out["ir_after"]["peephole"] == next(p["ir"] for p in passes if p["name"] == "peephole")
    assert out["diff"]["unroll"].startswith("--- before unroll\n+++ after unroll\n")
    unchanged = next(p for p in passes if p["name"] == "barrier-opt")
    assert (out["diff"]["barrier-opt"] == "") == (not unchanged["changed"])
    assert engine.runs["passes"] == 1
