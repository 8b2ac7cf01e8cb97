"""Peephole: add+add -> add3 and mul+add -> mad, exact under wrap-around, only where the target has them."""
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.ir import evaluate, var, walk
from kdd.core.ir.expr import Binary, Cast, IntImm, Op, Ramp, Ternary, binary
from kdd.core.passes.opcount import int_ops
from kdd.core.ir.stmt import Store
from kdd.core.ir.types import s16, s32, s64, u32
from kdd.core.passes.peephole import fuse_arith

X = var("x")
Y = var("y")
Z = var("z", s64)
W = var("w", u32)
H = var("h", s16)
LEAVES = [X, Y, Z, W, H]


def ops_of(e, kind):
    return [n for n in walk(e) if isinstance(n, (Binary, Ternary)) and n.op is kind]


def exprs():
    leaves = st.one_of(st.sampled_from(LEAVES),
                       st.integers(-(2 ** 40), 2 ** 40).map(lambda v: IntImm.make(s64, v)),
                       st.integers(-70000, 70000).map(lambda v: IntImm.make(s32, v)))
    ops = st.sampled_from((Op.ADD, Op.ADD, Op.ADD, Op.MUL, Op.MUL, Op.SUB))
    return st.recursive(leaves, lambda kids: st.builds(binary, ops, kids, kids), max_leaves=10)


VALUES = st.fixed_dictionaries({
    "x": st.integers(-(2 ** 31), 2 ** 31 - 1), "y": st.integers(-(2 ** 31), 2 ** 31 - 1),
    "z": st.integers(-(2 ** 63), 2 ** 63 - 1), "w": st.integers(0, 2 ** 32 - 1), "h": st.integers(-(2 ** 15), 2 ** 15 - 1),
})


@settings(max_examples=300, deadline=None)
@given(exprs(), VALUES)
def test_fused_expression_has_the_same_value_including_wraparound(e, env):
    fused = fuse_arith(e, {"target": "xehpg"})
    assert evaluate(fused, env) == evaluate(e, env)
    assert fused.type == e.type


def test_add_add_becomes_add3_and_mul_add_becomes_mad_on_xe():
    e = (X + Y) + 5
    assert fuse_arith(e, {"target": "xehpg"}) == Ternary.make(Op.ADD3, X, Y, IntImm.make(s32, 5))
    m = 7 + X * Y
    assert fuse_arith(m, {"target": "xehpc"}) == Ternary.make(Op.MAD, IntImm.make(s32, 7), X, Y)


def test_sm90_has_mad_but_no_add3():
    e = Store.make(var("out", s32), (X + Y) + X * 4, X)
    out = fuse_arith(e, {"target": "sm_90"})
    assert not ops_of(out.offset, Op.ADD3)
    assert len(ops_of(out.offset, Op.MAD)) == 1


def test_a_narrower_inner_operation_is_not_fused():
    # (x + y) wraps in s32, then widens: add3 in s64 would not wrap, so the two would differ.
    e = (X + Y) + Z
    assert fuse_arith(e, {"target": "xehpg"}) is e
    env = {"x": 2 ** 31 - 1, "y": 1, "z": 0}
    assert evaluate(e, env) == -(2 ** 31)


def test_no_target_and_nothing_to_fuse_keep_the_same_object():
    e = (X + Y) + 1
    assert fuse_arith(e, {}) is e
    f = X * Y - 3
    assert fuse_arith(f, {"target": "xehpg"}) is f


def test_immediates_go_where_the_target_encodes_them():
    # Xe's ternary instructions take a 16-bit immediate in src0 or src2 only.
    m = X + 4 * Y
    assert fuse_arith(m, {"target": "xehpg"}) == Ternary.make(Op.MAD, X, Y, IntImm.make(s32, 4))
    a = (IntImm.make(s32, 5) + X) + Y
    fused = fuse_arith(a, {"target": "xehpg"})
    assert fused.op is Op.ADD3 and not isinstance(fused.b, IntImm)


def test_an_immediate_no_operand_encodes_is_not_fused():
    # iga64 rejects mad(..., 401408): GED_SetSrc2TernaryImm (the IR once had it)
    m = X + Y * 401408
    assert fuse_arith(m, {"target": "xehpg"}) is m
    a = (X + Y) - 70000
    assert fuse_arith(a, {"target": "xehpg"}) is a
    # PTX's mad.lo takes any immediate of the type
    assert fuse_arith(m, {"target": "sm_90"}).op is Op.MAD


def test_64_bit_fusion_only_where_the_target_has_it():
    z2 = var("z2", s64)
    e = (Z + z2) + Z * z2
    assert not ops_of(fuse_arith(e, {"target": "xehpg"}), Op.MAD) + ops_of(fuse_arith(e, {"target": "xehpg"}),
                                                                         Op.ADD3)
    assert ops_of(fuse_arith(e, {"target": "sm_90"}), Op.MAD)


