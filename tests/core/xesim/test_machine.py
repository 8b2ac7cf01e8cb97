"""The simulator's instruction semantics on small programs, against Python integer arithmetic."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.xesim.errors import Fault, SimulatorGap
from kdd.core.xesim.machine import Geometry, Machine
from kdd.core.xesim.memory import Global
from kdd.core.xesim.program import parse

EOT = "(W) send.gtwy (8|M0) null r15 null:0 0x0 0x02000010 {EOT}"
U32 = st.integers(0, 2**32 - 1)
S32 = st.integers(-2**31, 2**31 - 1)


def run(lines: list[str], setup, threads: int = 1, buffers=()) -> Machine:
    m = Machine(parse("\n".join(lines + [EOT])), Geometry(1, threads, 32, 16, 64), Global(list(buffers)))
    setup(m)
    m.run()
    return m


def test_parse_reads_predicates_regions_sends_and_labels():
    prog = parse("L0:\n(W&~f0.1) add (8|M0) r3.0<2>:d r4.1<8;4,2>:d -r5.0<0;1,0>:d {I@1}\n"
                 "(W) send.ugm (1|M0) r22 r21 null:0 0x0 0x0210C580 {$0} // load\n(W&f1.0) jmpi L0\n")
    add, send, jump = prog
    assert add.pred == (0, 16, True) and add.dst.region == (2, 1, 0)
    assert add.srcs[0].region == (8, 4, 2) and add.srcs[0].sub == 1 and add.srcs[1].neg
    assert send.desc == 0x0210C580 and send.dst.reg == 22 and send.srcs[1].kind == "null"
    assert jump.target == 0 and jump.pred == (1, 0, False)


def test_an_instruction_outside_the_subset_names_its_line():
    with pytest.raises(SimulatorGap, match="line 2: .*lzd"):
        run(["(W) mov (1|M0) r2.0<1>:ud 0x10:ud", "(W) lzd (1|M0) r3.0<1>:ud r2.0<0;1,0>:ud"],
            lambda m: None)


@settings(max_examples=60, deadline=None)
@given(base=st.integers(0, 2**64 - 1), offsets=st.lists(S32, min_size=8, max_size=8))
def test_64_bit_address_emulation_adds_the_carry_and_the_offsets_sign(base, offsets):
    """addc / add acc0 / asr / add: what Xe-HPG code computes for ``base + (s64) offset``."""
    def setup(m):
        m.views["uq"][0, 8] = np.uint64(base)                     # r2.0:uq
        m.views["d"][0, 24:32] = np.array(offsets, dtype=np.int32)  # r3
    m = run(["(W) addc (8|M0) r4.0<2>:ud r2.0<0;1,0>:ud r3.0<1;1,0>:ud",
             "(W) add (8|M0) r4.1<2>:ud acc0.0<1;1,0>:ud r2.1<0;1,0>:ud",
             "(W) asr (8|M0) r6.0<1>:d r3.0<1;1,0>:d 31:d",
             "(W) add (8|M0) r4.1<2>:ud r4.1<2;1,0>:ud r6.0<1;1,0>:ud"], setup)
    got = m.views["uq"][0, 16:24].tolist()
    assert got == [(base + o) % 2**64 for o in offsets]


@settings(max_examples=60, deadline=None)
@given(a=S32, b=S32)
def test_mul_mach_give_the_high_dword_of_the_signed_product(a, b):
    def setup(m):
        m.views["d"][0, 16], m.views["d"][0, 17] = a, b
    m = run([f"(W) mul (1|M0) acc0.0<1>:d r2.0<0;1,0>:d {b & 0xFFFF:#x}:uw",
             "(W) mach (1|M0) r3.0<1>:d r2.0<0;1,0>:d r2.1<0;1,0>:d"], setup)
    assert int(m.views["d"][0, 24]) == (a * b) >> 32


@settings(max_examples=60, deadline=None)
@given(a=S32, b=S32, c=st.integers(-2**15, 2**15 - 1), s=st.integers(0, 63))
def test_integer_ops_wrap_to_the_destination_and_shift_by_the_low_bits(a, b, c, s):
    def setup(m):
        m.views["d"][0, 16:19] = [a, b, s]
    m = run([f"(W) mad (1|M0) r3.0<1>:d r2.0<0;0>:d r2.1<0;0>:d {c}:w",
             f"(W) add3 (1|M0) r3.1<1>:d r2.0<0;0>:d r2.1<0;0>:d {c}:w",
             "(W) shr (1|M0) r3.2<1>:ud r2.0<0;1,0>:ud r2.2<0;1,0>:ud",
             "(W) asr (1|M0) r3.3<1>:d r2.0<0;1,0>:d r2.2<0;1,0>:d",
             "(W) shl (1|M0) r3.4<1>:d r2.0<0;1,0>:d r2.2<0;1,0>:d"], setup)
    wrap = lambda x: (x + 2**31) % 2**32 - 2**31                       # noqa: E731
    got = m.views["d"][0, 24:29].tolist()
    assert got[0] == wrap(a + b * c)
    assert got[1] == wrap(a + b + c)
    assert got[2] == wrap((a % 2**32) >> (s % 32))
    assert got[3] == a >> (s % 32)
    assert got[4] == wrap(a << (s % 32))


@settings(max_examples=40, deadline=None)
@given(a=st.lists(S32, min_size=8, max_size=8), b=S32)
def test_cmp_sets_flags_and_predicated_sel_picks_per_channel(a, b):
    def setup(m):
        m.views["d"][0, 16:24] = a
        m.views["d"][0, 24] = b
    m = run(["(W) cmp (8|M0) (lt)f0.1 null<1>:d r2.0<1;1,0>:d r3.0<0;1,0>:d",
             "(W&f0.1) sel (8|M0) r4.0<1>:d r2.0<1;1,0>:d r3.0<0;1,0>:d",
             "(W&~f0.1) mov (8|M0) r5.0<1>:d 7:d"], setup)
    assert m.views["d"][0, 32:40].tolist() == [min(x, b) if x < b else b for x in a]
    assert m.views["d"][0, 40:48].tolist() == [0 if x < b else 7 for x in a]


@settings(max_examples=40, deadline=None)
@given(a=st.lists(S32, min_size=2, max_size=2), b=st.lists(S32, min_size=2, max_size=2))
def test_cmp_with_destinations_writes_all_ones_or_zero_into_each_its_own(a, b):
    """Consecutive comparisons each write their own destination (a 0 / all-ones dword), beside their flags."""
    def setup(m):
        m.views["d"][0, 16:18] = a
        m.views["d"][0, 24:26] = b
        m.views["d"][0, 32:48] = 7
    m = run(["(W) cmp (1|M0) (ge)f0.0 r4.7<1>:d r2.0<0;1,0>:d r3.0<0;1,0>:d",
             "(W) cmp (1|M0) (lt)f0.1 r5.0<1>:d r2.1<0;1,0>:d r3.1<0;1,0>:d"], setup)
    assert m.views["d"][0, 39] == (-1 if a[0] >= b[0] else 0)
    assert m.views["d"][0, 40] == (-1 if a[1] < b[1] else 0)
    assert m.views["d"][0, 32:39].tolist() == [7] * 7 and m.views["d"][0, 41:48].tolist() == [7] * 7


@settings(max_examples=40, deadline=None)
@given(a=st.lists(S32, min_size=8, max_size=8), b=S32, lanes=st.integers(1, 8), mask=st.integers(0, 0xFFFF))
def test_a_flag_as_a_word_operand_masks_lanes_of_a_predicated_move(a, b, lanes, mask):
    """``and (1) f0.0:uw f0.0:uw MASK`` clears flag bits: a cmp over 8 lanes kept to ``lanes`` of them."""
    def setup(m):
        m.views["d"][0, 16:24] = a
        m.views["d"][0, 24] = b
    m = run(["(W) cmp (8|M0) (lt)f0.0 null<1>:d r2.0<1;1,0>:d r3.0<0;1,0>:d",
             f"(W) and (1|M0) f0.0<1>:uw f0.0<0;1,0>:uw 0x{(1 << lanes) - 1 & mask:X}:uw",
             "(W) mov (8|M0) r4.0<1>:d 0:d",
             "(W&f0.0) mov (8|M0) r4.0<1>:d 1:d"], setup)
    want = [int(x < b and i < lanes and bool(mask >> i & 1)) for i, x in enumerate(a)]
    assert m.views["d"][0, 32:40].tolist() == want
    assert m.flags[0, 0, :16].tolist() == [bool(w) for w in want] + [False] * 8


def test_a_flag_moved_from_an_immediate_predicates_its_lanes():
    """``mov (1|M0) f1.1<1>:uw 0x5:uw``: an unmasked message over 3 lanes gets a flag of its lanes."""
    m = run(["(W) mov (1|M0) f1.1<1>:uw 0x5:uw",
             "(W) mov (8|M0) r4.0<1>:d 0:d",
             "(W&f1.1) mov (8|M0) r4.0<1>:d 1:d"], lambda m: None)
    assert m.views["d"][0, 32:40].tolist() == [1, 0, 1, 0, 0, 0, 0, 0]
    assert m.flags[0, 1, 16:32].tolist() == [True, False, True] + [False] * 13


def test_float_conversions_round_to_nearest_even_and_saturate():
    def setup(m):
        m.views["f"][0, 16:20] = np.array([1 + 2**-11, 1 + 3 * 2**-11, 3e9, -2.5], dtype=np.float32)
    m = run(["(W) mov (4|M0) r3.0<1>:hf r2.0<1;1,0>:f", "(W) mov (4|M0) r4.0<1>:d r2.0<1;1,0>:f",
             "(W) mov (4|M0) r5.0<1>:bf r2.0<1;1,0>:f", "(W) mov.sat (4|M0) r6.0<1>:f r2.0<1;1,0>:f"], setup)
    assert m.views["hf"][0, 48:50].tolist() == [1.0, 1 + 2**-9]       # ties to even
    assert m.views["d"][0, 32:36].tolist() == [1, 1, 2**31 - 1, -2]     # truncation, saturation
    assert m.views["bf"][0, 80:84].tolist() == [0x3F80, 0x3F80, 0x4F33, 0xC020]
    assert m.views["f"][0, 48:52].tolist() == [1.0, 1.0, 1.0, 0.0]


def test_dpas_multiplies_the_repeat_rows_of_src2_by_the_systolic_columns_of_src1():
    rng = np.random.default_rng(1)
    A = rng.integers(-4, 5, (4, 32)).astype(np.int8)      # repeat 4 rows x (depth 8 x 4 bytes)
    B = rng.integers(-4, 5, (32, 8)).astype(np.int8)      # K x N, packed 4 K per dword
    C = rng.integers(-9, 9, (4, 8)).astype(np.int32)

    def setup(m):
        m.views["d"][0, 16:48] = C.reshape(-1)                                         # r2..r5
        m.views["b"][0, 6 * 32: 14 * 32] = B.reshape(8, 4, 8).transpose(0, 2, 1).reshape(-1)  # r6..r13
        m.views["b"][0, 14 * 32: 18 * 32] = A.reshape(-1)                              # r14..r17 (one row each)
    m = run(["(W) dpas.8x4 (8|M0) r2:d r2:d r6:b r14.0:b"], setup)
    want = C + A.astype(np.int64) @ B.astype(np.int64)
    assert (m.views["d"][0, 16:48].reshape(4, 8) == want).all()


def test_tf32_dpas_drops_the_low_13_mantissa_bits_of_its_f32_sources():
    """Xe-HPC's dpas with ``:tf32`` sources: one f32 per dword, 8 of K per instruction, read as tf32."""
    rng = np.random.default_rng(2)
    A = (rng.uniform(1, 2, (8, 8)) * rng.choice([-1, 1], (8, 8))).astype(np.float32)    # repeat 8 x K 8
    B = (rng.uniform(1, 2, (8, 16)) * rng.choice([-1, 1], (8, 16))).astype(np.float32)  # K 8 x N 16
    C = rng.uniform(-4, 4, (8, 16)).astype(np.float32)
    m = Machine(parse("\n".join(["(W) dpas.8x8 (16|M0) r2:f r2:f r10:tf32 r20.0:tf32", EOT])),
                Geometry(1, 1, 64, 32, 64), Global([]))
    m.views["f"][0, 32:160] = C.reshape(-1)                  # r2..r9
    m.views["tf32"][0, 160:288] = B.view(np.uint32).reshape(-1)  # r10..r17: row k holds column n's element
    m.views["tf32"][0, 320:384] = A.view(np.uint32).reshape(-1)  # r20..r23: row r's 8 K
    m.run()
    # Oracle by arithmetic: toward zero to 11 significant bits.
    quantum = lambda x: 2.0 ** (np.floor(np.log2(np.abs(x))) - 10)    # noqa: E731
    ta, tb = (np.trunc(x / quantum(x)) * quantum(x) for x in (A.astype(np.float64), B.astype(np.float64)))
    want = (C + ta @ tb).astype(np.float32)
    got = m.views["f"][0, 32:160].reshape(8, 16)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert np.abs(got - (C + A.astype(np.float64) @ B)).max() > 1e-3


