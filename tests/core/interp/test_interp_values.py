"""bf16 storage and rounding, tf32 operands, reorder conversions, and reorder/reduce on registers."""
import math
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.interp import Launch, run_ir
from kdd.core.interp.values import bf16_bits, bf16_value, convert_nearest, round_bf16, tf32_operand
from kdd.core.ir import Alloc, FuncCall, Group, MemKind, seq, var
from kdd.core.ir.funcs import Reorder, Send, SendKind, SendOp
from kdd.core.ir.types import Type, bf16, f32, s8, u8, u64
from kdd.core.layout.layout import Block, Layout


def test_every_bf16_pattern_round_trips():
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    values = bf16_value(bits)
    finite = ~np.isnan(values)
    np.testing.assert_array_equal(bf16_bits(values)[finite], bits[finite])
    assert np.isnan(bf16_value(bf16_bits(values[~finite]))).all()


@settings(max_examples=300, deadline=None)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_a_tf32_operand_keeps_eleven_significant_bits_toward_zero(x):
    x32 = float(np.float32(x))
    got = float(tf32_operand(np.array([x32], dtype=np.float32))[0])
    if x32 == 0 or abs(x32) < 2.0 ** -126:      # zero and subnormals: a fixed step of 2^-136
        quantum = Fraction(2) ** -136
    else:                                       # 1 + 10 mantissa bits below the leading one
        quantum = Fraction(2) ** (math.frexp(x32)[1] - 11)
    exact = Fraction(x32)
    want = math.copysign(float(abs(exact) // quantum * quantum), x32)
    assert got == want


def test_a_tf32_operand_keeps_nan_and_infinity():
    x = np.array([np.inf, -np.inf, np.nan], dtype=np.float32)
    nan_low_payload = np.array([0x7F800001], dtype=np.uint32).view(np.float32)
    got = tf32_operand(np.concatenate([x, nan_low_payload]))
    assert got[0] == np.inf and got[1] == -np.inf and np.isnan(got[2]) and np.isnan(got[3])


@settings(max_examples=300, deadline=None)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_bf16_rounds_to_nearest_even(x):
    x32 = np.float32(x)
    got = float(bf16_value(bf16_bits(np.array([x32])))[0])
    # Neighbours: x truncated to bf16, and the next bf16 away from zero.
    bits = int(np.array([x32]).view(np.uint32)[0])
    down = float(np.array([bits & 0xFFFF0000], dtype=np.uint32).view(np.float32)[0])
    up = float(np.array([(bits & 0xFFFF0000) + 0x10000], dtype=np.uint32).view(np.float32)[0])
    exact = Fraction(float(x32))
    # Past the largest bf16 the next step is 2**128 (IEEE): rounding there gives infinity.
    up_value = Fraction(up) if math.isfinite(up) else Fraction(2) ** 128 * (1 if x32 > 0 else -1)
    dd, du = abs(exact - Fraction(down)), abs(exact - up_value)
    if dd < du:
        assert got == down
    elif du < dd:
        assert got == up
    else:  # a tie goes to the even bf16 mantissa
        assert got == (down if ((bits >> 16) & 1) == 0 else up)
    assert float(round_bf16(np.array([x32]))[0]) == got


@settings(max_examples=300, deadline=None)
@given(st.floats(-400, 400, allow_nan=False), st.sampled_from([s8, u8, Type.parse("s32")]))
def test_reorder_conversion_rounds_half_to_even_and_saturates(x, t):
    lo, hi = t.scalar.int_range()
    want = min(max(round(x), lo), hi)  # Python's round() is half-to-even
    assert int(convert_nearest(np.array([x]), Type.parse("f64"), t)[0]) == want


def test_reorder_converts_pads_with_zero_and_keeps_holes():
    src_buf, dst_buf, inp, out = var("src", u64), var("dst", u64), var("inp", u64), var("out", u64)
    src = Layout.dense(f32, (3,), [(0, 3)])
    # 3 logical elements padded to 4, every other byte: the odd bytes are holes.
    dst = Layout(s8, (3,), (Block(0, 4, 2),))
    body = seq(
        FuncCall.make(Send(SendOp.LOAD, SendKind.BLOCK, "global", f32, 3), [inp, 0, src_buf, 0, True]),
        FuncCall.make(Send(SendOp.LOAD, SendKind.BLOCK, "global", u8, 8), [out, 0, dst_buf, 0, True]),
        FuncCall.make(Reorder(src, dst), [src_buf, 0, dst_buf, 0]),
        FuncCall.make(Send(SendOp.STORE, SendKind.BLOCK, "global", u8, 8), [out, 0, dst_buf, 0, True]))
    body = Alloc.make(src_buf, 32, MemKind.GRF, Alloc.make(dst_buf, 32, MemKind.GRF, body))
    o = np.full(8, 0x77, np.uint8)
    run_ir(Group.make("kernel", body), Launch((1, 1, 1), (1, 1, 1), 8, 32),
           {"inp": np.array([2.5, -3.5, 300.0], np.float32), "out": o})
    assert o.view(np.int8).tolist() == [2, 0x77, -4, 0x77, 127, 0x77, 0, 0x77]


def test_reorder_to_bf16_rounds_to_nearest_even():
    src, dst = Layout.dense(f32, (2,), [(0, 2)]), Layout.dense(bf16, (2,), [(0, 2)])
    a, b, inp, out = var("a", u64), var("b", u64), var("inp", u64), var("out", u64)
    x = np.array([1 + 2**-8, 1 + 3 * 2**-8], np.float32)  # ties: to 1.0 and to 1 + 2**-6
    body = seq(
        FuncCall.make(Send(SendOp.LOAD, SendKind.BLOCK, "global", f32, 2), [inp, 0, a, 0, True]),
        FuncCall.make(Reorder(src, dst), [a, 0, b, 0]),
        FuncCall.make(Send(SendOp.STORE, SendKind.BLOCK, "global", bf16, 2), [out, 0, b, 0, True]))
    body = Alloc.make(a, 32, MemKind.GRF, Alloc.make(b, 32, MemKind.GRF, body))
    o = np.zeros(2, np.uint16)
    run_ir(Group.make("kernel", body), Launch((1, 1, 1), (1, 1, 1), 8, 32), {"inp": x, "out": o})
    assert bf16_value(o).tolist() == [1.0, 1 + 2**-6]
