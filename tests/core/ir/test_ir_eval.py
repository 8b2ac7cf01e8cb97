"""The evaluator's integer semantics against an independent oracle (numpy fixed-width arithmetic)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.ir import EvalError, Load, div_up, evaluate, iif, max_, min_, var
from kdd.core.ir.types import f16, f32, s8, s32, u8, u32

S32 = st.integers(-(2**31), 2**31 - 1)


def c_div(a, b):
    """C truncating division computed through floats of exact magnitude (independent of eval.py)."""
    q = int(np.trunc(np.float64(abs(a)) / np.float64(abs(b)))) if abs(a) < 2**52 else abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def test_seed_example_value():
    a, b = var("a"), var("b")
    assert evaluate(2 * (a + b) - a, {"a": 3, "b": 4}) == 11


@settings(max_examples=300, deadline=None)
@given(S32, S32)
def test_s32_add_mul_sub_wrap_like_numpy(x, y):
    a, b = var("a"), var("b")
    env = {"a": x, "b": y}
    with np.errstate(over="ignore"):
        X, Y = np.int32(x), np.int32(y)
        assert evaluate(a + b, env) == int(X + Y)
        assert evaluate(a * b, env) == int(X * Y)
        assert evaluate(a - b, env) == int(X - Y)


@settings(max_examples=300, deadline=None)
@given(S32, S32.filter(lambda v: v != 0))
def test_division_truncates_toward_zero_and_mod_takes_dividend_sign(x, y):
    a, b = var("a"), var("b")
    env = {"a": x, "b": y}
    if x == -(2**31) and y == -1:
        return  # overflows in C; our wrap gives -2**31
    q = c_div(x, y)
    assert evaluate(a // b, env) == q
    assert evaluate(a % b, env) == x - q * y
    assert abs(evaluate(a % b, env)) < abs(y)


def test_division_by_zero_is_zero():
    assert evaluate(var("a") // var("b"), {"a": 7, "b": 0}) == 0
    assert evaluate(var("a") % var("b"), {"a": 7, "b": 0}) == 0


def test_small_types_wrap_and_unsigned_compare():
    x = var("x", u8)
    assert evaluate(x + 1, {"x": 255}) == 0
    y = var("y", s8)
    assert evaluate(y * 2, {"y": 100}) == -56
    # C: (u32)-1 > 1
    assert evaluate(var("u", u32).gt(var("s", s32)), {"u": 2**32 - 1, "s": 1}) is True
    assert evaluate(var("s", s32).lt(var("u", u32)), {"s": -1, "u": 1}) is False


def test_min_max_iif_div_up_shifts_logic():
    a = var("a")
    env = {"a": -7}
    assert evaluate(min_(a, 3), env) == -7 and evaluate(max_(a, 3), env) == 3
    assert evaluate(iif(a.lt(0), 1, 2), env) == 1
    assert evaluate(div_up(var("n"), 4), {"n": 9}) == 3
    assert evaluate(a >> 1, env) == -4  # arithmetic shift on signed
    assert evaluate(var("u", u32) >> 1, {"u": 2**32 - 2}) == 2**31 - 1
    assert evaluate(a.lt(0).land(a.gt(-10)), env) is True
    assert evaluate(a.lt(0).lnot(), env) is False


def test_float_rounding_per_type():
    x = var("x", f16)
    assert evaluate(x + 0.0001, {"x": 1.0}) == 1.0  # below f16 resolution at 1.0
    y = var("y", f32)
    assert evaluate(y * 3.0, {"y": 0.1}) == float(np.float32(np.float32(0.1) * np.float32(3.0)))
    assert evaluate(y.cast(s32), {"y": -2.7}) == -2
    assert evaluate(var("z", s32).cast(s8, saturate=True), {"z": 1000}) == 127


def test_loads_read_raw_bytes():
    buf = np.arange(16, dtype=np.float32)
    b = var("b", s32)
    assert evaluate(Load.make(f32, b, 8), buffers={"b": buf}) == 2.0
    vec = Load.make(f32.with_lanes(4), b, 0, stride=8)
    assert evaluate(vec, buffers={"b": buf}) == (0.0, 2.0, 4.0, 6.0)
    with pytest.raises(EvalError):
        evaluate(Load.make(f32, b, 64), buffers={"b": buf})
    with pytest.raises(EvalError):
        evaluate(var("missing") + 1, {})
