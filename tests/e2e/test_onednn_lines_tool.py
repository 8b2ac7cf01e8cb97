"""tools/onednn_lines.py as a user runs it: rows streamed as they are done, and tables from saved rows."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools/onednn_lines.py"


def _tool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True, timeout=300)


def test_rows_stream_and_summarize(tmp_path):
    rows, out = tmp_path / "rows.jsonl", tmp_path / "out.json"
    ran = _tool("--stage", "config", "--only", "xehpg/bwd_d", "--jobs", "2", "--rows", str(rows), "--json", str(out))
    assert ran.returncode == 0, ran.stderr
    streamed = [json.loads(line) for line in rows.read_text().splitlines()]
    written = json.loads(out.read_text())["rows"]
    assert sorted(map(json.dumps, streamed)) == sorted(map(json.dumps, written))
    assert {r["target"] for r in written} == {"xehpg"} and {r["prop"] for r in written} == {"bwd_d"}
    assert all(r["run"] == "config" and r["cpu_s"] >= 0 for r in written)
    total_line = next(line for line in ran.stdout.splitlines() if line.startswith("all: "))
    # a second share of the same rows (a re-run) counts once
    again = tmp_path / "again.jsonl"
    again.write_text(rows.read_text())
    summary = _tool("--summarize", str(rows), str(again))
    assert summary.returncode == 0, summary.stderr
    n = len(written)
    assert f"all: {sum(r['outcome'] == 'accepted' for r in written)} of {n} accepted" in summary.stdout
    assert total_line.split(" (")[0] in summary.stdout


def test_summarize_refuses_mixed_stages(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    row = {"entry": "e", "target": "xehpg", "prop": "fwd", "type": "f16", "outcome": "accepted"}
    a.write_text(json.dumps(row | {"run": "config"}) + "\n")
    b.write_text(json.dumps(row | {"type": "bf16", "run": "check"}) + "\n")
    ran = _tool("--summarize", str(a), str(b))
    assert ran.returncode == 2 and "mix stages" in ran.stderr
