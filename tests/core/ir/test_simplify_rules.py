"""Unit tests of the simplifier's rule families, with exact expected outputs."""
import pytest

from kdd.core.ir import (Binary, Op, const, evaluate, iif, max_, min_, to_text, unary, var)
from kdd.core.ir.simplify import alignment_of, bounds_of, linear_form, simplify
from kdd.core.ir.types import f32, s64, u8, u32

a, b, c, x, y = var("a"), var("b"), var("c"), var("x"), var("y")
p, q = var("p", type=const(True).type), var("q", type=const(True).type)
f, g = var("f", f32), var("g", f32)
u = var("u", u8)
w = var("w", s64)
SMALL = {"x": (0, 1000), "y": (0, 15), "a": (-50, 50), "b": (-50, 50)}


def text(e, ranges=None) -> str:
    return to_text(simplify(e, ranges))


# -- constant folding ---------------------------------------------------------------------------

@pytest.mark.parametrize("expr, expected", [
    (const(2**31 - 1) + 1, "(-2147483648)"),
    (const(7) // 0, "0"),
    (const(7) % 0, "0"),
    (const(-7) // 2, "(-3)"),
    (const(-7) % 2, "(-1)"),
    (const(200, u8) + const(100, u8), "44:u8"),
    (const(1.5) * 2.0, "3.0"),
    (const(3).lt(4).land(const(False)), "false"),
    (min_(const(3), const(-4)), "(-4)"),
    (iif(const(False), 1.0, 2.0), "2.0"),
])
def test_constants_fold_with_eval_semantics(expr, expected):
    assert text(expr) == expected


# -- linear forms -------------------------------------------------------------------------------

@pytest.mark.parametrize("expr, expected", [
    (2 * (a + b) - a, "(a + (b * 2))"),
    ((x * 4 + 1) - x * 4 + y, "(y + 1)"),
    (a * 3 + b * 3, "((a + b) * 3)"),
    ((a + b) * 3 + 3, "(((a + b) * 3) + 3)"),
    (a * 4 + c * 4 + b, "(((a + c) * 4) + b)"),
    (a * 2 - c * 2, "((a - c) * 2)"),
    (3 - y, "(3 - y)"),
    (0 - a - b, "(-(a + b))"),
    (a - b * 2 + 5 - a, "(5 - (b * 2))"),
    (y * x - x * y, "0"),
    ((x * 2) * (y * 3), "((x * y) * 6)"),
    (x + 1 - x, "1"),
    ((x // 4) * 4 + x % 4, "x"),
    ((x // 4) * 8 + (x % 4) * 2 + 1, "((x * 2) + 1)"),
    ((w + a) - a, "w"),
    (u + u, "(u * 2:u8)"),
])
def test_linear_forms_are_canonical(expr, expected):
    assert text(expr) == expected


def test_linear_arithmetic_is_exact_under_wraparound():
    big = const(2**31 - 1)
    e = (x + big) - big
    assert text(e) == "x"
    assert evaluate(simplify(e), {"x": 5}) == evaluate(e, {"x": 5})
    v = var("v", u32)
    assert text((v - 1) + 1) == "v"


def test_linear_form_api_orders_terms():
    lf = linear_form(2 * (b + a) - a + 7)
    assert [(to_text(t), k) for t, k in lf.terms] == [("a", 1), ("b", 2)]
    assert lf.const == 7
    assert to_text(lf.to_expr()) == "((a + (b * 2)) + 7)"
    with pytest.raises(TypeError, match="f32"):
        linear_form(f + g)


# -- division and modulus -----------------------------------------------------------------------

@pytest.mark.parametrize("expr, expected", [
    ((x * 16 + y) // 16, "x"),
    ((x * 16 + y) % 16, "y"),
    ((x * 16 + y + 20) // 16, "((x + ((y + 4) / 16)) + 1)"),
    ((x * 16 + y + 20) % 16, "((y + 4) % 16)"),
    ((x + 5) // 4, "((x + 5) / 4)"),
    ((y + 5) // 32, "0"),
    (y % 16, "y"),
    (a % 51, "a"),
    ((x * 6) % 3, "0"),
    ((x * 4 + 2) % 4, "2"),
    ((x * 12 + 8) // 4, "((x * 3) + 2)"),
    ((x * 8 + y % 8) // 32, "(x / 4)"),
    ((x * 8 + y % 8 + 16) // 32, "((x + 2) / 4)"),
    ((x * 8 + y % 8) % 32, "(((x % 4) * 8) + (y % 8))"),
    ((x * 8 + y) // 32, "(((x * 8) + y) / 32)"),      # y reaches past 8
])
def test_div_mod_use_ranges(expr, expected):
    assert text(expr, SMALL) == expected


@pytest.mark.parametrize("expr, expected", [
    ((x * 16 + y) // 16, "(((x * 16) + y) / 16)"),   # x may be negative or overflow
    ((x * 6) % 3, "((x * 6) % 3)"),                   # x * 6 may wrap: 3 does not divide 2**32
    ((x * 8) % 4, "0"),                               # powers of two survive wrap-around
    (x // 1, "x"),
    (x % 1, "0"),
    (x // -1, "(-x)"),
    (x % -1, "0"),
    (x % x, "0"),
    (x // 0, "0"),
    ((x // 4) // 8, "(x / 32)"),
    (((x * 16) // 16) * 4096, "(x * 4096)"),       # an exact division read back, even if x * 16 wraps
    (((x * 16) // 16) * 8, "(((x * 16) / 16) * 8)"),  # 16 does not divide 8
    (((x * 8) // 16) * 4096, "(((x * 8) / 16) * 4096)"),  # x * 8: no multiple of 16
    ((x % 16) % 4, "(x % 4)"),
    ((x % y) % y, "(x % y)"),
])
def test_div_mod_rules_without_ranges(expr, expected):
    assert text(expr) == expected


def test_unsigned_mod_by_power_of_two_drops_multiples():
    v, t = var("v", u32), var("t", u32)
    assert text((v + t * 16 + 35) % 16) == "((v + 3:u32) % 16:u32)"


# -- min and max --------------------------------------------------------------------------------

@pytest.mark.parametrize("expr, expected", [
    (min_(x, x), "x"),
    (min_(x + 1, x + 3), "(x + 1)"),
    (max_(x + 1, x + 3), "(x + 3)"),
    (min_(min_(x, 5), 3), "min(x, 3)"),
    (max_(max_(x, 3), 5), "max(x, 5)"),
    (min_(5, a), "min(a, 5)"),
    (min_(max_(a, 8), 3), "3"),
    (min_(x, max_(x, y)), "x"),
    (max_(a % 8, 7), "7"),
    (min_(min_(a, 3), b), "min(min(a, b), 3)"),
    (min_(b, a), "min(a, b)"),
    (max_(min_(a, b), max_(a, b)), "max(a, b)"),
])
def test_min_max(expr, expected):
    assert text(expr, SMALL) == expected


def test_min_max_of_linear_forms_need_no_overflow():
    assert text(min_(x + 1, x + 3)) == "min((x + 1), (x + 3))"


def binary_eq(e, v):
    return Binary.make(Op.EQ, e, const(v))


# -- comparisons --------------------------------------------------------------------------------

@pytest.mark.parametrize("expr, expected", [
    ((x + 1).lt(x + 3), "true"),
    ((x * 2 + 1).lt(y * 2 + 4), "(x < (y + 2))"),
    ((x * 2).eq(y * 2 + 1), "false"),
    (const(3).lt(y), "(y > 3)"),
    (x.lt(y + 1), "(x <= y)"),
    (x.ge(y + 1), "(x > y)"),
    ((x + y).le(x + 5), "(y <= 5)"),
    ((x + 3).gt(a), "(x > (a - 3))"),
    (y.lt(16), "true"),
    (x.ge(0), "true"),
    (a.eq(51), "false"),
])
def test_comparisons_with_ranges(expr, expected):
    assert text(expr, SMALL) == expected


@pytest.mark.parametrize("expr, expected", [
    ((x + 1).lt(x + 3), "((x + 1) < (x + 3))"),   # wraps at x = 2**31 - 3
    ((x + 1).eq(x + 3), "false"),                 # equality holds modulo 2**32
    ((x + 1).eq(y + 3), "(x == (y + 2))"),
    (x.eq(x), "true"),
    ((x * y + 1).eq(1 + y * x), "true"),
    (u.lt(256), "true"),
    (u.ge(0), "true"),
    (binary_eq(p, True), "p"),
    (binary_eq(p, False), "(!p)"),
    (w.cast(s64).eq(w), "true"),
    (f.lt(g), "(f < g)"),
])
def test_comparisons_without_ranges(expr, expected):
    assert text(expr) == expected


# -- logic and iif ------------------------------------------------------------------------------

@pytest.mark.parametrize("expr, expected", [
    (p.land(True), "p"),
    (p.land(False), "false"),
    (p.lor(True), "true"),
    (p.land(p.lnot()), "false"),
    (p.lnot().lor(p), "true"),
    (p.lnot().lnot(), "p"),
    (p.land(p.land(q)), "(p && q)"),
    (p.land(p.lor(q)), "p"),
    (x.lt(y).lnot(), "(x >= y)"),
    (f.lt(g).lnot(), "(!(f < g))"),               # not (f >= g): NaN
    (x.lt(5).land(x.lt(3)), "(x < 3)"),
    (x.lt(5).land(x.gt(7)), "false"),
    (x.lt(5).lor(x.ge(5)), "true"),
    (x.lt(5).lor(x.lt(3)), "(x < 5)"),
    (iif(const(True), x, y), "x"),
    (iif(p, x, x), "x"),
    (iif(p.lnot(), x, y), "iif(p, y, x)"),
    (iif(x.lt(y), x, y), "min(x, y)"),
    (iif(x.le(y), y, x), "max(x, y)"),
    (iif(p, const(True), const(False)), "p"),
    (iif(p, const(False), const(True)), "(!p)"),
    (iif(p, q, const(False)), "(p && q)"),
    (iif(p, u, x), "iif(p, u, x)"),
    (iif(const(True), u, x), "s32(u)"),  # u8 and s32 meet at s32, as in C
])
def test_logic_and_iif(expr, expected):
    assert text(expr) == expected


# -- casts --------------------------------------------------------------------------------------

def test_casts():
    assert text(x.cast(x.type)) == "x"
    assert text(x.cast(s64).cast(x.type)) == "x"
    assert text(x.cast(u8, saturate=True), {"x": (0, 200)}) == "u8(x)"
    assert text(x.cast(u8, saturate=True)) == "sat.u8(x)"
    assert text(~~x) == "x"


# -- identity, ranges, analyses -----------------------------------------------------------------

def test_unchanged_expression_is_the_same_object():
    e = (min_(a, b) + x * y) // c
    assert simplify(e) is e
    assert simplify(e, SMALL) is e


def test_ranges_by_variable_or_name_and_point_ranges():
    assert text(x + y, {x: (3, 3)}) == "(y + 3)"
    assert text(x.lt(y), {"x": (0, 4), y: (5, None)}) == "true"


@pytest.mark.parametrize("ranges, message", [
    ({"x": (5, 1)}, "'x'"),
    ({u: (300, 400)}, "u8"),
    ({3: (0, 1)}, "3"),
])
def test_bad_ranges_are_reported(ranges, message):
    with pytest.raises((ValueError, TypeError), match=message):
        simplify(x + u, ranges)


def test_bounds_and_alignment():
    assert bounds_of(x % 16) == (-15, 15)
    assert bounds_of(u) == (0, 255)
    assert bounds_of(x * 4 + 1, {"x": (0, 10)}) == (1, 41)
    assert bounds_of(x * 4 + 1) == (-2**31 + 1, 2**31 - 3)
    assert bounds_of(f + g) == (None, None)
    assert bounds_of(x.lt(y)) == (0, 1)
    assert alignment_of(x * 4 + 1) == (4, 1)
    assert alignment_of(x * 6 + 1) == (2, 1)          # 6 does not divide 2**32
    assert alignment_of(x * 6 + 1, {"x": (0, 9)}) == (6, 1)
    assert alignment_of(const(5)) == (0, 5)
    assert alignment_of(min_(x * 4, y * 8 + 2)) == (2, 0)


def test_vectors_and_floats_are_left_alone_but_operands_simplify():
    e = (f + g) * 1.0
    assert simplify(e) is e
    assert text(unary(Op.NEG, f + (x + 1 - x).cast(f32))) == "(-(f + 1.0))"


# -- vector identities --------------------------------------------------------------------------

def test_vector_plus_zero_and_times_one_are_the_vector():
    """An unrolled message loop leaves ``lane_base + 0`` in its first copy: it folds, so that copy's
    addresses read the same name as equal addresses computed elsewhere; other vector sums stay."""
    from kdd.core.ir.expr import Broadcast, Ramp
    from kdd.core.ir.types import s32
    v = var("v", s32.with_lanes(8))
    assert simplify(v + const(0)) is v
    assert simplify(Broadcast.make(const(0), 8) + v) is v
    assert simplify(v - const(0)) is v
    assert simplify(v * const(1)) is v
    assert to_text(simplify(v - v)) == "(v - v)"  # no vector algebra beyond the identities
    r = Ramp.make(x, 1, 8)
    assert simplify(r + const(0)) == r


def test_a_mask_and_true_is_the_mask():
    """A tail test that holds in one unrolled copy leaves ``mask && true``: it folds to the mask; a mask
    and false, or and another mask, stays (no other vector logic)."""
    from kdd.core.ir.expr import Broadcast
    m = var("m", const(True).type.with_lanes(32))
    true, false = Broadcast.make(const(True), 32), Broadcast.make(const(False), 32)
    assert simplify(m.land(true)) is m and simplify(true.land(m)) is m
    for kept in (m.land(false), m.lor(false), m.land(var("n", m.type))):
        assert to_text(simplify(kept)) == to_text(kept)
