"""Odd lane counts on Xe: oneDNN's lines with ``ow7`` / ``ow14`` tiles need 7 or 14 address lanes.
Execution sizes are powers of two and channel offsets multiples of 4 (iga64 rejects ``(7|M0)`` and
``(2|M6)``), so a ``cmp``, a predicated instruction or a message over 7 lanes runs at 8 with the
eighth lane's flag bit cleared (``and (1|M0) f0.0<1>:uw f0.0<0;1,0>:uw 0x7F:uw``), other instructions
run as 4 + 2 + 1, and sequences through the accumulator (``addc``/``add``, ``mul``/``mach``) by whole
pieces."""
from __future__ import annotations

import re
import shutil

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kdd.core.codegen.xe.isa import pieces
from kdd.core.codegen.xe.verify import verify
from kdd.core.engine import Engine
from kdd.core.engine.engine import Source

LINE = """[problem]
op = "conv"
prop = "fwd"
shape = "mb1ic2ih56oc2oh56kh3ph1"
types = "f16"
[target]
hw = "{hw}"
[config]
line = "{line}"
"""
# oneDNN's lines: 7 lanes of ow on xehpg (SIMD8), 14 on xehpc (SIMD16).
LINES = {"xehpg": "fma=mad simd=8 l=kh3 T=x i=ic2kw3oc8ow7 bufs=0",
         "xehpc": "fma=mad simd=16 l=kh3 T=ow8 i=ic2kw3oc16ow7 bufs=0"}
KEEP = {"xehpg": "0x7F", "xehpc": "0x3FFF"}


def _source(hw: str) -> Source:
    return Source(LINE.format(hw=hw, line=LINES[hw]), f"{hw}.kernel.toml")


@given(st.integers(1, 64), st.sampled_from([1, 2, 4, 8, 16, 32]))
def test_pieces_cover_the_lanes_in_powers_of_two(lanes, step):
    got = list(pieces(lanes, step))
    assert sum(k for _, k in got) == lanes
    assert all(k & (k - 1) == 0 and k <= step for _, k in got)
    assert [c for c, _ in got] == [sum(k for _, k in got[:i]) for i in range(len(got))]


@pytest.mark.parametrize("hw", LINES)
def test_every_execution_size_is_a_power_of_two_and_the_listing_verifies(hw):
    engine = Engine()
    parsed = engine.parse(_source(hw))
    r = engine.resolve(parsed, None, None, for_check=True)
    listing = engine.assembly(r, parsed.sources())
    sizes = {int(n) for n in re.findall(r"\((\d+)\|M0\)", listing["asm"])}
    assert sizes and all(n & (n - 1) == 0 for n in sizes), sorted(sizes)
    assert re.search(rf"\(W\) and \(1\|M0\) (f\d\.\d)<1>:uw \1<0;1,0>:uw {KEEP[hw]}:uw", listing["asm"])
    assert verify(listing) == []
    if shutil.which("iga64"):
        assert listing["assembler"]["ok"], listing["assembler"]


@pytest.mark.parametrize("hw", LINES)
def test_odd_lane_line_checks_right_after_every_pass(hw):
    out = Engine().check(_source(hw), bisect_passes=True)
    assert out["first_bad"] is None, out


@pytest.mark.skipif(shutil.which("iga64") is None, reason="iga64 (Debian libigc-tools) is not installed")
@pytest.mark.parametrize("hw", LINES)
def test_odd_lane_line_runs_right_in_the_simulator(hw):
    out = Engine().check(_source(hw), asm=True)
    assert out["ok"], out
