"""Let optimization: trivial lets inlined, redundant lets merged, unused lets dropped (in cascade)."""
from hypothesis import given, settings
from hypothesis import strategies as st
from passes_oracle import OUT, effects, programs

from kdd.core.ir import Alloc, Let, Load, MemKind, Store, count_nodes, seq, var, walk
from kdd.core.ir.expr import Broadcast
from kdd.core.ir.types import s32, u64
from kdd.core.passes.let_opt import (inline_lets, merge_register_copies, optimize_lets, remove_unread_registers,
                                     remove_unused_lets)

X, Y = var("x"), var("y")


def lets(s):
    return [n.var.name for n in walk(s) if isinstance(n, Let)]


def test_trivial_lets_are_substituted():
    a, b = var("a"), var("b")
    s = Let.make(a, X, Let.make(b, 4, Store.make(OUT, a + b, a * b)))
    assert optimize_lets(s) == Store.make(OUT, X + 4, X * 4)


def test_redundant_let_reuses_the_variable_in_scope():
    a, b = var("a"), var("b")
    s = Let.make(a, X * 8 + Y, seq(Store.make(OUT, a, X), Let.make(b, X * 8 + Y, Store.make(OUT, b, Y))))
    out = optimize_lets(s)
    assert lets(out) == ["a"]
    assert out == Let.make(a, X * 8 + Y, seq(Store.make(OUT, a, X), Store.make(OUT, a, Y)))


def test_lets_reading_memory_are_not_merged():
    buf = var("buf", s32)
    a, b = var("a"), var("b")
    s = Let.make(a, Load.make(s32, buf, 0), seq(Store.make(buf, 0, a + 1),
                                               Let.make(b, Load.make(s32, buf, 0), Store.make(OUT, b, a))))
    assert sorted(lets(optimize_lets(s))) == ["a", "b"]


def test_a_merge_is_only_valid_inside_the_first_lets_scope():
    a, b = var("a"), var("b")
    s = seq(Let.make(a, X * 3, Store.make(OUT, a, X)), Let.make(b, X * 3, Store.make(OUT, b, Y)))
    assert sorted(lets(optimize_lets(s))) == ["a", "b"]


def test_unused_lets_go_in_cascade_and_used_ones_stay():
    a, b, c = var("a"), var("b"), var("c")
    # c is unused; once it goes, b (only read by c) is unused too; a feeds the store.
    s = Let.make(a, X + 1, Let.make(b, a * 2, Let.make(c, b + 3, Store.make(OUT, 0, a))))
    out = remove_unused_lets(s)
    assert out == Let.make(a, X + 1, Store.make(OUT, 0, a))
    assert remove_unused_lets(out) is out
    assert inline_lets(out) is out and optimize_lets(out) is out


def test_registers_only_stores_write_go_with_those_stores_and_their_lets():
    # A message header whose send the simplifier dropped: the header's register, its store and the let
    # only the store read go; a register something reads stays.
    hdr, kept, a, b = var("hdr", u64), var("kept", u64), var("a"), var("b")
    s = Alloc.make(kept, 32, MemKind.GRF, Let.make(a, X + 1, Let.make(b, X * 2, seq(
        Alloc.make(hdr, 32, MemKind.GRF, Store.make(hdr, 0, b)),
        Store.make(kept, 0, a), Store.make(OUT, 0, Load.make(s32, kept, 0))))))
    out = remove_unread_registers(s)
    assert out == Alloc.make(kept, 32, MemKind.GRF, Let.make(a, X + 1, seq(
        Store.make(kept, 0, a), Store.make(OUT, 0, Load.make(s32, kept, 0)))))
    assert remove_unread_registers(out) is out


def test_deep_let_chain_is_handled_without_recursion():
    depth = 20_000
    vs = [var(f"v{i}") for i in range(depth)]
    body = Store.make(OUT, 0, vs[-1])
    for i in reversed(range(depth)):
        body = Let.make(vs[i], vs[i - 1] * 2 if i else X, body)
    out = optimize_lets(body)  # v0 = x is trivial: inlined; every other let is used once and stays
    assert isinstance(out, Let) and out.var.name == "v1" and out.value == X * 2
    assert len(lets(out)) == depth - 1
    assert count_nodes(out) == count_nodes(body) - 3