@settings(max_examples=200, deadline=None)
@given(st.integers(-(2 ** 31), 2 ** 31 - 1), st.integers(-(2 ** 31), 2 ** 31 - 1), st.integers(-(2 ** 15), 2 ** 15 - 1))
def test_a_scalar_sum_inside_a_vector_header_fuses_into_one_add3(x, y, imm):
    """``base + (x*y + imm)`` (a 16-bit immediate): the scalar inner sum adds the same to every lane,
    so it fuses with the vector add (the sum wraps alike), while a narrower inner sum still does not."""
    base = Ramp.make(X, 4, 8)
    e = base + (X * Y + IntImm.make(s32, imm))
    fused = fuse_arith(e, {"target": "xehpg"})
    assert int_ops(fused) < int_ops(e)
    env = {"x": x, "y": y}
    assert evaluate(fused, env) == evaluate(e, env)
    narrow = base + Cast.make(s32, H + H)
    assert ops_of(fuse_arith(narrow, {"target": "xehpg"}), Op.ADD3) == []


@settings(max_examples=300, deadline=None)
@given(st.integers(-2 ** 31, 2 ** 31 - 1), st.integers(-70000, 70000), st.integers(2, 70000),
       st.sampled_from(("ge", "gt")), st.sampled_from(("lt", "le")), st.booleans())
def test_range_tests_become_one_unsigned_comparison_on_xe(x, lo, width, low, high, swap):
    """``x >= lo && x < hi`` (any of ``>``/``<=`` and either order) is ``u32(x - lo) < hi - lo`` on Xe,
    for every 32-bit ``x`` (the subtraction wraps, the range is shorter than 2**32); a comparison
    and a subtraction at most, where it was two comparisons and an ``&&``; sm_90 keeps the test."""
    hi = lo + width
    tests = [getattr(X, low)(lo), getattr(X, high)(hi)]
    e = binary(Op.AND, *(reversed(tests) if swap else tests))
    out = fuse_arith(Store.make(var("out"), 0, e), {"target": "xehpg"}).value
    assert isinstance(out, Binary) and out.op is Op.LT and isinstance(out.a, Cast) and out.a.type.scalar is u32.scalar
    assert int_ops(out) <= 1 and len([n for n in walk(out) if isinstance(n, Binary)]) <= 2
    assert evaluate(out, {"x": x}) == evaluate(e, {"x": x})
    assert fuse_arith(Store.make(var("out"), 0, e), {"target": "sm_90"}).value is e


def test_a_range_test_of_a_sums_let_shifts_inside_an_add3():
    """``t = a + b; (t > 0 && t < 57)``: the shift joins the sum (``add3(a, b, -1)``) and the let,
    read by nothing else, goes: two instructions where there were four."""
    from kdd.core.ir.stmt import Let
    t = var("t")
    body = Let.make(t, X + Y, Store.make(var("out"), 0, t.gt(0).land(t.lt(57))))
    out = fuse_arith(body, {"target": "xehpg"})
    assert isinstance(out, Store) and [n.op for n in walk(out.value) if isinstance(n, Ternary)] == [Op.ADD3]
    for x, y in ((0, 0), (0, 1), (50, 6), (56, 1), (-3, 2), (2 ** 31 - 1, 1)):
        env = {"x": x, "y": y}
        assert evaluate(out.value, env) == evaluate(body.body.value, {**env, "t": evaluate(X + Y, env)})


@settings(max_examples=300, deadline=None)
@given(st.integers(-2 ** 31, 2 ** 31 - 1), st.integers(-2 ** 31, 2 ** 31 - 1), st.integers(-70000, 70000),
       st.integers(2, 70000), st.permutations(range(3)))
def test_a_range_test_among_other_conjuncts_becomes_one_comparison(x, y, lo, width, order):
    """``(m && x >= lo) && x < hi`` in any order of its three conjuncts (a tile whose lanes' rows vary
    tests its lanes' column first): the pair is ``u32(x - lo) < hi - lo`` beside ``m``, with the same
    value for every 32-bit ``x``: three operations (four with the subtraction) where there were five."""
    conj = [Y.gt(0), X.ge(lo), X.lt(lo + width)]
    conj = [conj[i] for i in order]
    e = binary(Op.AND, binary(Op.AND, conj[0], conj[1]), conj[2])
    out = fuse_arith(Store.make(var("out"), 0, e), {"target": "xehpg"}).value
    def binaries(x):
        return len([n for n in walk(x) if isinstance(n, Binary)])

    assert binaries(e) == 5 and binaries(out) == (3 if lo == 0 else 4)
    assert any(isinstance(n, Cast) and n.type.scalar is u32.scalar for n in walk(out))
    assert evaluate(out, {"x": x, "y": y}) == evaluate(e, {"x": x, "y": y})


@settings(max_examples=300, deadline=None)
@given(st.integers(-300, 300), st.integers(0, 600), st.integers(-40, 40), st.integers(1, 6),
       st.sampled_from((Op.DIV, Op.MOD)), st.data())
