"""Scattered messages wider than one message takes (32 addresses on Xe-HPG, where a send is SIMD16 at
most) go as SIMD16 messages on their channel groups, ``(16|M0)`` and ``(16|M16)``, the second predicated by
flag bits 16-31; kdd's simulator runs both. An f16 GEMM with ``mad`` and SLM-staged operands stores its
cooperative tiles that way."""
from kdd.core.engine import Engine, Source

F16_SLM = """[problem]
op = "gemm"
shape = "m64n64k64"
types = "f16"
src = "ba"
wei = "ba"
dst = "ba"
[target]
hw = "xehpg"
[config]
line = "fma=mad simd=16 T=m2n4 i=m32n16k32 s=x1 global-reduction=0"
"""


def test_a_32_lane_scattered_slm_store_on_xehpg_goes_as_two_simd16_messages_and_checks_ok():
    engine = Engine()
    asm = engine.compile(Source(F16_SLM), "asm")["asm"]["asm"]
    assert "(16|M16)" in asm and "store.slm.d16u32" in asm
    result = engine.check(Source(F16_SLM))
    assert result["verdict"] == "ok" and result["artifact"] == "asm", result
