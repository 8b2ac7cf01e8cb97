"""The xe2 target end to end: its assembly checked by an Xe2-capable iga64 (Debian sid's libigc2-tools,
unpacked by tools/setup.sh as iga64-xe2) and run in the simulator against the reference."""
from __future__ import annotations

import pytest

from kdd.core.toolchain import find_tool

HAVE_IGA_XE2 = find_tool("iga64-xe2") is not None
needs_iga = pytest.mark.skipif(not HAVE_IGA_XE2, reason="iga64-xe2 (tools/setup.sh: sid's libigc2-tools) missing")

GEMM = """
[problem]
op = "gemm"
shape = "m64n64k64"
types = "f16:f16:f16"
[target]
hw = "xe2"
"""


@needs_iga
def test_the_xe2_iga_knows_platform_2_and_the_bookworm_one_does_not(tmp_path):
    import subprocess
    src = tmp_path / "k.asm"
    src.write_text("dpas.8x8 (16|M0) r30:f r30:f r40:hf r50:hf\n")
    new = subprocess.run([find_tool("iga64-xe2"), "-a", "-p=2", str(src), "-o", str(tmp_path / "k.bin")],
                         capture_output=True, text=True)
    assert new.returncode == 0, new.stderr
    if find_tool("iga64"):
        old = subprocess.run([find_tool("iga64"), "-a", "-p=2", str(src)], capture_output=True, text=True)
        assert old.returncode != 0


@needs_iga
def test_an_xe2_gemm_assembles_round_trips_and_checks_in_the_simulator(tmp_path):
    from kdd.core.engine import Engine, Source
    engine, source = Engine(), Source(GEMM, str(tmp_path / "g.kernel.toml"))
    listing = engine.compile(source, "asm")
    assembler = listing["asm"]["assembler"]
    assert assembler["tool"] == "iga64-xe2" and assembler["ok"] and assembler["round_trip"], assembler
    assert any("dpas.8x8 (16|M0)" in line["text"] for line in listing["asm"]["lines"])
    result = engine.check(source)
    assert result["artifact"] == "asm" and result["verdict"] == "ok", result


def test_xe2_refuses_simd8_naming_its_widths(tmp_path):
    from kdd.core.engine import Engine, Source
    out = Engine().compile(Source(GEMM + '[config]\nsimd = 8\n', str(tmp_path / "g.kernel.toml")))
    diags = out["diagnostics"]
    assert any("simd=8 is not a SIMD width of xe2 (widths: 16, 32)" in d["message"] for d in diags), diags
