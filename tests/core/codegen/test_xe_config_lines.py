"""oneDNN config lines kdd accepts assemble cleanly within budget (or say why not): prefetch,
header reuse, split A, SLM buffering variants, unrolling, dpasw, mad, split K (atomic adds)."""
from __future__ import annotations

import re
import shutil

import pytest

from kdd.core.builder import build_kernel
from kdd.core.codegen import OutOfRegisters, generate_asm
from kdd.core.codegen.xe.verify import verify
from kdd.core.passes.kernel_pipeline import run_pipeline
from kdd.core.spec import load_spec

from xe_kernels import EXAMPLES

BASE = "simd=8 l=ic16 T=ow4oc4 i=mb32oc8ic16"
LINES = [f"{BASE} p=x2", f"{BASE} P=r", f"{BASE} S=a2", f"{BASE} s=x2", f"{BASE} s=x0 p=x3", f"{BASE} u=ic2",
         f"{BASE} s=x3.a", f"fma=dpasw {BASE}", "fma=mad simd=16 l=ic256 T=ow4oc4 i=mb16oc16",
         "simd=8 l=ic2 T=ow4oc4 i=mb32oc8ic16"]


def _kernel(line: str, post_ops: str | None = None):
    text = (EXAMPLES / "resnet50_1x1.kernel.toml").read_text()
    if post_ops is not None:
        text = text.replace('dst = "axb"\n', f'dst = "axb"\npost_ops = {post_ops}\n', 1)
    text = re.sub(r"\[config\][^\[]*", f'[config]\nline = "{line}"\n\n', text, flags=re.S)
    if "l=ic2 " in line:        # split K: partial sums are added atomically into an f32 destination
        text = text.replace('types = "f16:f16:f16"', 'types = "f16:f16:f32"')
    spec, diags = load_spec(text, "variant.kernel.toml")
    assert spec is not None and not [d for d in diags if d.severity.name == "ERROR"], diags
    kernel = build_kernel(spec.problem, spec.config, spec.target)
    return kernel, run_pipeline(kernel).final, spec.target


@pytest.mark.parametrize("line", LINES)
def test_config_line_assembles_and_verifies(line):
    kernel, body, target = _kernel(line)
    try:
        listing = generate_asm(kernel, body, target, check=shutil.which("iga64") is not None)
    except OutOfRegisters as exc:
        assert exc.live and exc.repairs
        return
    out = listing.to_dict()
    assert verify(out) == []
    if out["assembler"]:
        assert out["assembler"]["ok"], out["assembler"]["messages"]
    if "l=ic2 " in line:
        assert any("atomic_fadd.ugm" in ln["text"] for ln in out["lines"])
    if "s=x0 p=x3" in line:     # prefetch streams (only without SLM buffering)
        assert any("load.ugm" in ln["text"] and "null:0" in ln["text"] for ln in out["lines"])


@pytest.mark.parametrize("post_ops", ['["relu:0.1"]', '["gelu_tanh"]', '["swish"]', '["elu"]', '["tanh"]',
                                      '["logistic"]', '["exp"]', '["sqrt"]', '["abs", "square"]'])
def test_eltwise_post_ops_assemble(post_ops):
    kernel, body, target = _kernel(BASE, post_ops)
    out = generate_asm(kernel, body, target, check=shutil.which("iga64") is not None).to_dict()
    assert verify(out) == []
    assert not out["assembler"] or out["assembler"]["ok"], out["assembler"]["messages"]
    assert any(ln.get("ir_node", {}).get("step", "").startswith("epilogue.post_op") for ln in out["lines"])
    if "tanh" in post_ops or "swish" in post_ops or "logistic" in post_ops:
        assert any("math.inv" in ln["text"] for ln in out["lines"])
