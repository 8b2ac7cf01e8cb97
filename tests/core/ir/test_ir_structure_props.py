"""Property tests of structural equality and printing against independent oracles.

Random expression DAGs (shared sub-expressions, immediates whose hashes
collide such as -1 and -2, signed zeros and NaNs, several integer kinds) of
up to a few hundred nodes, so both the recursive small-subtree path and the
explicit-stack path of ``is_equal`` and of the printer run. Each tree is built
twice from the same choices (a twin: equal, no object shared but the
interned small immediates), optionally with one leaf changed. The oracles
are a plain recursion over ``FIELDS`` for equality and a plain recursive
printer for the text.
"""
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.ir import (Binary, FloatImm, IntImm, Op, Seq, Store, Var, binary, const, expr_to_text, print_ir,
                         seq, var)
from kdd.core.ir.types import f32, s32, s64, u32

OPS = (Op.ADD, Op.SUB, Op.MUL, Op.MIN, Op.MAX)
# Leaves, each with the one it turns into when it is the changed leaf.
LEAVES = (
    (lambda: var("a"), lambda: var("b")),
    (lambda: var("a"), lambda: var("a", u32)),  # same name, other type
    (lambda: const(-1), lambda: const(-2)),  # hash(-1) == hash(-2) in CPython
    (lambda: const(7), lambda: const(7, s64)),
    (lambda: const(3, u32), lambda: const(4, u32)),
    (lambda: const(2 ** 40), lambda: const(2 ** 40 + 1)),
    (lambda: const(0.0, f32), lambda: const(-0.0, f32)),
    (lambda: const(float("nan"), f32), lambda: const(1.5, f32)),
)


class _Builder:
    """Builds one tree from drawn choices; the same choices build a structural twin."""

    def __init__(self, choices: list[int], changed_leaf: int | None = None):
        self.choices, self.at = choices, 0
        self.changed_leaf, self.leaves = changed_leaf, 0
        self.made: list = []  # earlier sub-expressions, picked again to share them (a DAG)

    def pick(self, n: int) -> int:
        value = self.choices[self.at % len(self.choices)]
        self.at += 1
        return value % n

    def expr(self, depth: int):
        k = self.pick(16)
        if depth == 0 or k < 3:
            make, other = LEAVES[self.pick(len(LEAVES))]
            self.leaves += 1
            return other() if self.leaves == self.changed_leaf else make()
        if k == 3 and self.made:
            return self.made[self.pick(len(self.made))]
        e = binary(OPS[self.pick(len(OPS))], self.expr(depth - 1), self.expr(depth - 1))
        self.made.append(e)
        return e

    def stmt(self):
        dst = var("dst")
        return seq(*(Store.make(dst, self.expr(4), self.expr(9)) for _ in range(1 + self.pick(3))))


def _stores(tree) -> tuple:
    return tree.stmts if isinstance(tree, Seq) else (tree,)


def oracle_equal(a, b) -> bool:
    if type(a) is not type(b):
        return False
    for name, kind in a.FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        if kind == "node":
            if not oracle_equal(x, y):
                return False
        elif kind == "opt":
            if (x is None) != (y is None) or (x is not None and not oracle_equal(x, y)):
                return False
        elif kind == "nodes":
            if len(x) != len(y) or not all(oracle_equal(p, q) for p, q in zip(x, y)):
                return False
        elif isinstance(x, float) and isinstance(y, float):
            if struct.pack("<d", x) != struct.pack("<d", y):
                return False
        elif x != y:
            return False
    return True


