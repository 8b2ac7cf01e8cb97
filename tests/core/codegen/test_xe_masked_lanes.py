"""Instructions over lane counts that are not powers of two, as ``isa.alu`` emits them, run in the
simulator: the lanes asked for get the operation's result and the registers past them keep their bytes
(a padded instruction masks its extra lanes)."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.codegen.xe import isa
from kdd.core.codegen.xe.emitter import Emitter
from kdd.core.codegen.xe.lower import FlagPool
from kdd.core.codegen.xe.operand import Reg
from kdd.core.codegen.xe.regalloc import RegisterFile
from kdd.core.ir.types import s32
from kdd.core.targets import XEHPG
from kdd.core.xesim.machine import Geometry, Machine
from kdd.core.xesim.memory import Global
from kdd.core.xesim.program import parse

RB = XEHPG.registers.reg_bytes
A, B, X, Y, OUT = 2, 4, 6, 8, 10   # registers: 16 dwords from A, a scalar in B, X, Y, OUT two each
SENTINEL = -7


class _Lowering:
    """What ``isa.alu`` needs of a lowering: registers, emitter, flags and the target's Xe facts."""

    def __init__(self):
        self.rb, self.xe = RB, XEHPG.xe
        self.em = Emitter(RegisterFile(32, RB))
        self.flags = FlagPool(self.xe.flags)


def _dwords(reg: int, stride: int = 1) -> Reg:
    return Reg(reg * RB, s32, stride)


@settings(max_examples=60, deadline=None)
@given(lanes=st.integers(1, 16), op=st.sampled_from(["sel", "mov", "add"]), negate=st.booleans(),
       data=st.lists(st.integers(-50, 50), min_size=49, max_size=49))
def test_a_predicated_instruction_over_any_lane_count_writes_only_its_lanes(lanes, op, negate, data):
    cg = _Lowering()
    flag = cg.flags.take()
    isa.alu(cg, "cmp", lanes, None, [_dwords(A), _dwords(B, 0)], cmod=("lt", flag))
    pred = "~" + flag if negate else flag
    srcs = [_dwords(X), _dwords(Y)] if op != "mov" else [_dwords(X)]
    isa.alu(cg, op, lanes, _dwords(OUT), srcs, pred=pred)
    sizes = {int(t.split("|")[0].split("(")[-1]) for t in (ln.text for ln in cg.em.lines) if "|M0)" in t}
    assert all(n & (n - 1) == 0 for n in sizes)

    m = Machine(parse("\n".join([ln.text for ln in cg.em.lines]
                                + ["(W) send.gtwy (8|M0) null r15 null:0 0x0 0x02000010 {EOT}"])),
                Geometry(1, 1, RB, 32, 64), Global([]))
    a, x, y = (np.array(data[i * 16:(i + 1) * 16], dtype=np.int32) for i in range(3))
    b = data[48]
    d = m.views["d"]
    d[0, A * 8: A * 8 + 16], d[0, B * 8], d[0, X * 8: X * 8 + 16], d[0, Y * 8: Y * 8 + 16] = a, b, x, y
    d[0, OUT * 8: OUT * 8 + 16] = SENTINEL
    m.run()
    cond = (a < b) != negate
    want = np.full(16, SENTINEL)
    result = {"sel": np.where(cond, x, y), "mov": np.where(cond, x, SENTINEL),
              "add": np.where(cond, x + y, SENTINEL)}[op]
    want[:lanes] = result[:lanes]
    assert d[0, OUT * 8: OUT * 8 + 16].tolist() == want.tolist()
