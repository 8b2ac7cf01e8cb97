"""Property tests of the simplifier against the evaluator (the oracle).

Random expression trees of depth >= 6 over s32 variables (plus one u8 and one
s64 variable) with + - * / % min max iif, comparisons, && || ! and constants;
ranges for the variables are drawn first and the environment inside them.
"""
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.ir import Op, binary, const, count_nodes, evaluate, iif, max_, min_, unary, var, walk
from kdd.core.ir.expr import Var
from kdd.core.ir.simplify import alignment_of, bounds_of, linear_form, simplify
from kdd.core.ir.simplify.stmt import VarUses
from kdd.core.ir.types import s64, u8

VARS = (var("a"), var("b"), var("c"), var("d"), var("u", u8), var("w", s64))
INT_OPS = ("+", "-", "*", "/", "%", "min", "max", "iif", "+", "-", "*", "/")
CMP_OPS = (Op.LT, Op.LE, Op.GT, Op.GE, Op.EQ, Op.NE)
_VALUES = (0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 32, 64, 100, -1, -2, -3, -4, -8, -16,
           2**31 - 1, -2**31, 2**31 - 2, 255, 256, 2**30, -2**30)
CONSTS = tuple(const(v) for v in _VALUES) + tuple(const(v, t) for v in (0, 1, 3, 16, 100) for t in (u8, s64))


