"""CSE: repeated pure expressions named once where all their uses see them, within the register budget."""
from hypothesis import given, settings
from hypothesis import strategies as st
from passes_kernels import example_kernel
from passes_oracle import OUT, effects, programs

from kdd.core.ir import Alloc, For, If, Let, Load, MemKind, Stmt, Store, seq, var, walk
from kdd.core.ir.types import s32
from kdd.core.passes.cse import _Layout, _occurrences, eliminate, eliminate_common_subexprs, plan_cse
from kdd.core.passes.kernel_pipeline import run_pipeline
from kdd.core.passes.opcount import int_ops
from kdd.core.passes.tree import own_exprs, unshare_statements

X, Y, K = var("x"), var("y"), var("k")


def lets(s):
    return [n for n in walk(s) if isinstance(n, Let)]


def test_repeated_expression_is_named_around_exactly_the_statements_using_it():
    e = X * 64 + Y
    s = seq(Store.make(OUT, X, X), Store.make(OUT, e, X), Store.make(OUT, e + 4, Y), Store.make(OUT, Y, Y))
    out = eliminate_common_subexprs(s)
    (let,) = lets(out)
    assert let.value == e
    # the first and last stores stay outside the let's scope
    assert out.stmts[0] == s.stmts[0] and out.stmts[-1] == s.stmts[-1]
    assert let.body == seq(Store.make(OUT, let.var, X), Store.make(OUT, let.var + 4, Y))
    assert effects(out, env={"x": 3, "y": 9}) == effects(s, env={"x": 3, "y": 9})


def test_a_piece_occurring_only_inside_a_named_expression_is_not_named_again():
    e = (X * 3 + Y) * 5
    s = seq(Store.make(OUT, e, X), Store.make(OUT, e, Y))
    out = eliminate_common_subexprs(s)
    assert [n.value for n in lets(out)] == [e]


def test_smaller_names_are_bound_outside_larger_ones_that_use_them():
    small = X * 3
    big = small + Y * 7
    s = seq(Store.make(OUT, big, small), Store.make(OUT, big, X), Store.make(OUT, small, Y))
    out = eliminate_common_subexprs(s)
    outer, inner = lets(out)
    assert outer.value == small and inner.value == outer.var + Y * 7
    assert effects(out, env={"x": 2, "y": 1}) == effects(s, env={"x": 2, "y": 1})


def test_names_stay_inside_the_scope_of_the_variables_they_read():
    a = var("a")
    e = a * 16 + 1
    s = seq(Store.make(OUT, X, X), Let.make(a, X + 2, If.make(X.lt(5), Store.make(OUT, e, X), Store.make(OUT, e, Y))))
    out = eliminate_common_subexprs(s)
    (outer_a, named) = lets(out)
    assert outer_a.var.name == "a" and named.value == e
    assert effects(out, env={"x": 1, "y": 0}) == effects(s, env={"x": 1, "y": 0})


def test_loads_are_never_merged():
    buf = var("buf", s32)
    ld = Load.make(s32, buf, X * 4)
    s = Alloc.make(buf, 64, MemKind.GRF, seq(Store.make(buf, 0, Y), Store.make(OUT, ld, Y), Store.make(buf, 4, X),
                                             Store.make(OUT, ld, Y)))
    out = eliminate_common_subexprs(s)
    (let,) = lets(out)
    assert let.value == X * 4  # the offset is shared, the load itself is read twice
    assert sum(isinstance(n, Load) for n in walk(out)) == 2


def test_the_register_budget_limits_what_is_named_and_the_report_says_what_was_skipped():
    # 128 GRF x 32 B, 16 reserved: 3584 bytes free minus what the kernel holds already.
    exprs = [X * (i + 2) + Y for i in range(4)]
    acc = var("acc", s32)
    body = seq(*(Store.make(OUT, e, Load.make(s32, acc, 0)) for e in exprs for _ in range(2)))
    big = Alloc.make(acc, 112 * 32 - 8, MemKind.GRF, body)  # live throughout; leaves 8 bytes: two s32 values
    report = plan_cse(big, {"target": "xehpg", "regs": 128})
    assert len(report.named) == 2
    sums = {str(e) for e in exprs}
    assert {n.expr for n in report.named} | {s.expr for s in report.skipped} >= sums
    assert len(sums & {s.expr for s in report.skipped}) == 2
    assert all("register budget: 0 bytes free" == s.reason for s in report.skipped)
    assert report.budget_bytes == 8
    out = eliminate_common_subexprs(big, {"target": "xehpg", "regs": 128})
    assert len(lets(out)) == 2
    roomy = eliminate_common_subexprs(big, {"target": "xehpg", "regs": 256})
    assert len(lets(roomy)) == 4


