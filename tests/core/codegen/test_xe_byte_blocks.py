"""Block sends whose bytes are not whole dwords (``u8x1``, ``s8x3``, ``u16x3``...): no transposed LSC data
size holds them, so the last 1-3 bytes go as SIMD1 scattered ``d8u32``/``d16u32`` messages. Lowered here
for both Xe targets, global and SLM, loads and stores, masked or not; iga64 must accept the code without a
warning, and kdd's simulator (which models the messages from the LSC descriptor, not from the generator)
must move exactly the block's bytes: the register and memory bytes around them keep theirs."""
from __future__ import annotations

import shutil
from types import SimpleNamespace

import numpy as np
import pytest

from kdd.core.codegen.assembler import assemble
from kdd.core.codegen.xe import sends
from kdd.core.codegen.xe.emitter import Emitter
from kdd.core.codegen.xe.lower import FlagPool
from kdd.core.codegen.xe.operand import Reg
from kdd.core.codegen.xe.regalloc import RegisterFile
from kdd.core.engine import Engine
from kdd.core.engine.engine import Source
from kdd.core.ir.funcs import SendOp
from kdd.core.ir.types import u8, u16, u32
from kdd.core.targets import XEHPC, XEHPG
from kdd.core.xesim.errors import Fault
from kdd.core.xesim.machine import Geometry, Machine
from kdd.core.xesim.memory import Global, base
from kdd.core.xesim.run import load

pytestmark = pytest.mark.skipif(shutil.which("iga64") is None, reason="iga64 (Debian libigc-tools) is not installed")

GRF = 64
HDR, DATA, TEMPS = 2, 4, 16     # registers: the block's header, its data (at an odd byte), the temporaries
MEMORY = 64                    # bytes of the buffer (global argument 0, or the group's SLM)
EOT = "(W) send.gtwy (8|M0) null r{r} null:0 0x0 0x02000010 {{EOT}}"


