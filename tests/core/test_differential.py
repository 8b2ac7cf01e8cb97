"""The differential test: random kernels (problems, types, post-ops, layouts, configs; both Xe targets
and sm_90) checked by the interpreter and by their generated code in its simulator must agree. A
bounded sweep on a fixed seed; bench/differential.py runs long ones."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from differential import counts, sweep  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("target", ["xehpg", "xehpc", "sm_90"])
def test_interpreter_and_generated_code_agree_on_random_kernels(target):
    records = sweep(seed=25, count=4, targets=(target,))
    c = counts(records)
    wrong = [r for r in records if r["outcome"] in ("disagree", "ir-fault", "error")]
    assert wrong == [], wrong
    assert c["agree"] >= 2, c      # the sweep checks code, not only gaps
