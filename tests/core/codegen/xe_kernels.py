"""Shipped Xe examples built and run through the pass pipeline once per test session."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from kdd.core.builder import build_kernel
from kdd.core.passes.kernel_pipeline import run_pipeline
from kdd.core.spec import load_spec

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def xe_examples() -> list[str]:
    out = []
    for path in sorted(EXAMPLES.glob("*.kernel.toml")):
        spec, _ = load_spec(path.read_text(), str(path))
        if spec is not None and spec.target.xe is not None:
            out.append(path.name)
    return out


@lru_cache(maxsize=None)
def final(name: str, edit: tuple[str, str] | None = None):
    """``(kernel, final IR, target)`` of one example (its text with ``edit``'s first string replaced by
    its second)."""
    path = EXAMPLES / name
    text = path.read_text()
    if edit is not None:
        assert edit[0] in text
        text = text.replace(*edit)
    spec, _ = load_spec(text, str(path))
    kernel = build_kernel(spec.problem, spec.config, spec.target)
    return kernel, run_pipeline(kernel).final, spec.target
