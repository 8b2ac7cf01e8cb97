"""Let optimization: trivial lets inlined, redundant lets merged, unused lets dropped (in cascade)."""
from hypothesis import given, settings
from hypothesis import strategies as st
from passes_oracle import OUT, effects, programs

from kdd.core.ir import Alloc, Let, Load, MemKind, Store, count_nodes, seq, var, walk
from kdd.core.ir.types import s32, u64
from kdd.core.passes.let_opt import inline_lets, optimize_lets, remove_unread_registers, remove_unused_lets

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
