"""Trace output: the table, JSON, IR after a pass, diffs, and the CLI helpers built on them."""
import json

import pytest
from passes_kernels import example_kernel

from kdd.core.ir import to_text
from kdd.core.passes import PassCache
from kdd.core.passes.kernel_pipeline import KERNEL_PIPELINE, run_pipeline
from kdd.core.passes.trace_view import (UnknownPassError, diff_after, ir_after, render_trace_table,
                                        trace_to_json)

KERNEL = example_kernel("gemm_bert")


def test_table_lists_build_then_every_pass_in_order():
    trace = run_pipeline(KERNEL)
    lines = render_trace_table(trace_to_json(trace)).splitlines()
    assert lines[0].split() == ["pass", "changed", "ms", "nodes"]
    assert [ln.split()[0] for ln in lines[1:]] == ["build"] + KERNEL_PIPELINE.names()
    row = dict((ln.split()[0], ln.split()) for ln in lines[2:])
    for e in trace.entries:
        assert row[e.name][1] == ("yes" if e.changed else "no") and int(row[e.name][-1]) == e.nodes
    warm = run_pipeline(KERNEL, cache=_filled_cache())
    assert all(ln.split()[2] == "cached" for ln in render_trace_table(trace_to_json(warm, with_ir=False)).splitlines()[2:])


def _filled_cache():
    cache = PassCache()
    run_pipeline(KERNEL, cache=cache)
    return cache


def test_json_has_per_pass_name_changed_ms_nodes_and_ir_text():
    trace = run_pipeline(KERNEL)
    data = json.loads(json.dumps(trace_to_json(trace)))
    assert data["build"]["ir"] == to_text(KERNEL.body)
    assert [p["name"] for p in data["passes"]] == KERNEL_PIPELINE.names()
    for p, e in zip(data["passes"], trace.entries):
        assert (p["changed"], p["nodes"], p["ir"]) == (e.changed, e.nodes, to_text(e.ir)) and p["ms"] >= 0
    cse = next(p for p in data["passes"] if p["name"] == "cse")
    assert set(cse["notes"]) == {"budget_bytes", "named", "skipped"}


def test_ir_after_and_diff_between_consecutive_passes():
    trace = run_pipeline(KERNEL)
    assert ir_after(trace, "build") is KERNEL.body
    assert ir_after(trace, "unroll") is trace.after("unroll")
    diff = diff_after(trace, "unroll")
    assert diff.startswith("--- before unroll\n+++ after unroll\n")
    assert any(ln.startswith("-") and "for (" in ln for ln in diff.splitlines()[2:])
    unchanged = next(e.name for e in trace.entries if not e.changed)
    assert diff_after(trace, unchanged) == ""
    with pytest.raises(UnknownPassError, match="did you mean 'unroll'"):
        ir_after(trace, "unrol")
