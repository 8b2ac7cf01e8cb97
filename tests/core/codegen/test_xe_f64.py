"""f64 problems on Xe-HPC (the one Xe target with f64 ALU): post-ops and reorders lowered in f64.

Xe takes a 64-bit immediate as a ``mov``'s source only (iga64 rejects ``mul (16|M0) ... 0x3FF8...:df``),
so a post-op's f64 constant goes through a register; the eltwise post-ops compute in the problem's f64
(a ``sel`` on ``:f`` registers halved every accumulator); a same-type reorder of 8-byte values copies
them as they are. Each case runs the assembled kernel in kdd's Xe simulator against the float64
reference, whose tolerance for f64 (1e-12) an f32 step would miss by orders of magnitude."""
from __future__ import annotations

import shutil

import pytest

from kdd.core.engine import Engine
from kdd.core.engine.engine import Source

pytestmark = pytest.mark.skipif(not shutil.which("iga64"), reason="iga64 assembles the checked code")

DOC = """[problem]
op = "conv"
prop = "{prop}"
shape = "g2mb3ic6ih7oc10oh4kh3sh2ph2"
types = "f64"
post_ops = {post_ops}
[target]
hw = "xehpc"
"""


@pytest.mark.parametrize("prop, post_ops", [
    ("fwd", '["relu", "add:f32:per_oc", "sum:1.5"]'),
    ("fwd", '["linear:2:-1", "square"]'),
    ("bwd_w", '["bias"]'),
])
def test_f64_kernels_check_in_the_simulator(prop, post_ops):
    out = Engine().check(Source(DOC.format(prop=prop, post_ops=post_ops)))
    assert out["artifact"] == "asm", out
    assert out["verdict"] == "ok", out
    if prop == "fwd":
        assert out["tol"] <= 1e-12 and out["rel_err"] < 1e-12, out


def test_an_f64_eltwise_without_an_f64_lowering_is_refused_on_its_knob():
    out = Engine().check(Source(DOC.format(prop="fwd", post_ops='["gelu_erf"]')))
    assert not out["ok"] and "verdict" not in out, out      # a refusal (exit 2), no verdict on the kernel
    failure = out["failure"]
    assert failure["code"] == "no-codegen" and failure["knob"] == "post_ops" and not failure["internal"], failure
    assert "gelu_erf on f64" in failure["message"], failure