def test_divisions_by_powers_of_two_of_non_negative_values_shift_and_keep_their_value(lo, width, add, k, op, data):
    """``(x * 3 + add) / 2**k`` and ``% 2**k`` with ``x`` in a launch range: where the dividend cannot be
    negative no signed division is left (a shift or a mask: one instruction, not four or six; or what
    the bounds leave: a constant, the dividend itself); the same value for every ``x`` in the range."""
    from kdd.core.ir.stmt import Let
    t = var("t")
    e = binary(op, t, IntImm.make(s32, 2 ** k))
    body = Let.make(t, X * 3 + add, Store.make(var("out"), 0, e))
    options = {"target": "xehpg", "var_ranges": (("x", lo, lo + width),)}
    out = fuse_arith(body, options)
    if 3 * lo + add >= 0:
        assert not [n for n in walk(out) if isinstance(n, Binary) and n.op in (Op.DIV, Op.MOD)]
    x = data.draw(st.integers(lo, lo + width))
    store = next(n for n in walk(out) if isinstance(n, Store))
    assert evaluate(store.value, {"x": x, "t": 3 * x + add}) == evaluate(e, {"t": 3 * x + add})


def test_what_the_lanes_bounds_leave_one_value_is_a_constant():
    """``((ramp(thread * 512 + 128, 4, 32) % 16) % 4) / 16 * 99 + t``: the quotient is 0 in every lane,
    so the sum is ``t`` (the simplifier's scalar rules leave such terms in vector index math)."""
    from kdd.core.ir.stmt import Let
    lanes, th, t = s32.with_lanes(32), var("thread"), var("t", s32.with_lanes(32))
    ic = var("ic", lanes)
    r = Ramp.make(th * 512 + 128, 4, 32)
    inner = binary(Op.MOD, binary(Op.MOD, r, IntImm.make(s32, 16)), IntImm.make(s32, 4))
    body = Let.make(ic, inner, Store.make(var("out"), 0, binary(Op.DIV, ic, IntImm.make(s32, 16)) * 99 + t))
    out = fuse_arith(body, {"target": "xehpc", "var_ranges": (("thread", 0, 7),)})
    assert out == Store.make(var("out"), 0, t)


def test_lane_indices_of_a_thread_divide_by_shifts():
    """A cooperative copy's per-lane index ``ramp(thread * 512 + 128, 4, 32) / 16 % 32``: every lane's
    dividend is non-negative, so the division is ``>> 4`` and the remainder ``& 31``; with the thread
    index unbounded below they stay."""
    from kdd.core.ir.stmt import Let
    t, th = var("t", s32.with_lanes(32)), var("thread")
    idx = binary(Op.MOD, binary(Op.DIV, t, IntImm.make(s32, 16)), IntImm.make(s32, 32))
    body = Let.make(t, Ramp.make(th * 512 + 128, 4, 32), Store.make(var("out"), 0, idx))
    out = fuse_arith(body, {"target": "xehpc", "var_ranges": (("thread", 0, 7),)})
    assert {n.op for n in walk(out.body.value) if isinstance(n, Binary)} == {Op.SHR, Op.BIT_AND}
    kept = fuse_arith(body, {"target": "xehpc"})
    assert {n.op for n in walk(kept.body.value) if isinstance(n, Binary)} == {Op.DIV, Op.MOD}


def test_a_division_of_a_counters_value_read_from_its_register_is_a_shift():
    """``(d * 16) / 32`` and ``% 32`` where ``d`` is read from a counter's register whose allocation says
    it holds 0..4 (``range``, strength reduction's digit counters): the dividend is non-negative, so a
    shift and a mask, the same value for every ``d`` it holds; without the range the signed sequence
    stays (a register's value is otherwise unknown)."""
    from kdd.core.ir import Alloc, Let, Load, MemKind
    from kdd.core.passes.mixed_radix import RANGE_ATTR
    reg, d = var("d_reg"), var("d")
    e = binary(Op.DIV, d * 16, IntImm.make(s32, 32)) * 7 + binary(Op.MOD, d * 16, IntImm.make(s32, 32))

    def kernel(attrs):
        return Alloc.make(reg, 64, MemKind.GRF, Let.make(d, Load.make(s32, reg, 0), Store.make(var("out"), 0, e)),
                          attrs)

    out = fuse_arith(kernel(((RANGE_ATTR, (0, 4)),)), {"target": "xehpc"})
    (store,) = [n for n in walk(out) if isinstance(n, Store)]
    assert {n.op for n in walk(store.value) if isinstance(n, Binary)} & {Op.DIV, Op.MOD} == set()
    assert {Op.SHR, Op.BIT_AND} <= {n.op for n in walk(store.value) if isinstance(n, Binary)}
    for value in range(5):
        assert evaluate(store.value, {"d": value}) == evaluate(e, {"d": value})
    kept = fuse_arith(kernel(()), {"target": "xehpc"})
    assert {Op.DIV, Op.MOD} <= {n.op for n in walk(kept) if isinstance(n, Binary)}
