"""``mad`` over 8-bit integers on Xe: oneDNN's depthwise u8*s8 lines (``fma=mad``, ``iter`` over ``g``)
build, multiply bytes of mixed signedness in one ``mad`` per lane group (iga64 encodes every mixed
``:ub``/``:b`` form, 12p71 and 12p72), and check exactly in the interpreter after every pass and in the
simulator."""
from __future__ import annotations

import re
import shutil

import pytest

from kdd.core.engine import Engine
from kdd.core.engine.engine import Source

# oneDNN's lines (tests/data/onednn/conv_lookup_table.txt) with a small [check] shape.
LINES = {
    "xehpg": """[problem]
op = "conv"
prop = "fwd"
shape = "g224mb32ic224iw3136oc224ow3136kw1pw0"
types = "u8:s8:u8"
src = "ABx32a32b"
[target]
hw = "xehpg"
[config]
line = "fma=mad simd=8 l=x T=x i=g32mb16 bufs=0"
[check]
shape = "mb16g32ic32iw8oc32ow8kw1pw0"
""",
    "xehpc": """[problem]
op = "conv"
prop = "fwd"
shape = "g288mb1ic288ih128iw256oc288oh128ow256kh5kw5dh3dw3ph8pw8"
types = "u8:s8:u8"
[target]
hw = "xehpc"
[config]
line = "fma=mad simd=16 l=kh5 T=x i=g16kw5ow16 bufs=0"
[check]
shape = "g16mb1ic16ih8iw16oc16oh8ow16kh5kw5dh3dw3ph8pw8"
""",
}


@pytest.mark.parametrize("hw", LINES)
def test_int8_mad_line_checks_right_after_every_pass(hw):
    out = Engine().check(Source(LINES[hw], f"{hw}.kernel.toml"), bisect_passes=True)
    assert out["first_bad"] is None, out


@pytest.mark.parametrize("hw", LINES)
def test_int8_mad_multiplies_bytes_and_assembles(hw):
    engine = Engine()
    parsed = engine.parse(Source(LINES[hw], f"{hw}.kernel.toml"))
    assert not [d for d in parsed.diagnostics if d.severity.name == "ERROR"]
    r = engine.resolve(parsed, None, None, for_check=True)
    listing = engine.assembly(r, parsed.sources())
    simd = 8 if hw == "xehpg" else 16
    mads = [line for line in listing["asm"].splitlines()
            if line.startswith(f"(W) mad ({simd}|M0)") and ":ub" in line]
    # s8 weights (B, src1) times u8 activations (A, src2) into the s32 accumulator, no widening moves
    assert mads and all(re.search(r"<1>:d r\S+:d r\S+:b r\S+:ub(\s|$)", line) for line in mads), mads[:3]
    if shutil.which("iga64"):
        assert listing["assembler"]["ok"], listing["assembler"]


@pytest.mark.skipif(shutil.which("iga64") is None, reason="iga64 (Debian libigc-tools) is not installed")
@pytest.mark.parametrize("hw", LINES)
def test_int8_mad_line_runs_right_in_the_simulator(hw):
    out = Engine().check(Source(LINES[hw], f"{hw}.kernel.toml"), asm=True)
    assert out["ok"] and out["rel_err"] == 0, out


S8_MAD = """[problem]
op = "conv"
prop = "fwd"
shape = "mb2ic64ih4oc32oh4kh1ph0"
types = "s8:s8:s8"
src = "axb"
wei = "axcb"
dst = "axb"
[config]
fma = "mad"
[target]
hw = "{hw}"
"""


@pytest.mark.skipif(shutil.which("iga64") is None, reason="iga64 (Debian libigc-tools) is not installed")
@pytest.mark.parametrize("hw", ["xehpg", "xehpc"])
def test_s8_mad_reads_odd_bytes_where_the_target_encodes_them_and_assembles(hw):
    """Xe-HPC encodes a ternary byte source's subregister in words: a broadcast byte at an odd offset is
    copied to an even one first (iga64 -p=12p72 rejects ``r6.1<0>:b`` as src2); no byte immediates."""
    engine = Engine()
    parsed = engine.parse(Source(S8_MAD.format(hw=hw), f"{hw}.kernel.toml"))
    r = engine.resolve(parsed, None, None, for_check=True)
    listing = engine.assembly(r, parsed.sources())
    assert listing["assembler"]["ok"], listing["assembler"]
    asm = listing["asm"]
    assert not re.search(r"\s-?\d+:u?b(\s|$)", asm)
    subs = re.findall(r"\(W\) mad \(\d+\|M0\) \S+ \S+ r\d+\.(\d+)<\d+;\d+>:u?b r\d+\.(\d+)<\d+>:u?b", asm)
    assert subs
    if hw == "xehpc":
        assert all(int(a) % 2 == 0 and int(b) % 2 == 0 for a, b in subs), subs[:4]
    out = engine.check(Source(S8_MAD.format(hw=hw), f"{hw}.kernel.toml"), asm=True)
    assert out["ok"], out


@pytest.mark.skipif(shutil.which("iga64") is None, reason="iga64 (Debian libigc-tools) is not installed")
def test_assembly_the_assembler_rejects_is_an_internal_codegen_error_never_a_listing():
    from dataclasses import replace

    from kdd.core.builder import build_kernel
    from kdd.core.codegen import AssemblerRejected, generate_asm
    from kdd.core.passes.kernel_pipeline import run_pipeline
    from kdd.core.spec import load_spec

    spec, _ = load_spec(S8_MAD.format(hw="xehpc"), "k.kernel.toml")
    kernel = build_kernel(spec.problem, spec.config, spec.target)
    final = run_pipeline(kernel).final
    careless = replace(spec.target, xe=replace(spec.target.xe, ternary_byte_align=1))   # forgets the rule
    with pytest.raises(AssemblerRejected, match="GED_SetSrc2SubRegNum"):
        generate_asm(kernel, final, careless)
    assert generate_asm(kernel, final, spec.target).assembler["ok"]
