"""tf32 dpas on Xe-HPC: oneDNN's f32 lines with ``fma=dpas`` build, assemble with ``:tf32`` sources and
check right at their reduced shape, in the interpreter (every pass) and in the simulator; the check sees
the tf32 inputs (an f32 tolerance fails), and Xe-HPG, whose dpas has no tf32 form, refuses them."""
from __future__ import annotations

import shutil

import pytest

from kdd.core.engine import Engine
from kdd.core.engine.engine import Source
from kdd.core.interp.check import check_kernel, default_tol, kernel_math
from kdd.core.ir.types import Type, f32
from kdd.core.problem import problem_from_text

# oneDNN's xehpc bwd_w tf32 line for mb1ic3ih224oc128oh56kh4sh4ph0, checked at a reduced shape.
LINE = """[problem]
op = "conv"
prop = "bwd_w"
shape = "mb1ic3ih224oc128oh56kh4sh4ph0"
types = "f32"
[target]
hw = "{hw}"
[config]
line = "fma=dpas simd=16 l=oh7 T=oc8 i=ic4kw4oc16ow8 bufs=2"
[check]
shape = "mb1ic3ih32oc128oh8kh4sh4ph0"
"""


def _source(hw: str = "xehpc") -> Source:
    return Source(LINE.format(hw=hw), "tf32.kernel.toml")


def test_tf32_line_checks_right_after_every_pass():
    out = Engine().check(_source(), bisect_passes=True)
    assert out["first_bad"] is None, out
    assert all(stage["ok"] for stage in out["stages"])


def test_tf32_dpas_is_spelled_with_tf32_sources_and_assembles():
    engine = Engine()
    parsed = engine.parse(_source())
    r = engine.resolve(parsed, None, None, for_check=True)
    listing = engine.assembly(r, parsed.sources())
    dpas = [line for line in listing["asm"].splitlines() if "dpas" in line]
    assert dpas and all(line.split()[-1].endswith(":tf32") and line.split()[-2].endswith(":tf32")
                        for line in dpas)
    if shutil.which("iga64"):
        assert listing["assembler"]["ok"], listing["assembler"]


@pytest.mark.skipif(shutil.which("iga64") is None, reason="iga64 (Debian libigc-tools) is not installed")
def test_tf32_line_runs_right_in_the_simulator():
    out = Engine().check(_source(), asm=True)
    assert out["ok"], out


def test_the_check_sees_tf32_inputs():
    """The interpreter multiplies in tf32, so the kernel is off by more than f32's tolerance and within
    tf32's; a kernel that multiplied exactly would pass both."""
    engine = Engine()
    parsed = engine.parse(_source())
    r = engine.resolve(parsed, None, None, for_check=True)
    kernel = engine.kernel(r, parsed.sources())
    assert kernel_math(kernel) == "tf32"
    within = check_kernel(kernel, r.problem)
    assert within.ok and 1e-5 < within.rel_err <= default_tol(r.problem, f32, "tf32")
    assert not check_kernel(kernel, r.problem, tol=1e-5).ok


def test_tf32_tolerance_is_the_ten_bit_mantissa():
    plain = problem_from_text("m4n4k4", types="f32:f32:f32")
    assert default_tol(plain, f32) == 1e-5
    assert default_tol(plain, f32, "tf32") == default_tol(plain, Type.parse("f16"))


def test_xehpg_has_no_tf32_dpas():
    engine = Engine()
    parsed = engine.parse(_source("xehpg"))
    errors = [d.message for d in parsed.diagnostics if d.severity.name == "ERROR"]
    assert any("dpas on xehpg does not multiply f32*f32" in e for e in errors), errors
