"""The byte-identity guard (tools/snapshot.py): every example's IR after every pass, assembly, PTX, SASS and
stats have the digests recorded in tests/data/snapshot.json.

A change that is meant to change generated code re-records the digests
(``tools/snapshot.py record``) in the same commit, so the commit says which
examples it changed; a refactor leaves them alone."""
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _snapshot_module():
    spec = importlib.util.spec_from_file_location("kdd_snapshot_tool", ROOT / "tools" / "snapshot.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


snapshot = _snapshot_module()


def test_differences_name_changed_missing_and_new_artifacts():
    recorded = {"a": {"asm": "1", "ir:final": "2", "sass": "3"}, "gone": {"asm": "4"}}
    now = {"a": {"asm": "1", "ir:final": "9", "stats": "5"}, "new": {"asm": "6"}}
    assert snapshot.differences(recorded, now) == {"a": ["ir:final", "-sass", "+stats"], "gone": ["-example"],
                                                   "new": ["+example"]}
    assert snapshot.differences(recorded, recorded) == {}


def test_an_example_has_every_artifact():
    texts = snapshot.artifacts(ROOT / "examples" / "sm90_gemm.kernel.toml")
    assert {"ir:build", "ir:final", "asm", "listing", "sass", "stats"} <= set(texts)
    assert texts["asm"].lstrip().startswith("//") or ".version" in texts["asm"]


@pytest.mark.slow
def test_every_example_matches_its_recorded_snapshot():
    recorded = snapshot.json.loads(snapshot.MANIFEST.read_text())
    now = snapshot.snapshot(snapshot.examples(), log=lambda line: None)
    assert set(now) == set(recorded)
    assert snapshot.differences(recorded, now) == {}, "run tools/snapshot.py compare to see which artifacts changed"
