"""The xe2 target end to end: its assembly checked by an Xe2-capable iga64 (Debian sid's libigc2-tools,
unpacked by tools/setup.sh as iga64-xe2) and run in the simulator against the reference."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from kdd.core.engine import Engine, Source
from kdd.core.toolchain import find_tool
from protocol_schemas import validator

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
    engine, source = Engine(), Source(GEMM, str(tmp_path / "g.kernel.toml"))
    listing = engine.compile(source, "asm")
    assembler = listing["asm"]["assembler"]
    assert assembler["tool"] == "iga64-xe2" and assembler["ok"] and assembler["round_trip"], assembler
    assert any("dpas.8x8 (16|M0)" in line["text"] for line in listing["asm"]["lines"])
    result = engine.check(source)
    assert result["artifact"] == "asm" and result["verdict"] == "ok", result


def test_xe2_refuses_simd8_naming_its_widths(tmp_path):
    out = Engine().compile(Source(GEMM + '[config]\nsimd = 8\n', str(tmp_path / "g.kernel.toml")))
    diags = out["diagnostics"]
    assert any("simd=8 is not a SIMD width of xe2 (widths: 16, 32)" in d["message"] for d in diags), diags


SEED002 = Path(__file__).resolve().parents[3] / "examples" / "seed002"


def _mix(engine, step: str) -> dict:
    path = SEED002 / f"{step}.kernel.toml"
    out = engine.compile(Source(path.read_text(), str(path)), "stats")
    return out["stats"]["codegen"]["mix"]["dynamic"]


def test_the_logs_decompression_steps_cut_float_instructions_in_the_assembly():
    """Seed 002's TRY2.0 (32 weights an instruction), TRY2.1 (mad) and TRY2.2 (the denormal conversion)
    each issue fewer float-pipe (ALU0) instructions than the step before; the denormal conversion moves
    the u8 -> u16 widening to the int pipe (ALU1); the dpas count never changes."""
    engine = Engine()
    mixes = {step: _mix(engine, step) for step in ("try1", "try2_0", "try2_1", "try2_2")}
    floats = [mixes[s]["float"] for s in ("try1", "try2_0", "try2_1", "try2_2")]
    assert floats == sorted(floats, reverse=True) and len(set(floats)) == 4, floats
    assert mixes["try2_2"]["int"] > mixes["try2_1"]["int"]
    assert len({m["xmx"] for m in mixes.values()}) == 1


@needs_iga
@pytest.mark.parametrize("step", ["try2_2", "try3_1", "try3_2", "try3_2_u4"])
def test_seed002_steps_check_as_xe2_assembly(step):
    engine = Engine()
    path = SEED002 / f"{step}.kernel.toml"
    result = engine.check(Source(path.read_text(), str(path)))
    assert result["artifact"] == "asm" and result["verdict"] == "ok", result
    assert ("tol_reason" in result) == (step == "try2_2")  # denorm: zp x scale in f16, the scale x 512
    validator("check.schema.json").validate(result)
    validator("compile.schema.json").validate(engine.compile(Source(path.read_text(), str(path)), "stats,asm"))
    # the interpreter computes what the Xe2 binary computes, f16 roundings and fused mads included
    assert engine.check(Source(path.read_text(), str(path)), stage="final")["rel_err"] == result["rel_err"]


def test_4_bit_keys_unpack_with_one_int_instruction_per_16_weights():
    """try3_2_u4: the keys' nibbles are masked and shifted straight from their bytes into B's 16-bit VNNI
    rows (``and``/``shr`` with a byte source, no widening ``mov`` first); the float pipe does what it does
    for u8 keys, and the raw tile takes half the registers."""
    engine = Engine()
    u4, u8 = _mix(engine, "try3_2_u4"), _mix(engine, "try3_2")
    path = SEED002 / "try3_2_u4.kernel.toml"
    lines = [ln["text"] for ln in engine.compile(Source(path.read_text(), str(path)), "asm")["asm"]["lines"]]
    unpack = [t for t in lines if re.search(r"\b(and|shr) \(16\|M0\) \S+:uw \S+:ub (15|4):uw", t)]
    assert len(unpack) == 2 * 32 + 2  # K 32 x N 32 keys a K step: 64 rows of 16 (and the zero-point row)
    assert u4["float"] == u8["float"] and u4["xmx"] == u8["xmx"]


CONV = """
[problem]
op = "conv"
shape = "g2mb1ic32ih6oc64oh6kh3ph1"
types = "f16:TYPE:f16"
scales = "wei:per_oc:f16"
zero_points = "wei:per_oc:TYPE"
fpmath = "f16:true"
[target]
hw = "xe2"
[config]
decompress = "mad.32"
"""


@needs_iga
@pytest.mark.parametrize("wei", ["s8", "u4"])
def test_a_convolutions_decompressed_weights_check_as_xe2_assembly(wei):
    """benchdnn's conv attributes (--attr-scales=wei:per_oc:f16 --attr-zero-points=wei:per_oc:TYPE
    --attr-fpmath=f16:true) on a grouped 3x3 convolution: the Xe2 binary in the simulator agrees with the
    float64 convolution of the decompressed weights, and with the interpreter bit for bit."""
    engine, source = Engine(), Source(CONV.replace("TYPE", wei), "conv.kernel.toml")
    result = engine.check(source)
    assert result["artifact"] == "asm" and result["verdict"] == "ok", result
    assert "tol_reason" in result  # mad: zp x scale in f16
    assert engine.check(source, stage="final")["rel_err"] == result["rel_err"]


@needs_iga
def test_2d_block_loads_assemble_for_xe2_and_run():
    """Xe2 keeps Xe-HPC's load_block2d (the target's Block2D): gemm_bert's A loads, on xe2."""
    path = Path(__file__).resolve().parents[3] / "examples" / "gemm_bert.kernel.toml"
    text = path.read_text().replace('hw = "xehpc"', 'hw = "xe2"').replace(
        "[check]", '[config]\nline = "fma=dpas simd=16 regs=256 l=k2 T=x i=m64n32k32 s=x0 P=r"\n\n[check]')
    engine, source = Engine(), Source(text, str(path))
    listing = engine.compile(source, "asm")["asm"]
    assert listing["assembler"]["ok"] and sum("load_block2d" in ln["text"] for ln in listing["lines"]) == 4
    assert engine.check(source)["verdict"] == "ok"