class _Lowering:
    """What the send lowering needs: registers, an emitter, flags, the target's Xe facts and temporaries."""

    def __init__(self, target):
        self.rb, self.xe = target.registers.reg_bytes, target.xe
        self.em = Emitter(RegisterFile(GRF, self.rb))
        self.flags = FlagPool(self.xe.flags)
        self.next = TEMPS * self.rb

    def temp(self, t, lanes: int = 1, whole: bool = False, header: bool = False) -> Reg:
        n = -(-t.size * lanes // self.rb) * self.rb
        r, self.next = Reg(self.next, t.base, 1), self.next + n
        return r


def _lower(target, op: SendOp, space: str, t, elems: int, masked: bool) -> list[str]:
    cg = _Lowering(target)
    rb = cg.rb
    f = SimpleNamespace(op=op, type=t, elems=elems)
    sfid, addr = ("ugm", "a64") if space == "global" else ("slm", "a32")
    data = Reg(DATA * rb + (t.size if t.size > 1 else 5), u32, 1)
    sends._block(cg, f, sfid, addr, Reg(HDR * rb, u32, 1), data, "f0.0" if masked else None)
    assert cg.next < (GRF - 1) * rb
    return [ln.text for ln in cg.em.lines]


CASES = [(u8, 1), (u8, 2), (u8, 3), (u8, 7), (u16, 1), (u16, 3)]


@pytest.mark.parametrize("target", [XEHPG, XEHPC], ids=lambda t: t.name)
@pytest.mark.parametrize("space", ["global", "slm"])
@pytest.mark.parametrize("op", [SendOp.LOAD, SendOp.STORE], ids=lambda o: o.value)
@pytest.mark.parametrize("t,elems", CASES, ids=lambda c: str(c))
def test_a_block_of_any_byte_count_moves_exactly_its_bytes(target, space, op, t, elems):
    rng = np.random.default_rng(elems * 7 + t.size)
    nbytes = elems * t.size
    # an odd address where no dword message is needed (byte messages take any address), else dword-aligned
    at = 13 if t.size == 1 and nbytes < 4 else 12
    for masked, enabled in ((False, True), (True, True), (True, False)):
        lines = _lower(target, op, space, t, elems, masked)
        assert any(("d8u32" if t.size == 1 else "d16u32") in ln and "(1|M0)" in ln for ln in lines), lines
        text = "\n".join(lines + [EOT.format(r=GRF - 1)])
        report = assemble(text, target.assembler, f"-p={target.xe.iga_platform}")
        assert report.ok, report.messages          # accepted, and not a single warning
        program, _ = load(text, target.assembler)

        rb = target.registers.reg_bytes
        memory = rng.integers(0, 256, MEMORY, dtype=np.uint8)
        glob = Global([memory.copy()] if space == "global" else [])
        m = Machine(program, Geometry(1, 1, rb, GRF, MEMORY if space == "slm" else 0), glob)
        m.file[0, : TEMPS * rb] = rng.integers(0, 256, TEMPS * rb, dtype=np.uint8)
        if space == "global":
            m.views["uq"][0, HDR * rb // 8] = np.uint64(base(0) + at)
        else:
            m.views["ud"][0, HDR * rb // 4] = at
            m.slm.data[:] = memory
        m.flags[0, 0, 0] = enabled
        regs = m.file[0, : TEMPS * rb].copy()
        m.run()

        mem = glob.buffer(0) if space == "global" else m.slm.data
        lo = DATA * rb + (t.size if t.size > 1 else 5)
        want_regs, want_mem = regs.copy(), memory.copy()
        if enabled and op is SendOp.LOAD:
            want_regs[lo: lo + nbytes] = memory[at: at + nbytes]
        elif enabled:
            want_mem[at: at + nbytes] = regs[lo: lo + nbytes]
        assert m.file[0, : TEMPS * rb].tolist() == want_regs.tolist(), (masked, enabled)
        assert mem.tolist() == want_mem.tolist(), (masked, enabled)


# Kernels of the differential sweep that the generator refused ("a block of 1 bytes is not one LSC
# message"): a u8 GEMM on Xe-HPG loading single bytes, an s8 GEMM on Xe-HPC storing bytes to SLM.
KERNELS = {
    "xehpg-u8-gemm": ("gemm", "1x1:1x26", "u8:s8:s32", 'src = "ba"\ndst = "ba"\npost_ops = ["add:f32"]', "xehpg",
                      "T=n2 i=n16 s=x0.b", "load.ugm.d8u32.a64 (1|M0)"),
    "xehpc-s8-gemm-slm": ("gemm", "3x1:1x28", "s8", 'src = "ba"\nwei = "ba"\ndst = "ba"', "xehpc",
                          "T=m1n1 i=m1n16 s=x1.a", "store.slm.d8u32.a32 (1|M0)"),
}
KERNEL = """[problem]
op = "{op}"
shape = "{shape}"
types = "{types}"
{tags}
[target]
hw = "{hw}"
[config]
line = "fma=mad simd=16 regs=128 vec=16 l=x {line} u=x p=x0 P=r S=a1b1"
"""


@pytest.mark.parametrize("name", KERNELS)
def test_int8_kernels_with_byte_blocks_check_ok_in_the_simulator(name):
    op, shape, types, tags, hw, line, message = KERNELS[name]
    source = Source(KERNEL.format(op=op, shape=shape, types=types, tags=tags, hw=hw, line=line), f"{name}.kernel.toml")
    engine = Engine()
    parsed = engine.parse(source)
    listing = engine.assembly(engine.resolve(parsed, None, None, for_check=True), parsed.sources())
    assert message in listing["asm"] and listing["assembler"]["ok"], listing["assembler"]
    out = engine.check(source, asm=True)
    assert out["verdict"] == "ok" and out["artifact"] == "asm", out


@pytest.mark.parametrize("target,aregs,ok", [(XEHPC, 1, False), (XEHPC, 2, True), (XEHPG, 2, True)],
                         ids=["xehpc-1", "xehpc-2", "xehpg-2"])
def test_a_simd1_a64_address_payload_is_the_native_simds(target, aregs, ok):
    """IGA sizes a scattered A64 address payload for the native SIMD (16 lanes on Xe-HPC, two 64-byte
    registers): the simulator faults on the one-register payload iga64 warns about."""
    text = f"(W) load.ugm.d8u32.a64 (1|M0) r7:1 [r4:{aregs}]\n" + EOT.format(r=GRF - 1)
    assert assemble(text, target.assembler, f"-p={target.xe.iga_platform}").ok is ok
    program, _ = load(text, target.assembler)
    rb = target.registers.reg_bytes
    memory = np.arange(MEMORY, dtype=np.uint8)
    m = Machine(program, Geometry(1, 1, rb, GRF, 0), Global([memory]))
    m.views["uq"][0, 4 * rb // 8] = np.uint64(base(0) + 9)
    if not ok:
        with pytest.raises(Fault, match="message length is 1; the payload needs 2"):
            m.run()
        return
    m.run()
    assert m.file[0, 7 * rb] == 9
