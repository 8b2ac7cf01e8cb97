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
from kdd.core.ir.funcs import SendOp
from kdd.core.ir.types import u8, u16, u32
from kdd.core.targets import XEHPC, XEHPG
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