def oracle_text(e) -> str:
    if isinstance(e, Var):
        return e.name
    if isinstance(e, IntImm):
        text = str(e.value) + ("" if e.type == s32 else f":{e.type}")
        return f"({text})" if e.value < 0 else text
    if isinstance(e, FloatImm):
        text = repr(e.value)
        return text if any(c in text for c in ".en") else text + ".0"
    assert isinstance(e, Binary)
    if e.op in (Op.MIN, Op.MAX):
        return f"{e.op.symbol}({oracle_text(e.a)}, {oracle_text(e.b)})"
    return f"({oracle_text(e.a)} {e.op.symbol} {oracle_text(e.b)})"


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 2 ** 16), min_size=1, max_size=400), st.integers(0, 40))
def test_equality_of_twins_and_changed_twins_matches_the_oracle(choices, changed):
    tree = _Builder(choices).stmt()
    twin = _Builder(choices).stmt()
    other = _Builder(choices, changed_leaf=changed).stmt()
    assert tree.is_equal(twin) and tree == twin and hash(tree) == hash(twin)
    expected = oracle_equal(tree, other)
    assert tree.is_equal(other) is expected and other.is_equal(tree) is expected
    assert (tree == other) is expected
    for a, b in zip(_stores(tree), _stores(other)):  # expressions alone: the recursive path at the root
        assert a.value.is_equal(b.value) is oracle_equal(a.value, b.value)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 2 ** 16), min_size=1, max_size=400))
def test_printed_text_matches_the_oracle(choices):
    tree = _Builder(choices).stmt()
    stores = _stores(tree)
    expected = [f"dst.{s.value.type}[{oracle_text(s.offset)}] = {oracle_text(s.value)}" for s in stores]
    assert list(print_ir(tree).lines) == expected
    assert [expr_to_text(s.value) for s in stores] == [oracle_text(s.value) for s in stores]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 2 ** 16), min_size=1, max_size=400), st.lists(st.booleans(), max_size=4))
def test_a_sequence_rebuilt_over_new_statements_matches_the_generic_rebuild(choices, replace):
    """``Seq.with_children`` (generated for a class whose one child field is a tuple) against
    ``Node.with_children`` (field by field): the same object when every child is the same, else an
    equal sequence (nested sequences flattened as ``Seq.make`` does)."""
    from kdd.core.ir.node import Node

    tree = seq(_Builder(choices).stmt(), _Builder(choices[::-1]).stmt())
    if not isinstance(tree, Seq):
        return
    kids = list(tree.stmts)
    for i, swap in enumerate(replace[: len(kids)]):
        if swap:
            kids[i] = _Builder(choices[i:] or choices).stmt()
    fast, generic = tree.with_children(kids), Node.with_children(tree, kids)
    assert (fast is tree) == (generic is tree) == all(a is b for a, b in zip(kids, tree.stmts))
    assert oracle_equal(fast, generic)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 2 ** 16), min_size=1, max_size=400), st.lists(st.booleans(), min_size=1, max_size=8),
       st.booleans())
def test_a_node_stored_over_children_of_the_same_types_matches_the_validating_rebuild(choices, replace, masked):
    """``with_same_typed_children`` (no validating constructor; what unrolled copies are built with) against
    ``Node.with_children`` (through ``make``) on every node of a random tree, a masked store and an ``if``
    among them: children swapped for variables of their types give the same object when none changes,
    else an equal node of the same class, type and hash."""
    from kdd.core.ir import If
    from kdd.core.ir.node import Node
    from kdd.core.ir.visitor import distinct_nodes

    body = _Builder(choices).stmt()
    first = _stores(body)[0]
    mask = first.offset.lt(const(64)) if masked else None
    tree = seq(If.make(first.value.lt(const(3)), body, Store.make(var("dst"), first.offset, first.value, mask=mask)),
               Store.make(var("dst"), first.offset, first.value, mask=mask))
    for i, node in enumerate(distinct_nodes(tree)):
        kids = list(node.children())
        if not kids:
            continue
        swapped = [var(f"v{j}", k.type) if replace[(i + j) % len(replace)] and hasattr(k, "type") else k
                   for j, k in enumerate(kids)]
        fast, checked = node.with_same_typed_children(swapped), Node.with_children(node, swapped)
        assert (fast is node) == (checked is node) == all(a is b for a, b in zip(swapped, kids))
        assert type(fast) is type(checked) and oracle_equal(fast, checked) and hash(fast) == hash(checked)