def test_barriers_order_slm_and_a_missing_one_is_a_race_or_a_hang():
    header = ["(W) mov (8|M0) r10.0<1>:ud 0x0:ud", "(W) mov (2|M0) r10.10<1>:ub r0.11<0;1,0>:ub"]
    signal, wait = "(W) send.gtwy (1|M0) null r10 null:0 0x0 0x02000004", "(W) sync.bar null"
    store = ["(W) mul (1|M0) r2.0<1>:d r1.0<0;1,0>:d 16:d",
             "(W) send.slm (1|M0) null r2 r3:1 0x0 0x0200B504"]              # store.slm.d32x4t.a32
    load_other = ["(W) xor (1|M0) r4.0<1>:d r1.0<0;1,0>:d 1:d", "(W) mul (1|M0) r4.0<1>:d r4.0<0;1,0>:d 16:d",
                  "(W) send.slm (1|M0) r5 r4 null:0 0x0 0x0210B500"]        # load.slm.d32x4t.a32

    def setup(m):
        m.views["d"][:, 8] = np.arange(2)          # r1.0: the thread's index in its group
        m.views["ub"][:, 11] = 2                   # r0.11: threads in the group
        m.views["d"][:, 24:28] = np.arange(2)[:, None] + 100
    m = run(header + store + [signal, wait] + load_other, setup, threads=2)
    assert m.views["d"][:, 40].tolist() == [101, 100]
    with pytest.raises(Fault, match="SLM race"):
        run(header + store + load_other, setup, threads=2)
    skip = ["(W) cmp (1|M0) (eq)f0.0 null<1>:d r1.0<0;1,0>:d 1:d", "(W&f0.0) jmpi L_END"]
    with pytest.raises(Fault, match="barrier never completes"):
        run(header + skip + [signal, wait, "L_END:"], setup, threads=2)


