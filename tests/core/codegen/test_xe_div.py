"""The binary ``div`` post-op on Xe: iga64 has no ``math.fdiv`` for xehpg or xehpc, so an f32 division is
``math.inv`` and a ``mul`` (oneDNN's injector's form); before, every ``div`` post-op was refused as an
"integer DIV by a non-constant divisor". Checked in kdd's simulator against the float64 reference."""
from __future__ import annotations

import re
import shutil

import pytest

from kdd.core.engine import Engine, Source

pytestmark = pytest.mark.skipif(not shutil.which("iga64"), reason="iga64 assembles the checked code")


@pytest.mark.parametrize("target, types, shape", [
    ("xehpg", "f32", "b2m9n13k11"),                        # GEMM, every broadcast policy
    ("xehpc", "u8:s8:s8", "mb2ic9ih5oc13oh5kh3ph1"),       # int8 conv: f32 post-ops, a saturated s8 store
])
def test_a_div_post_op_is_a_reciprocal_and_a_multiply_that_checks(target, types, shape):
    op = "gemm" if shape.startswith("b") else "conv"
    text = (f'[problem]\nop = "{op}"\nshape = "{shape}"\ntypes = "{types}"\n'
            f'post_ops = ["div:f32:per_oc", "div:f32", "div:f32:common"]\n[target]\nhw = "{target}"\n')
    out = Engine().check(Source(text))
    assert (out["artifact"], out["verdict"]) == ("asm", "ok"), out
    asm = Engine().compile(Source(text), "asm")["asm"]["asm"]
    assert len(re.findall(r"math\.inv \(\d+\|M0\) \S+:f", asm)) >= 3 and "fdiv" not in asm
