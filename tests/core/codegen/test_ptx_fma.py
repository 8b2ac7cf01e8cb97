"""sm_90's per-lane ``fma`` (the IR's ``Mad``): GEMMs with ``fma = "fma"`` lower to ``fma.rn.f32`` (f16/bf16
sources widened first), assemble with ptxas where it is installed, and run in the PTX simulator against the
float64 reference, transposed operands, a column-major destination and alpha/beta post-ops included."""
import pytest

from kdd.core.builder import build_kernel
from kdd.core.codegen.ptx import generate_ptx
from kdd.core.config import KernelConfig
from kdd.core.config.defaults import resolve_config
from kdd.core.passes.kernel_pipeline import run_pipeline
from kdd.core.problem import problem_from_text
from kdd.core.ptxsim import check_ptx
from kdd.core.targets import get_target


@pytest.mark.parametrize("types, tags, post_ops", [
    ("f32", {}, []),
    ("f32", {"src": "ba", "wei": "ba", "dst": "ba"}, ["scale:2.5", "sum:0.5"]),
    ("f16:f16:f16", {"src": "ab", "wei": "ba", "dst": "ab"}, []),
    ("bf16:bf16:f32", {}, ["sum"]),
])
def test_fma_gemms_check_ok_in_the_ptx_simulator(types, tags, post_ops):
    target = get_target("sm_90")
    p = problem_from_text("m32n40k24", types=types, tags=tags, post_ops=post_ops)
    kernel = build_kernel(p, resolve_config(p, target, KernelConfig(fma="fma")), target)
    listing = generate_ptx(kernel, run_pipeline(kernel).final, target, check=False)
    assert "fma.rn.f32" in listing.asm and "mma.sync" not in listing.asm
    widen = {"f16:f16:f16": "cvt.f32.f16", "bf16:bf16:f32": "shl.b32"}   # bf16 is an f32's top half
    if types in widen:
        assert widen[types] in listing.asm
    out = check_ptx(kernel, {"asm": listing.asm, "launch": listing.launch})
    assert out["ok"] and out["unwritten"] == 0, out
