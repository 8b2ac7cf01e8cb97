"""The vectorized expression evaluator against the exact scalar evaluator ``kdd.core.ir.evaluate``."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.interp.errors import InterpError
from kdd.core.interp.values import round_float
from kdd.core.interp.vexpr import evaluate_threads
from kdd.core.ir import (Binary, BoolImm, Broadcast, Cast, FloatImm, IntImm, Load, Op, Ramp, Shuffle,
                         Ternary, Unary, evaluate, var)
from kdd.core.ir.types import Scalar, Type, bool_, f16, s32, u64

THREADS = 5
SCALARS = [Type(s) for s in Scalar if not s.is_packed]  # packed kinds live in memory only
INTS = [t for t in SCALARS if t.is_int]
FLOATS = [t for t in SCALARS if t.is_float]
MEM = np.random.default_rng(7).integers(0, 256, 256, dtype=np.uint8)
MEM_TYPES = [t for t in SCALARS if not t.is_bool]


def _float_value(draw, t):
    v = draw(st.one_of(st.integers(-40, 40).map(float),
                       st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False, width=32)))
    return float(round_float(np.array([v]), t)[0])


def _value(draw, t):
    if t.is_bool:
        return draw(st.booleans())
    if t.is_int:
        lo, hi = t.scalar.int_range()
        return draw(st.one_of(st.integers(-9, 9).filter(lambda v: lo <= v <= hi), st.integers(lo, hi)))
    return _float_value(draw, t)


class Gen:
    """Random well-typed expressions (lanes 1 or L) with per-thread variable values."""

    def __init__(self, draw):
        self.draw = draw
        self.vars: dict[str, tuple[Type, list]] = {}

    def leaf(self, t: Type):
        d = self.draw
        kind = d(st.sampled_from(["var", "var", "imm"]))
        if kind == "imm":
            v = _value(d, t)
            if t.is_bool:
                return BoolImm.make(v)
            return IntImm.make(t, v) if t.is_int else FloatImm.make(t, v)
        name = f"v{len(self.vars)}"
        uniform = d(st.booleans())
        vals = [_value(d, t)] * (1 if uniform else THREADS)
        if not uniform:
            vals = [_value(d, t) for _ in range(THREADS)]
        self.vars[name] = (t, vals)
        return var(name, t)

    def scalar_type(self):
        return self.draw(st.sampled_from(SCALARS))

    def expr(self, depth: int, lanes: int = 1):
        d = self.draw
        if lanes > 1:
            kind = d(st.sampled_from(["broadcast", "ramp", "load", "unary", "binary", "binary",
                                      "ternary", "cast", "shuffle"] if depth > 0 else
                                     ["broadcast", "ramp"]))
            if kind == "broadcast":
                return Broadcast.make(self.expr(depth - 1), lanes)
            if kind == "ramp":
                base = self.expr(depth - 1)
                if not base.type.is_int:
                    base = Cast.make(d(st.sampled_from(INTS)), base)
                return Ramp.make(base, d(st.integers(-3, 3)), lanes)
            if kind == "load":
                return self.load(depth, lanes)
            if kind == "shuffle":
                a = self.expr(depth - 1, lanes)
                b = Broadcast.make(Cast.make(a.type.base, self.expr(depth - 1)), 2)
                idx = d(st.lists(st.integers(0, lanes + 1), min_size=lanes, max_size=lanes))
                return Shuffle.make([a, b], idx)
            return self.op(kind, depth, lanes)
        if depth <= 0:
            return self.leaf(self.scalar_type())
        kind = d(st.sampled_from(["leaf", "unary", "binary", "binary", "binary", "ternary", "cast",
                                  "load"]))
        if kind == "leaf":
            return self.leaf(self.scalar_type())
        if kind == "load":
            return self.load(depth, 1)
        return self.op(kind, depth, lanes)

    def operand(self, depth, lanes):
        return self.expr(depth - 1, lanes if lanes == 1 or self.draw(st.booleans()) else 1)

    def load(self, depth, lanes):
        d = self.draw
        t = d(st.sampled_from(MEM_TYPES))
        off = self.expr(depth - 1)
        if not off.type.is_int:
            off = Cast.make(s32, off)
        off = Binary.make(Op.MUL, Binary.make(Op.BIT_AND, Cast.make(s32, off), IntImm.make(s32, 15)),
                          IntImm.make(s32, 8))
        stride = d(st.sampled_from([t.size, 0, 2 * t.size]))
        return Load.make(t.with_lanes(lanes), var("mem", u64), off, stride=stride)

    def op(self, kind, depth, lanes):
        d = self.draw
        if kind == "unary":
            a = self.expr(depth - 1, lanes)
            if a.type.is_bool:
                return Unary.make(Op.NOT, a)
            ops = [Op.NEG] + ([Op.BIT_NOT] if a.type.is_int else [])
            return Unary.make(d(st.sampled_from(ops)), a)
        if kind == "cast":
            a = self.expr(depth - 1, lanes)
            return Cast.make(self.scalar_type(), a, saturate=d(st.booleans()))
        if kind == "ternary":
            op = d(st.sampled_from([Op.IIF, Op.ADD3, Op.MAD]))
            if op is Op.IIF:
                c = self.operand(depth, lanes)
                if not c.type.is_bool:
                    c = Binary.make(Op.LT, c, Cast.make(c.type.base, IntImm.make(s32, 1)))
                # The result takes its lanes from the branches (Ternary.make), so one is a full vector.
                return Ternary.make(op, c, self.expr(depth - 1, lanes), self.operand(depth, lanes))
            parts = [self.expr(depth - 1, lanes)] + [self.operand(depth, lanes) for _ in range(2)]
            if all(p.type.is_bool for p in parts):
                parts[0] = Cast.make(s32, parts[0])
            return Ternary.make(op, *parts)
        a, b = self.operand(depth, lanes), self.operand(depth, lanes)
        if a.type.lanes == 1 and b.type.lanes == 1 and lanes > 1:
            a = Broadcast.make(a, lanes)
        if a.type.is_bool and b.type.is_bool:
            op = d(st.sampled_from([Op.AND, Op.OR, Op.EQ, Op.NE]))
        elif a.type.is_int and b.type.is_int:
            op = d(st.sampled_from([o for o in Op if o.arity == 2 and not o.is_logical]))
        else:
            op = d(st.sampled_from([Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.MIN, Op.MAX, Op.LT, Op.LE,
                                    Op.GT, Op.GE, Op.EQ, Op.NE]))
            if a.type.is_bool or b.type.is_bool:
                op = d(st.sampled_from([Op.ADD, Op.MUL, Op.LT, Op.EQ, Op.MAX]))
        return Binary.make(op, a, b)


def _same(x, y, t: Type) -> bool:
    if t.is_float:
        x, y = float(x), float(y)
        return (math.isnan(x) and math.isnan(y)) or x == y
    return (bool(x) == bool(y)) if t.is_bool else int(x) == int(y)


@st.composite
def expressions(draw):
    g = Gen(draw)
    lanes = draw(st.sampled_from([1, 1, 3]))
    e = g.expr(draw(st.integers(1, 4)), lanes)
    return e, g.vars


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # f16 overflow to inf is the semantics
@settings(max_examples=400, deadline=None)
@given(expressions())
def test_vectorized_evaluation_matches_scalar_evaluate(case):
    e, variables = case
    values = {name: np.array(vals, dtype=t.numpy) for name, (t, vals) in variables.items()}
    got = evaluate_threads(e, values, {"mem": MEM}, threads=THREADS)
    base = e.type.base
    for thread in range(THREADS):
        env = {name: vals[thread if len(vals) > 1 else 0] for name, (t, vals) in variables.items()}
        want = evaluate(e, env, {"mem": MEM})
        mine = got[thread if got.shape[0] > 1 else 0]
        if e.type.lanes == 1:
            want, mine = (want,), (mine,)
        for w, m in zip(want, mine):
            if base.is_float:
                w = float(round_float(np.array([w], dtype=np.float64), base)[0])
            assert _same(m, w, base), (str(e), thread, env, w, m)


def test_division_edge_cases_and_wrap():
    a, b = var("a"), var("b")
    vals = {"a": np.array([7, -7, -(2**31), 5], np.int32), "b": np.array([0, 2, -1, -3], np.int32)}
    assert evaluate_threads(a // b, vals, threads=4).tolist() == [0, -3, -(2**31), -1]
    assert evaluate_threads(a % b, vals, threads=4).tolist() == [0, -1, 0, 2]


def test_float_division_by_zero_follows_eval():
    x, y = var("x", f16), var("y", f16)
    got = evaluate_threads(x / y, {"x": np.array([1, -1, 0], np.float16), "y": np.zeros(3, np.float16)},
                           threads=3)
    assert got[0] == np.inf and got[1] == -np.inf and np.isnan(got[2])


def test_uniform_values_stay_uniform():
    a = var("a")
    got = evaluate_threads(a * 2 + 1, {"a": np.array([3], np.int32)}, threads=8)
    assert got.shape == (1,) and got[0] == 7


def test_deep_expression_chains_do_not_recurse():
    a = var("a")
    e = a
    for i in range(3000):
        e = e + (i % 7)
    got = evaluate_threads(e, {"a": np.array([1, 2], np.int32)}, threads=2)
    want = 1 + sum(i % 7 for i in range(3000))
    assert got.tolist() == [want, want + 1]


def test_out_of_bounds_load_is_an_error_naming_the_buffer():
    with pytest.raises(InterpError, match="'mem'"):
        evaluate_threads(Load.make(s32, var("mem", u64), var("o")), {"o": np.array([0, 256])},
                         {"mem": MEM}, threads=2)


def test_bool_vector_logic():
    c = var("c", bool_)
    e = Binary.make(Op.AND, Broadcast.make(c, 2), Binary.make(Op.LT, Ramp.make(var("i"), 1, 2),
                                                             Broadcast.make(IntImm.make(s32, 1), 2)))
    got = evaluate_threads(e, {"c": np.array([True, False]), "i": np.array([0, 0], np.int32)}, threads=2)
    assert got.tolist() == [[True, False], [False, False]]


_F16 = st.floats(-200, 200, width=16).filter(lambda x: x == 0 or abs(x) >= 2 ** -8)  # a + b * c exact in f64, finite in f16


@settings(max_examples=200, deadline=None)
@given(a=_F16, b=_F16, c=_F16)
def test_f16_mad_is_fused_like_xe_and_xesim(a, b, c):
    """A float ``mad(a, b, c)`` rounds once: the exact ``a + b * c`` (a Fraction) rounded to f16, in the
    scalar evaluator and the vectorized interpreter alike (Xe's ``mad`` is fused; rounding the product
    first would differ)."""
    from fractions import Fraction

    e = Ternary.make(Op.MAD, var("a", f16), var("b", f16), var("c", f16))
    exact = float(np.float16(float(Fraction(a) + Fraction(b) * Fraction(c))))  # f16 rounding of the exact value
    assert float(evaluate(e, {"a": a, "b": b, "c": c})) == exact
    got = evaluate_threads(e, {"a": np.array([[a]]), "b": np.array([[b]]), "c": np.array([[c]])})
    assert float(got.reshape(-1)[0]) == float(evaluate(e, {"a": a, "b": b, "c": c}))