@settings(max_examples=250, deadline=None)
@given(programs(), st.integers(-50, 50), st.integers(-50, 50))
def test_optimized_program_has_the_same_effects(p, x, y):
    env = {"x": x, "y": y}
    assert effects(optimize_lets(p), env=env) == effects(p, env=env)


def test_read_names_are_the_statements_own_reads():
    from kdd.core.ir import For
    from kdd.core.passes.tree import expr_vars, own_exprs, read_names

    buf, a, i = var("buf", s32), var("a"), var("i")
    shared = X * 8 + Y  # one object read twice: walked once
    body = Store.make(OUT, Load.make(s32, buf, a) + shared, shared * i)
    let = Let.make(a, shared + 1, body)
    loop = For.make(i, 0, Y + 2, let)
    assert read_names(body) == {"buf", "a", "x", "y", "i", OUT.name}
    assert read_names(let) == {"x", "y"}  # its value; neither its variable nor its body's reads
    assert read_names(loop) == {"y"}      # its bounds
    for s in (body, let, loop):  # the names of the variables the expressions hold, as expr_vars finds them
        assert read_names(s) == {v.name for e in own_exprs(s) for v in expr_vars(e)}


def _unrolled_copies(between):
    """Two copies of a loop step in one sequence, each reading the loop-carried register ``k_reg`` again
    and testing it: ``between`` runs after the first copy."""
    reg = var("k_reg", s32)
    k1, k2, t1, t2 = var("k1"), var("k2"), var("t1"), var("t2")
    first = Let.make(k1, Load.make(s32, reg, 0), Let.make(t1, k1 + Y, Store.make(OUT, t1, X)))
    second = Let.make(k2, Load.make(s32, reg, 0), Let.make(t2, k2 + Y, Store.make(OUT, t2 + 4, X)))
    body = seq(Store.make(reg, 0, X * 2), first, *between(reg), second)
    return Alloc.make(reg, 32, MemKind.GRF, body)


def test_copies_of_a_register_no_store_changed_are_one_value():
    """The second copy reads the register and sums it again: with no store between, it reads the first
    copy's lets (their scope extended over the sequence), and so do the values made of them."""
    s = _unrolled_copies(lambda reg: [Store.make(OUT, X + 1, Y)])
    out = merge_register_copies(s)
    assert sorted(lets(out)) == ["k1", "t1"]
    for x, y in ((3, 5), (0, 7)):
        assert effects(out, env={"x": x, "y": y}) == effects(s, env={"x": x, "y": y})


def test_a_store_into_the_register_between_keeps_both_copies():
    s = _unrolled_copies(lambda reg: [Store.make(reg, 0, X + 1)])
    assert merge_register_copies(s) is s
    vector = var("v", s32.with_lanes(8))    # vectors are not held from one copy to the next
    s = Let.make(vector, Broadcast.make(X, 8), seq(Store.make(OUT, 0, Y),
                                                    Let.make(var("w", s32.with_lanes(8)), Broadcast.make(X, 8),
                                                             Store.make(OUT, 1, Y))))
    assert merge_register_copies(s) is s


def test_a_sequence_of_more_lets_than_the_stack_nests_is_left_as_it_is():
    # xehpg bwd_d mb1 ic4ih1080iw1920oc36 (oneDNN's line 219) unrolls thousands of lets into one sequence:
    # extending each one's scope over the rest would nest them past Python's stack (a RecursionError).
    reg = var("k_reg", s32)
    copies = [Let.make(var(f"k{i}"), Load.make(s32, reg, 0), Store.make(OUT, var(f"k{i}") + i, X))
              for i in range(3000)]
    s = Alloc.make(reg, 32, MemKind.GRF, seq(Store.make(reg, 0, X * 2), *copies))
    assert merge_register_copies(s) is s


@settings(max_examples=150, deadline=None)
@given(programs())
def test_statement_reads_of_a_whole_tree_are_each_statements_read_names(p):
    """``StatementReads`` (one table of expression names for all the statements of a tree, as the interval
    sweep and the unused-let count ask) gives each statement its ``read_names``, in any order of asking."""
    from kdd.core.ir.visitor import statements
    from kdd.core.passes.tree import StatementReads, read_names

    stmts = statements(p)
    reads = StatementReads()
    for s in stmts + stmts[::-1]:  # asked again: from the table
        assert reads(s) == read_names(s)
