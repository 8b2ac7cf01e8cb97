"""Copies of a statement: replaced variables, fresh binders, shared untouched parts, folded constants."""
from hypothesis import given, settings
from hypothesis import strategies as st
from passes_oracle import OUT, effects, programs

from kdd.core.ir import Let, Store, seq, var, walk
from kdd.core.ir.expr import Binary, IntImm, Op
from kdd.core.ir.types import s32
from kdd.core.ir.names import Names
from kdd.core.passes.naming import Copies, bound_vars
from kdd.core.passes.tree import binder

K, X = var("k"), var("x")


def test_a_copy_folds_what_the_replacement_makes_constant_and_shares_the_rest():
    t = var("t")
    untouched = X * 3 + 1
    body = Let.make(t, (K % 2) * 32 + X, seq(Store.make(OUT, t, untouched), Store.make(OUT, K * 4, X)))
    copies = Copies(body, (K,))
    names = Names.of(body)
    copy = copies.copy({K: IntImm.make(s32, 3)}, names)
    assert copy.var.name == "t_1"  # the let's variable is renamed in the copy
    assert copy.value.is_equal(Binary.make(Op.ADD, IntImm.make(s32, 32), X))  # (3 % 2) * 32 folded
    first, second = copy.body.stmts
    assert first.value is untouched  # mentions no replaced variable: the same object
    assert second.offset.is_equal(IntImm.make(s32, 12))
    again = copies.copy({K: IntImm.make(s32, 4)}, names)
    assert again.var.name == "t_2"
    # only operations on immediates fold: 0 + x is left to the simplifier
    assert again.value.is_equal(Binary.make(Op.ADD, IntImm.make(s32, 0), X))
    # without names the binders keep their names (the first copy of an unrolled loop)
    assert copies.copy({K: K}).var is t


@settings(max_examples=200, deadline=None)
@given(programs(), st.integers(-50, 50), st.integers(-50, 50))
def test_a_copy_does_what_the_original_does_with_the_variable_replaced(p, x, y):
    names = Names.of(p)
    copy = Copies(p, (X,)).copy({X: IntImm.make(s32, x)}, names)
    assert effects(copy, env={"y": y}) == effects(p, env={"x": x, "y": y})
    old = {v.name for v in bound_vars(p)}
    new = [v.name for v in (binder(n) for n in walk(copy)) if v is not None]
    assert not old & set(new)  # every binder of the copy has a fresh name


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "a_1", "a_2", "b_1_1"]), max_size=6),
       st.lists(st.sampled_from(["a", "b", "a_1", "b_1"]), min_size=1, max_size=30))
def test_fresh_names_are_the_first_unused_in_counting_order(reserved, asked):
    names, taken = Names(reserved), set(reserved)
    for base in asked:
        # oracle: count up from the base itself against every name taken so far
        expected = next(n for n in [base] + [f"{base}_{k}" for k in range(1, 100)] if n not in taken)
        taken.add(expected)
        assert names.fresh(base).name == expected