def test_atomic_fadd_adds_every_threads_lanes_and_marks_the_bytes_written():
    from kdd.core.xesim.memory import base

    buf = np.zeros(32, dtype=np.uint8)
    buf.view(np.float32)[:] = 0.5

    def setup(m):
        m.views["uq"][:, 8:16] = np.uint64(base(0)) + np.arange(8, dtype=np.uint64) * np.uint64(4)   # r2, r3
        m.views["f"][:, 32:40] = (np.arange(2)[:, None] + 1) * np.arange(8)                          # r4
    m = run(["(W) send.ugm (8|M0) null r2 r4:1 0x0 0x04000593"], setup, threads=2, buffers=[buf])
    assert m.memory.buffer(0).view(np.float32).tolist() == [0.5 + 3 * i for i in range(8)]
    assert m.memory.written.all()


@settings(max_examples=30, deadline=None)
@given(rows=st.lists(st.integers(0, 7), min_size=8, max_size=8), off=st.lists(st.booleans(), min_size=8, max_size=8))
def test_vector_gather_and_scatter_put_element_v_of_lane_l_in_register_block_v(rows, off):
    """``load.ugm.d32x8.a64 (8|M0)``: lane ``l`` reads 8 dwords from its address into slot ``l`` of
    registers ``r20 + v``; predicated-off lanes keep their registers. The store writes them back."""
    from kdd.core.xesim.memory import base

    src = np.arange(64, dtype=np.int32)
    buffers = [src.view(np.uint8).copy(), np.full(64 * 4, 0xFF, np.uint8)]

    def setup(m):
        m.views["uq"][0, 8:16] = np.uint64(base(0)) + np.array(rows, dtype=np.uint64) * np.uint64(32)  # r2, r3
        m.views["uq"][0, 16:24] = np.uint64(base(1)) + np.arange(8, dtype=np.uint64) * np.uint64(32)   # r4, r5
        m.views["d"][0, 64:128] = -1                                                                     # r8..r15
        m.flags[0, 0, 0:8] = ~np.array(off)
    m = run(["(W&f0.0) send.ugm (8|M0) r8 r2 null:0 0x0 0x04804580",
             "(W) send.ugm (8|M0) null r4 r8:8 0x0 0x04004584"], setup, buffers=buffers)
    regs = m.views["d"][0, 64:128].reshape(8, 8)           # [v, l]
    for lane in range(8):
        want = [-1] * 8 if off[lane] else list(range(8 * rows[lane], 8 * rows[lane] + 8))
        assert regs[:, lane].tolist() == want
    out = m.memory.buffer(1).view(np.int32).reshape(8, 8)  # lane l's 8 dwords at 32 * l
    assert out.tolist() == regs.T.tolist()


def test_a_scattered_vector_of_16_is_refused():
    with pytest.raises(Fault, match="at most 8"):
        run(["(W) send.ugm (8|M0) r8 r2 null:0 0x0 0x05005580"], lambda m: None, buffers=[np.zeros(64, np.uint8)])