class _Choices:
    """Choices read from one drawn byte string (one hypothesis draw per tree keeps
    generation fast; shrinking the bytes toward zero shrinks the tree toward leaves)."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def __call__(self, n: int) -> int:
        """A choice in ``0..n-1`` (0 once the bytes run out)."""
        if self.at + 1 >= len(self.data):
            return 0
        value = self.data[self.at] | self.data[self.at + 1] << 8
        self.at += 2
        return value % n


def _leaf(pick):
    k = pick(100)
    if k < 45:
        return VARS[k % len(VARS)]
    if k < 95:
        return CONSTS[k % len(CONSTS)]
    return const(pick(2001) - 1000)


def _int(pick, depth: int, exact: bool):
    """An integer expression; ``exact`` forces this subtree to reach ``depth`` levels."""
    k = pick(4 * len(INT_OPS))
    if depth == 0 or (not exact and k < len(INT_OPS)):
        return _leaf(pick)
    op = INT_OPS[k % len(INT_OPS)]
    first = _int(pick, depth - 1, exact)
    second = _int(pick, depth - 1, False)
    if k & 1:
        first, second = second, first
    if op == "iif":
        return iif(_bool(pick, depth - 1, False), first, second)
    if op == "min":
        return min_(first, second)
    if op == "max":
        return max_(first, second)
    return {"+": first + second, "-": first - second, "*": first * second,
            "/": first // second, "%": first % second}[op]


def _bool(pick, depth: int, exact: bool):
    k = pick(24)
    if depth == 0 or (not exact and k < 4):
        return const(k % 2 == 0) if k < 2 else binary(CMP_OPS[k % 6], _leaf(pick), _leaf(pick))
    if k < 16:
        return binary(CMP_OPS[k % 6], _int(pick, depth - 1, exact), _int(pick, depth - 1, False))
    if k < 19:
        return unary(Op.NOT, _bool(pick, depth - 1, exact))
    return binary(Op.AND if k % 2 else Op.OR, _bool(pick, depth - 1, exact), _bool(pick, depth - 1, False))


@st.composite
def expressions(draw, kinds=("int", "bool")):
    pick = _Choices(draw(st.binary(min_size=1024, max_size=1024)))
    depth = 6 + pick(2)
    if "bool" in kinds and ("int" not in kinds or pick(5) == 0):
        return _bool(pick, depth, True)
    return _int(pick, depth, True)


@st.composite
def ranges(draw):
    """A range per variable (None: the type's range), biased to the small ranges rules need."""
    out = {}
    for v in VARS:
        lo_t, hi_t = v.type.scalar.int_range()
        kind = draw(st.integers(0, 4))
        if kind == 0:
            continue
        if kind == 1:
            lo = draw(st.integers(max(lo_t, -1000), min(hi_t, 1000)))
            hi = draw(st.integers(lo, min(hi_t, lo + 1000)))
        elif kind == 2:
            lo, hi = 0, draw(st.integers(0, min(hi_t, 64)))
        elif kind == 3:
            lo = draw(st.integers(lo_t, hi_t))
            hi = draw(st.integers(lo, hi_t))
        else:
            lo = draw(st.integers(max(lo_t, -20), min(hi_t, 20)))
            hi = lo + draw(st.integers(0, 3))
        out[v.name] = (lo, hi)
    return out


@st.composite
def cases(draw, kinds=("int", "bool")):
    r = draw(ranges())
    env = {}
    for v in VARS:
        lo, hi = r.get(v.name, v.type.scalar.int_range())
        env[v.name] = draw(st.one_of(st.integers(lo, hi), st.sampled_from((lo, hi))))
    return draw(expressions(kinds)), r, env


LINEAR_OPS = ("/", "%", "cmp", "min", "max", "div-mod", "div-div", "mod-mod")


@st.composite
def linear_expressions(draw):
    """A linear combination of variables (coefficients often multiples of ``k``) under
    the operators whose rules need bounds: ``/ k``, ``% k``, comparisons, min/max."""
    k = draw(st.sampled_from((2, 3, 4, 5, 8, 16)))
    coefs = st.sampled_from((1, 2, -1, -2, k, 2 * k, -k, 3 * k))

    def combination():
        terms = draw(st.lists(st.tuples(st.sampled_from(VARS[:5]), coefs), min_size=1, max_size=4))
        e = None
        for v, c in terms:
            term = v * c if draw(st.booleans()) else c * v
            e = term if e is None else (e + term if draw(st.booleans()) else e - (-1 * term))
        return e + draw(st.integers(-3 * k, 3 * k))

    e, op = combination(), draw(st.sampled_from(LINEAR_OPS))
    if op == "cmp":
        return binary(draw(st.sampled_from(CMP_OPS)), e, combination())
    if op in ("min", "max"):
        return (min_ if op == "min" else max_)(e, combination())
    k2 = draw(st.sampled_from((1, 2, 4, 6, 16)))
    return {"/": e // k, "%": e % k, "div-mod": (e // k) * k + e % k,
            "div-div": (e // k) // k2, "mod-mod": (e % (k * k2)) % k}[op]


@st.composite
def linear_cases(draw):
    r = draw(ranges())
    env = {v.name: draw(st.integers(*r.get(v.name, v.type.scalar.int_range()))) for v in VARS}
    return draw(linear_expressions()), r, env


@settings(max_examples=500, deadline=None)
@given(linear_cases())
def test_simplify_linear_rules_preserve_value(case):
    e, r, env = case
    assert evaluate(simplify(e, r), env) == evaluate(e, env)


@st.composite
def aligned_cases(draw):
    """``(g*Q + R) / k`` and ``% k`` with ``g`` a divisor of ``k``: the dividend's terms are multiples
    of ``g`` (an outer index) or small (an inner index), the ranges drawn so that the aligned split
    sometimes applies (R in ``[0, g)``) and sometimes not (R reaching past ``g``, negative parts)."""
    g = draw(st.sampled_from((2, 4, 8, 16)))
    k = g * draw(st.sampled_from((1, 2, 3, 4, 8)))
    outer, inner, other = VARS[0], VARS[1], VARS[2]
    r = {outer.name: (draw(st.integers(-4, 0)), draw(st.integers(0, 200))),
         inner.name: (draw(st.integers(-1, 0)), draw(st.integers(0, g))),
         other.name: (0, draw(st.integers(0, 50)))}
    e = outer * (g * draw(st.sampled_from((1, 2, 3)))) + inner + other * (g * draw(st.sampled_from((1, 4)))) \
        + g * draw(st.integers(-2, 3)) + draw(st.integers(0, 1))
    e = e // k if draw(st.booleans()) else e % k
    env = {v.name: draw(st.integers(*r.get(v.name, v.type.scalar.int_range()))) for v in VARS}
    return e, r, env


@settings(max_examples=500, deadline=None)
@given(aligned_cases())
def test_aligned_split_preserves_value(case):
    e, r, env = case
    assert evaluate(simplify(e, r), env) == evaluate(e, env)


@st.composite
def exact_division_cases(draw):
    """``(x / k) * d`` with ``k`` dividing ``d``: ``x`` a sum of multiples of ``k`` over unbounded
    variables (so it may wrap), or with a small term that makes it no multiple of ``k``."""
    k = draw(st.sampled_from((2, 4, 16, 3, 6, -4)))
    outer, inner, other = VARS[0], VARS[1], VARS[2]
    x = outer * (k * draw(st.sampled_from((1, 2, 5)))) + other * (k * draw(st.sampled_from((1, -3)))) \
        + k * draw(st.integers(-3, 3))
    if draw(st.booleans()):
        x = x + inner
    e = (x // k) * (k * draw(st.sampled_from((1, 2, 256, -8)))) + inner
    r = {inner.name: (0, draw(st.integers(0, 2 * abs(k))))} if draw(st.booleans()) else {}
    env = {v.name: draw(st.integers(*r.get(v.name, v.type.scalar.int_range()))) for v in VARS}
    return e, r, env


@settings(max_examples=500, deadline=None)
@given(exact_division_cases())
def test_exact_division_read_back_preserves_value(case):
    e, r, env = case
    assert evaluate(simplify(e, r), env) == evaluate(e, env)


@settings(max_examples=500, deadline=None)
@given(cases())
def test_simplify_preserves_value(case):
    e, r, env = case
    assert evaluate(simplify(e, r), env) == evaluate(e, env)


@settings(max_examples=500, deadline=None)
@given(cases())
def test_simplify_is_idempotent(case):
    e, r, _ = case
    once = simplify(e, r)
    assert simplify(once, r) == once
    plain = simplify(e)
    assert simplify(plain) == plain


@settings(max_examples=500, deadline=None)
@given(cases())
def test_simplify_never_grows(case):
    e, r, _ = case
    assert count_nodes(simplify(e, r)) <= count_nodes(e)
    assert count_nodes(simplify(e)) <= count_nodes(e)


@settings(max_examples=500, deadline=None)
@given(cases())
def test_bounds_and_alignment_hold(case):
    e, r, env = case
    value = int(evaluate(e, env))
    lo, hi = bounds_of(e, r)
    assert lo <= value <= hi
    mod, rem = alignment_of(e, r)
    assert (value == rem) if mod == 0 else (value - rem) % mod == 0


@settings(max_examples=500, deadline=None)
@given(cases(kinds=("int",)))
def test_linear_form_keeps_value(case):
    e, _, env = case
    assert evaluate(linear_form(e).to_expr(), env) == evaluate(e, env)


@given(expressions(), expressions())
def test_variable_uses_count_every_occurrence_of_shared_subtrees(a, b):
    uses = VarUses()
    both = binary(Op.EQ, a, b) if a.type == b.type else a + a  # ``a`` under two parents
    for e in (a, b, both, both):  # in turn, so later ones reuse what earlier ones memoised
        assert dict(uses(e)) == Counter(n for n in walk(e) if isinstance(n, Var))
