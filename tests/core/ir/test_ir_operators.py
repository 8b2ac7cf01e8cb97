"""The folding constructors (``kdd.core.ir.operators``) against the evaluator, the oracle.

Random integer trees are built twice from one drawn plan: with ``Binary.make``
(which folds nothing) and with the folding constructors. Both must have the
same type and, in every drawn environment, the same value; ``fold`` of the
unfolded tree too. Values stay far from 32-bit overflow (variables within
+-100, constants within +-16, at most three levels), as index arithmetic
does: the reassociations are exact there.
"""
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.ir import evaluate, var
from kdd.core.ir.expr import Binary, IntImm, Op, as_expr
from kdd.core.ir.operators import add, div, fold, fold_binary, mod, mul
from kdd.core.ir.types import s32, s64, u8

VARS = (var("a"), var("b"), var("c"), var("u", u8), var("w", s64))
OPS = (Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.MOD)

leaves = st.one_of(st.sampled_from(VARS), st.sampled_from((0, 1, -1, 2, 3, 4, 8, 16, -16, 5, 12)))
plans = st.recursive(leaves, lambda kids: st.tuples(st.sampled_from(OPS), kids, kids), max_leaves=8)
envs = st.fixed_dictionaries({v: st.integers(-100, 100) if v.type != u8 else st.integers(0, 100) for v in VARS})


def _pair(a, b):
    """Operands as the Python operators make them: an int takes the other operand's type."""
    if isinstance(a, int) and isinstance(b, int):
        a = as_expr(a)
    return (a, as_expr(b, a.type)) if not isinstance(a, int) else (as_expr(a, b.type), b)


def _raw(plan):
    """The plan as nodes, nothing folded."""
    if not isinstance(plan, tuple):
        return plan
    op, a, b = plan
    return Binary.make(op, *_pair(_raw(a), _raw(b)))


def _folded(plan):
    """The plan through the folding constructors (``add`` for ``+`` of index terms, ``-`` as it is)."""
    if not isinstance(plan, tuple):
        return plan
    op, a, b = plan
    a, b = _folded(a), _folded(b)
    if op is Op.ADD and all(isinstance(x, int) or x.type.is_signed and x.type.scalar.bits >= 32 for x in (a, b)):
        return add(a, b)  # index arithmetic: signed terms of 32 bits or more (add's precondition)
    if op in (Op.ADD, Op.SUB):
        return Binary.make(op, *_pair(a, b))
    return {Op.MUL: mul, Op.DIV: div, Op.MOD: mod}[op](a, b)


def _value(e, env):
    return evaluate(as_expr(e), env)


@settings(max_examples=300, deadline=None)
@given(plans, envs)
def test_constructors_fold_to_the_same_value(plan, env):
    raw, folded = as_expr(_raw(plan)), as_expr(_folded(plan))
    assert _value(folded, env) == _value(raw, env)
    refolded = fold(raw)
    assert refolded.type == raw.type
    assert _value(refolded, env) == _value(raw, env)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(OPS), st.sampled_from(VARS), st.sampled_from((0, 1, 2, 3, 4, -4, 16)), envs)
def test_fold_binary_keeps_type_and_value(op, x, k, env):
    imm = as_expr(k, x.type)
    for a, b in ((x, imm), (imm, x), (imm, as_expr(3, x.type))):
        e = Binary.make(op, a, b)
        folded = fold_binary(op, a, b)
        if folded is not None:
            assert folded.type == e.type
            assert evaluate(folded, env) == evaluate(e, env)


def test_trivial_cases_fold_and_others_stay():
    a, b = var("a"), var("b")
    assert mul(a, 1) is a and mul(1, a) is a and add(a, 0) is a and div(a, 1) is a
    assert mul(a, 0) == IntImm.make(s32, 0) and mod(a, 1) == IntImm.make(s32, 0)
    assert mul(mul(a, 4), 2) == Binary.make(Op.MUL, a, as_expr(8))
    assert div(mul(a, 12), 4) == Binary.make(Op.MUL, a, as_expr(3))
    assert mod(mul(a, 12), 4) == IntImm.make(s32, 0)
    assert div(mul(a, 12), 5).op is Op.DIV  # 5 does not divide 12: no fold
    assert add(a, 3, b, -5) == (a + b) - 2
    assert mul(7, 6) == IntImm.make(s32, 42) and div(-7, 2) == IntImm.make(s32, -3)  # C truncation
    assert div(a, 0).op is Op.DIV and div(7, 0) == IntImm.make(s32, 0)  # x / 0 is 0 in the IR
    w = var("w", s64)
    assert mul(w, 0).type == s64  # folding never changes a type: s64 * 0 stays a product
    # The Python operators and Binary.make fold nothing: passes' output is theirs.
    assert (a * 1).op is Op.MUL and (a + 0).op is Op.ADD


def test_fold_rebuilds_only_what_folds():
    a, b = var("a"), var("b")
    e = Binary.make(Op.ADD, Binary.make(Op.MUL, a, as_expr(1)), b)
    assert fold(e) == a + b
    kept = a * b + 3
    assert fold(kept) is kept


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(OPS), st.sampled_from(VARS), st.integers(-16, 16), st.integers(-16, 16), envs)
def test_scaled_terms_reassociate_exactly(op, x, k1, k2, env):
    """``(x * k1) op k2``, the shape the reassociations fold, folded and not."""
    inner = Binary.make(Op.MUL, x, as_expr(k1, x.type))
    raw = Binary.make(op, inner, as_expr(k2, inner.type))
    folded = fold_binary(op, inner, as_expr(k2, inner.type))
    if folded is not None:
        assert folded.type == raw.type
        assert evaluate(folded, env) == evaluate(raw, env)
    assert evaluate(fold(raw), env) == evaluate(raw, env)
