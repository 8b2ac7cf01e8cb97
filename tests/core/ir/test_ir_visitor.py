"""Visitor and mutator: traversal order, identity preservation, scopes."""
from kdd.core.ir import (IRMutator, IRVisitor, Let, Load, Op, Store, const, count_nodes, free_vars,
                         seq, substitute, var, walk)
from kdd.core.ir.expr import Binary
from kdd.core.ir.types import s32
from kdd.core.ir.visitor import post_order


def test_visitor_sees_every_node_in_preorder():
    a, b = var("a"), var("b")
    e = (a + b) * a
    seen = []

    class V(IRVisitor):
        def visit_Node(self, n):
            seen.append(n)

    V().visit(e)
    assert seen == list(walk(e))
    assert len(seen) == count_nodes(e) == 5


def test_visitor_can_skip_children_and_keep_scopes():
    x, y = var("x"), var("y")
    s = Let.make(x, 1, Let.make(y, x + 1, Store.make(var("buf", s32), 0, y)))
    depth_at_store = []

    class Scopes(IRVisitor):
        depth = 0

        def visit_Let(self, n):
            self.depth += 1

        def leave_Let(self, n):
            self.depth -= 1

        def visit_Store(self, n):
            depth_at_store.append(self.depth)
            return False

    Scopes().visit(s)
    assert depth_at_store == [2]


def test_mutator_returns_same_object_when_nothing_changes():
    a, b = var("a"), var("b")
    e = seq(Store.make(var("buf", s32), a * 4, a + b))

    class NoOp(IRMutator):
        pass

    assert NoOp().mutate(e) is e


def test_mutator_rebuilds_only_the_changed_path():
    a, b, c = var("a"), var("b"), var("c")
    left, right = a + b, b * c
    e = left - right

    class MulToAdd(IRMutator):
        def mutate_Binary(self, old, new):
            return Binary.make(Op.ADD, new.a, new.b) if new.op is Op.MUL else new

    out = MulToAdd().mutate(e)
    assert out == (a + b) - (b + c)
    assert out.a is left  # untouched subtree is shared, not copied


def test_statement_and_expression_hooks_both_rewrite_under_large_expressions():
    a, buf = var("a"), var("buf", s32)
    deep = a
    for i in range(200):  # an expression larger than the mutator's small-subtree size
        deep = deep * 3 + i
    load = Load.make(s32, buf, 4)
    tree = seq(Let.make(var("x"), deep, Store.make(buf, deep, load + 1)), Store.make(buf, 8, a))

    class Restride(IRMutator):  # statements only: every expression comes back as it was
        def mutate_Store(self, old, new):
            return Store.make(new.buf, new.offset, new.value, stride=8)

    class Reload(IRMutator):  # an expression hook: loads deep inside statements are reached
        def pre_Load(self, node):
            return Load.make(s32, node.buf, node.offset + 4)

    out = Restride().mutate(tree)
    assert [s.stride for s in (out.stmts[0].body, out.stmts[1])] == [8, 8]
    assert out.stmts[0].value is deep and out.stmts[0].body.offset is deep
    out = Reload().mutate(tree)
    assert out.stmts[0].body.value.a == Load.make(s32, buf, const(4) + 4)
    assert out.stmts[0].value is deep and out.stmts[1] is tree.stmts[1]


def test_substitute_and_free_vars():
    x, y, i = var("x"), var("y"), var("i")
    s = Let.make(x, i + 1, Store.make(var("buf", s32), x, y))
    assert free_vars(s) == {i, y, var("buf", s32)}
    s2 = substitute(s, {y: i * 2})
    assert free_vars(s2) == {i, var("buf", s32)}
    assert substitute(s, {var("zz"): i}) is s


def test_post_order_yields_each_distinct_object_once_after_its_children():
    a, b = var("a"), var("b")
    shared = a + b
    e = shared * shared - a
    order = list(post_order(e))
    position = {id(n): i for i, n in enumerate(order)}
    assert len(order) == len(position)  # no object twice
    assert order[-1] is e
    for node in order:
        assert all(position[id(k)] < position[id(node)] for k in node.children())
    assert {id(n) for n in order} == {id(n) for n in walk(e)}


def test_post_order_skips_what_is_done_and_follows_the_given_children():
    a, b = var("a"), var("b")
    left = a + b
    e = left * b
    memo = {id(left): "known"}
    assert list(post_order(e, done=memo)) == [b, e]  # `left` and what is under it are not walked
    only_b = list(post_order(e, children=lambda n: [n.b] if isinstance(n, Binary) else []))
    assert only_b == [b, e]


def test_post_order_handles_a_chain_deeper_than_the_recursion_limit():
    e = var("x")
    for i in range(20000):
        e = e + i
    assert sum(1 for _ in post_order(e)) == count_nodes(e)


def test_count_nodes_counts_a_shared_subtree_at_every_occurrence():
    x, y = var("x"), var("y")
    shared = (x + 1) * y
    tree = seq(Store.make(var("out"), 0, shared + shared), Store.make(var("out"), 4, shared))
    assert count_nodes(tree) == sum(1 for _ in walk(tree))  # walk yields every occurrence
    assert count_nodes(shared) == 5
    assert count_nodes(tree) == 1 + (3 + 1 + 2 * 5) + (3 + 5)


def _nest():
    """``for i < 4: { let x = i * 2 in store buf[x] = x; for j < n: store buf[j] = i }``, ``store buf[0] = 0``."""
    from kdd.core.ir.stmt import For

    i, j, x, n, buf = var("i"), var("j"), var("x"), var("n"), var("buf", s32)
    inner = For.make(j, 0, n, Store.make(buf, j, i))
    body = seq(Let.make(x, i * 2, Store.make(buf, x, x)), inner)
    return seq(For.make(i, 0, 4, body), Store.make(buf, 0, const(0))), (i, j, x)


def test_visitor_context_gives_loops_times_and_scope():
    root, (i, j, x) = _nest()
    seen = []

    class Context(IRVisitor):
        def visit_Store(self, s):
            seen.append(([loop.var.name for loop in self.loops], self.times, self.exact,
                         sorted(v.name for v in self.scope)))

        def visit_Var(self, v):
            if v.name == "i" and self.scope.get(v) is None and self.loops:
                seen.append("i used outside its scope")

    Context().visit(root)
    assert seen == [(["i"], 4, True, ["i", "x"]),  # inside the let, in the loop of 4 trips
                    (["i", "j"], 4, False, ["i", "j"]),  # j < n: unknown trips, counted once, inexact
                    ([], 1, True, [])]  # after the loop: its scope is closed


def test_visitor_trips_hook_and_statements_only():
    root, _ = _nest()
    kinds, times = [], []

    class Twice(IRVisitor):
        statements_only = True

        def trips(self, loop):
            return 2  # every loop counted as two trips

        def visit_Node(self, n):
            kinds.append(type(n).__name__)
            times.append(self.times)

    Twice().visit(root)
    assert kinds == ["Seq", "For", "Seq", "Let", "Store", "For", "Store", "Store"]  # no expression
    assert times == [1, 1, 2, 2, 2, 2, 4, 1]


def test_statements_are_each_object_once_and_enter_prunes():
    from kdd.core.ir.stmt import For
    from kdd.core.ir.visitor import statements

    root, _ = _nest()
    shared = Store.make(var("buf", s32), 0, const(1))
    assert statements(seq(shared, shared)) == [seq(shared, shared), shared]
    names = [type(s).__name__ for s in statements(root, lambda s: not isinstance(s, For))]
    assert names == ["Seq", "For", "Store"]
