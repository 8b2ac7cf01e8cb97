"""What a line writes, known two ways: the emitter's own record of an ALU instruction's destination
(``addresses._dwords``, which the held addresses' scan reads) and the register verifier's reading of
the line's text (``verify.writes``, itself ``verify.access`` without the reads; ``addresses._dwords_of``
its dwords); they must agree on every line of the shipped examples."""
from __future__ import annotations

import pytest

from kdd.core.codegen.xe import _lowered
from kdd.core.codegen.xe.addresses import _dwords, _dwords_of
from kdd.core.codegen.xe.verify import access, writes

from xe_kernels import final


@pytest.mark.parametrize("name", ["int8.kernel.toml", "tails.kernel.toml", "gemm_bert.kernel.toml"])
def test_writes_of_every_line_agree(name):
    kernel, body, target = final(name)
    cg = _lowered(kernel, body, target)
    by_op = 0
    for ln in cg.em.lines:
        text_writes = writes(ln.text, cg.rb)
        assert text_writes == access(ln.text, cg.rb)[1], ln.text
        assert set(_dwords_of(text_writes)) == {b >> 2 for b in text_writes}, ln.text
        if ln.lanes:
            by_op += 1
            assert set(_dwords(ln.dst, ln.lanes)) == {b >> 2 for b in text_writes}, ln.text
    assert by_op > len(cg.em.lines) // 4   # many lines are ALU instructions the emitter wrote


def test_strided_and_null_destinations():
    from kdd.core.codegen.xe.operand import Reg
    from kdd.core.ir.types import Type

    rb = 64
    w = Type.parse("s16")
    # a word destination two elements apart: lanes i at bytes 128 + 4i, each in its own dword
    assert set(_dwords(Reg(128, w, 2), 8)) == {b >> 2 for b in writes("(W) mov (8|M0) r2.0<2>:w r3.0<1;1,0>:w", rb)}
    assert set(_dwords(Reg(130, w, 1), 4)) == {b >> 2 for b in writes("(W) mov (4|M0) r2.1<1>:w r3.0<1;1,0>:w", rb)}
    assert set(_dwords(None, 16)) == writes("(W) cmp (16|M0) (lt)f0.0 null<1>:d r3.0<1;1,0>:d 0x0:d", rb) == set()
    # bytes in two runs (a strided word region) keep their own dwords; one run is a range
    assert set(_dwords_of({0, 1, 8, 9})) == {0, 2} and _dwords_of(set(range(64, 192))) == range(16, 48)
