"""Integer division by constants and the allocator, against independent oracles."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.codegen.xe.isa import magic, nonnegative_magic
from kdd.core.codegen.xe.regalloc import NoRoom, RegisterFile


def _c_div(n: int, d: int) -> int:
    q = abs(n) // abs(d)
    return q if (n >= 0) == (d >= 0) else -q


@settings(max_examples=400, deadline=None)
@given(st.integers(-(1 << 31), (1 << 31) - 1), st.integers(3, 1 << 20))
def test_signed_magic_division_truncates_like_c(n, d):
    m, s = magic(d, True)
    hi = (n * m) >> 32                     # mach: high half of the signed product
    if m < 0:
        hi += n
    q = hi >> s
    q += (q >> 31) & 1 if q < 0 else 0     # add the sign bit: rounds toward zero
    assert q == _c_div(n, d)


@settings(max_examples=400, deadline=None)
@given(st.integers(0, (1 << 32) - 1), st.integers(3, 1 << 20))
def test_unsigned_magic_division(n, d):
    m, s = magic(d, False)
    if m >= 1 << 32:
        return
    assert ((n * m) >> 32) >> s == n // d


@settings(max_examples=400, deadline=None)
@given(st.integers(0, (1 << 31) - 1), st.integers(3, 1 << 20))
def test_division_of_a_value_known_not_negative_needs_no_33_bit_multiplier(n, d):
    if d & (d - 1) == 0:
        return  # a power of two is a shift
    m, shift = nonnegative_magic(d)
    assert 0 < m < 1 << 32
    assert ((n * m) >> 32) >> shift == n // d


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 200), st.booleans()), max_size=60))
def test_allocations_never_overlap_and_busy_counts_registers(ops):
    rf = RegisterFile(32, 32)
    live = []
    for whole, size, free in ops:
        if free and live:
            rf.release(live.pop(0))
            continue
        try:
            a = rf.alloc_regs(size, "x", "t") if whole else rf.alloc_sub(min(size, 32), "x", "t")
        except NoRoom:
            continue
        if whole:
            assert a.start % 32 == 0
        live.append(a)
        spans = sorted((b.start, b.end) for b in live)
        assert all(e <= s for (_, e), (s, _) in zip(spans, spans[1:]))
        regs = {r for b in live for r in range(b.start // 32, (b.end - 1) // 32 + 1)}
        assert rf.busy == len(regs)


def _words_of(lines, rb: int) -> dict[int, int]:
    """An oracle for the lane-index instructions: word (2-byte) memory after ``mov ... :uv`` (the packed
    immediate, lane i gets i) and ``add dst src imm`` over word regions."""
    import re

    words: dict[int, int] = {}

    def at(reg: str) -> int:
        r, s = reg.split(".")
        return int(r[1:]) * rb + 2 * int(s)

    for text in lines:
        m = re.match(r"\(W\) (mov|add) \((\d+)\|M0\) (r\d+\.\d+)<1>:uw (\S+?)(?:<[^>]*>)?:(uw|uv)(?: (\d+):uw)?", text)
        assert m, text
        op, n, dst = m[1], int(m[2]), at(m[3])
        for i in range(n):
            words[dst + 2 * i] = i if op == "mov" else words[at(m[4]) + 2 * i] + int(m[6])
    return words


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 32), st.sampled_from(["xehpg", "xehpc"]))
def test_lane_indices_are_0_to_lanes_in_a_mov_and_doubling_adds(lanes, hw):
    from types import SimpleNamespace

    from kdd.core.codegen.xe.emitter import Emitter
    from kdd.core.codegen.xe.isa import _lane_indices
    from kdd.core.codegen.xe.operand import Reg
    from kdd.core.ir.types import u16
    from kdd.core.targets import get_target

    target = get_target(hw)
    rb = target.registers.reg_bytes
    cg = SimpleNamespace(rb=rb, xe=target.xe, em=Emitter(RegisterFile(128, rb)))
    _lane_indices(cg, Reg(10 * rb, u16, 1), lanes)
    texts = [ln.text for ln in cg.em.lines]
    words = _words_of(texts, rb)
    assert [words[10 * rb + 2 * i] for i in range(lanes)] == list(range(lanes))
    if lanes in (16, 32):  # 8 lanes from the immediate, then each add doubles them: 2 and 3 instructions
        assert len(texts) == lanes.bit_length() - 3