def test_nothing_repeated_gives_the_same_object():
    s = For.make(K, 0, 4, Store.make(OUT, K * 4, X))
    assert eliminate_common_subexprs(s) is s


@settings(max_examples=250, deadline=None)
@given(programs(), st.integers(-50, 50), st.integers(-50, 50))
def test_program_after_cse_has_the_same_effects_and_no_more_operations(p, x, y):
    env = {"x": x, "y": y}
    out = eliminate_common_subexprs(p)
    assert effects(out, env=env) == effects(p, env=env)
    assert static_ops(out) <= static_ops(p)


def static_ops(s) -> int:
    """Integer operations written in the program text."""
    return sum(int_ops(e) for n in walk(s) if isinstance(n, Stmt) for e in own_exprs(n))


def test_occurrences_count_every_use_of_shared_subtrees_like_a_walk_per_statement():
    tree = unshare_statements(run_pipeline(example_kernel("gemm_bert")).before("cse-unrolled"))
    layout = _Layout(tree)
    nodes, weight, first, last = _occurrences(layout)
    walked: dict[int, list] = {}  # id -> [occurrences, first statement, last statement]
    for pre, s in enumerate(layout.order):
        for root in own_exprs(s):
            for n in walk(root):
                seen = walked.setdefault(id(n), [0, pre, pre])
                seen[0] += 1
                seen[2] = pre
    assert len(nodes) == len(walked) and {id(n) for n in nodes} == set(walked)
    assert all([weight[k], first[k], last[k]] == v for k, v in walked.items())
    position = {id(n): i for i, n in enumerate(nodes)}
    assert all(position[id(k)] > position[id(n)] for n in nodes for k in n.children())  # parents first


def test_lets_holding_one_value_read_one_name_and_their_masks_are_named_once():
    """Two lets of different names holding an equal value (an unrolled load's lane index and its SLM
    store's) become one name with no copy left, so the masks over them are equal for the next CSE,
    which names a repeated vector mask (comparisons and ``&&`` cost instructions too)."""
    from kdd.core.ir.expr import Broadcast, Ramp
    v8 = s32.with_lanes(8)
    a, b = var("a", v8), var("b", v8)
    lane = Ramp.make(X, 1, 8) + Broadcast.make(Y, 8)
    mask = lambda t: t.ge(0).land(t.lt(56))  # noqa: E731
    s = Let.make(a, lane, seq(Store.make(OUT, 0, a), Let.make(b, lane, seq(Store.make(OUT, 32, b),
                                                                           Store.make(OUT, 64, mask(a)),
                                                                           Store.make(OUT, 96, mask(b))))))
    once, _ = eliminate(s, {}, rounds=1)
    assert [let.value for let in lets(once)] == [lane]
    rounds = eliminate_common_subexprs(s)  # rounds while a round leaves copies
    assert sorted(str(let.value.type) for let in lets(rounds)) == ["boolx8", "s32x8"]
    env = {"x": 5, "y": 30}
    assert effects(rounds, env=env) == effects(s, env=env) == effects(once, env=env)


def test_the_names_a_plan_collects_are_every_variable_of_the_kernel():
    """CSE takes the names its fresh ``cse_K`` must avoid from its own walks of the statements (every
    variable is an expression a statement evaluates or a binder's): they are ``var_names`` of the whole
    tree, at each CSE of an unrolled example's pipeline."""
    from kdd.core.ir.visitor import var_names
    from kdd.core.passes.cse import _plan
    from kdd.core.passes.options import kernel_options

    kernel = example_kernel("resnet50_3x3_tuned")
    trace = run_pipeline(kernel)
    for name in ("cse", "cse-unrolled", "cse-hoisted"):
        tree = unshare_statements(trace.before(name))
        chosen, _, _, used = _plan(tree, kernel_options(kernel))
        assert chosen and used == var_names(tree)
