"""The PTX and main loop of a shipped sm_90 example, for tests that count what the loop issues."""
from __future__ import annotations

import re
from pathlib import Path

from kdd.core.builder import build_kernel
from kdd.core.codegen.ptx import generate_ptx
from kdd.core.passes.kernel_pipeline import run_pipeline
from kdd.core.spec import load_spec

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def example_ptx(name: str, folder: Path = EXAMPLES) -> str:
    """The PTX of ``<folder>/<name>.kernel.toml`` (an example by default) after every pass."""
    path = folder / f"{name}.kernel.toml"
    spec, _ = load_spec(path.read_text(), str(path))
    kernel = build_kernel(spec.problem, spec.config, spec.target)
    return generate_ptx(kernel, run_pipeline(kernel).final, spec.target, check=False).to_dict()["asm"]


def main_loop(asm: str) -> str:
    """The body of the first loop of ``asm`` that branches back to its own label."""
    loop = re.search(r"^(\$L_loop_\d+):$(.*?)bra\.uni \1;", asm, re.M | re.S)
    assert loop is not None, "no main loop in the PTX"
    return loop.group(2)
