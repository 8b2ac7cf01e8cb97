"""Statement-level simplification: scopes, control flow, let propagation."""
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.ir import (Alloc, For, Group, If, Let, Load, MemKind, Op, Seq, Store,
                         binary, const, empty, evaluate, max_, min_, seq, to_text, var)
from kdd.core.ir import Broadcast, FuncCall
from kdd.core.ir.funcs import Send, SendKind, SendOp
from kdd.core.ir.simplify import simplify
from kdd.core.ir.types import f16, u64

buf = var("buf", u64)
i, j, n, t, x, y = var("i"), var("j"), var("n"), var("t"), var("x"), var("y")


def store(offset, value=1.0):
    return Store.make(buf, offset, const(value) if isinstance(value, float) else value)


def lines(s, ranges=None) -> list[str]:
    out = simplify(s, ranges)
    return [] if out == empty() else to_text(out).splitlines()


# -- if -----------------------------------------------------------------------------------------

def test_decided_ifs_keep_only_their_branch():
    assert lines(If.make(const(True), store(x))) == ["buf.f32[x] = 1.0"]
    assert lines(If.make(const(False), store(x), store(y))) == ["buf.f32[y] = 1.0"]
    assert lines(seq(store(0), If.make(const(False), store(x)))) == ["buf.f32[0] = 1.0"]


def test_if_facts_reach_the_branches():
    s = For.make(i, 0, 32, If.make(i.lt(16), store(i % 16), store(i - 16 + (i // 16) * 0 + i % 16)))
    assert lines(s) == [
        "for (i.s32 = 0; i < 32; i++) {",
        "  if ((i < 16)) {",
        "    buf.f32[i] = 1.0",
        "  } else {",
        "    buf.f32[((i * 2) - 32)] = 1.0",
        "  }",
        "}",
    ]


def test_if_conditions_decided_by_outer_facts_and_contradictions():
    inner = If.make(x.lt(10), store(x))
    assert lines(If.make(x.lt(5), inner)) == ["if ((x < 5)) {", "  buf.f32[x] = 1.0", "}"]
    dead = If.make(x.gt(7), store(x), store(y))
    assert lines(If.make(x.lt(5).land(y.eq(3)), dead)) == [
        "if (((x < 5) && (y == 3))) {", "  buf.f32[3] = 1.0", "}"]


def test_empty_then_branch_swaps_under_negation():
    s = If.make(x.lt(y), empty(), store(x))
    assert lines(s) == ["if ((x >= y)) {", "  buf.f32[x] = 1.0", "}"]
    assert lines(If.make(x.lt(y), empty())) == []


# -- for ----------------------------------------------------------------------------------------

def test_zero_trip_and_empty_loops_are_removed():
    assert lines(For.make(i, 4, 4, store(i))) == []
    assert lines(For.make(i, n, n - 1, store(i), )) == ["for (i.s32 = n; i < (n - 1); i++) {",
                                                        "  buf.f32[i] = 1.0", "}"]
    assert simplify(For.make(i, 0, 4, If.make(i.gt(10), store(i)))) == empty()


def test_loop_variable_range_and_step_alignment():
    s = For.make(i, 0, 64, store((i % 4) + i // 64 + i), step=4)
    assert lines(s) == ["for (i.s32 = 0; i < 64; i += 4) {", "  buf.f32[i] = 1.0", "}"]


def test_digits_of_a_loop_variable_stepping_by_their_radix():
    # An unrolled flattened nest: i steps by 9, so (i + 2) / 9 is i / 9, ((i + 4) / 3) % 3 is 1 and
    # (i + 7) % 9 is 7 (the kw, kh and ic digits of copies 2, 4 and 7).
    s = For.make(i, 0, 72, store((i + 2) // 9 + ((i + 4) // 3) % 3 * 100 + (i + 7) % 9 * 1000), step=9)
    assert lines(s) == ["for (i.s32 = 0; i < 72; i += 9) {", "  buf.f32[((i / 9) + 7100)] = 1.0", "}"]
    # From a negative start, or with the dividend's rest able to go negative, nothing is split.
    neg = For.make(i, -9, 72, store((i + 2) // 9), step=9)
    assert lines(neg)[1] == "  buf.f32[((i + 2) / 9)] = 1.0"


def test_loop_bound_from_outer_facts():
    s = If.make(n.lt(8).land(n.ge(0)), For.make(i, 0, n, If.make(i.lt(8), store(i))))
    assert lines(s) == [
        "if (((n < 8) && (n >= 0))) {",
        "  for (i.s32 = 0; i < n; i++) {",
        "    buf.f32[i] = 1.0",
        "  }",
        "}",
    ]


# -- let ----------------------------------------------------------------------------------------

def test_let_propagation_policy():
    # constants and plain variables are substituted
    assert lines(Let.make(t, 4, store(t + 1))) == ["buf.f32[5] = 1.0"]
    assert lines(Let.make(t, x, store(t * 2))) == ["buf.f32[(x * 2)] = 1.0"]
    # a value used once (outside loops, without loads) is substituted
    assert lines(Let.make(t, x * y, store(t + 1))) == ["buf.f32[((x * y) + 1)] = 1.0"]
    # unused lets disappear
    assert lines(Let.make(t, x * y, store(x))) == ["buf.f32[x] = 1.0"]
    # used twice, used inside a loop, or reading memory: kept
    assert lines(Let.make(t, x * y, seq(store(t), store(t + 1)))) == [
        "t.s32 = (x * y)", "buf.f32[t] = 1.0", "buf.f32[(t + 1)] = 1.0"]
    assert lines(Let.make(t, x * y, For.make(i, 0, 4, store(t + i)))) == [
        "t.s32 = (x * y)", "for (i.s32 = 0; i < 4; i++) {", "  buf.f32[(i + t)] = 1.0", "}"]
    load = Load.make(x.type, buf, y)
    assert lines(Let.make(t, load, seq(store(0, 2.0), store(t)))) == [
        "t.s32 = buf.s32[y]", "buf.f32[0] = 2.0", "buf.f32[t] = 1.0"]


def test_a_let_left_with_one_use_propagates_in_a_later_round_and_what_it_touches_is_redone():
    s = var("s")
    # t has three uses; two simplify away, so only a second round can propagate it into s,
    # and that round must redo what mentions s (whose value and facts change), not the rest
    prog = Let.make(t, x * 4, seq(store(t - t + 8), store(y * 4 + (t - t)),
                                  Let.make(s, t + 1, seq(store(s), store(s % 4 + s, const(2.0))))))
    assert lines(prog, {"x": (0, 100)}) == [
        "buf.f32[8] = 1.0",
        "buf.f32[(y * 4)] = 1.0",
        "s.s32 = ((x * 4) + 1)",
        "buf.f32[s] = 1.0",
        "buf.f32[(s + 1)] = 2.0",
    ]
    loop = For.make(i, 0, 4, Let.make(t, x * 4, seq(store(t - t), For.make(j, 0, 2, store(t + j)))))
    assert lines(loop) == [  # the one use left is in a loop: the let stays
        "for (i.s32 = 0; i < 4; i++) {",
        "  t.s32 = (x * 4)",
        "  buf.f32[0] = 1.0",
        "  for (j.s32 = 0; j < 2; j++) {",
        "    buf.f32[(j + t)] = 1.0",
        "  }",
        "}",
    ]


def test_kept_let_gives_its_variable_the_value_bounds():
    s = Let.make(t, x % 8, seq(store(t), If.make(t.lt(8), store(t + 1))))
    assert lines(s) == ["t.s32 = (x % 8)", "buf.f32[t] = 1.0", "buf.f32[(t + 1)] = 1.0"]


def test_let_whose_uses_simplify_away_is_dropped():
    s = Let.make(t, x * y, seq(store(t - t), store(t * 0 + 1)))
    assert lines(s) == ["buf.f32[0] = 1.0", "buf.f32[1] = 1.0"]


# -- stores, sequences, allocations, groups ------------------------------------------------------

def test_store_masks():
    assert lines(Store.make(buf, x, const(1.0), mask=x.lt(x + 1).lor(const(True)))) == ["buf.f32[x] = 1.0"]
    assert lines(Store.make(buf, x, const(1.0), mask=x.ne(x))) == []


def test_messages_never_enabled_go_and_the_others_stay():
    # An unrolled tile's padding rows: ``a_msg <= 0`` is false in every copy but the first.
    src, reg = var("src", u64), var("reg", u64)
    load = Send(SendOp.LOAD, SendKind.BLOCK, "global", f16, 16)
    gather = Send(SendOp.LOAD, SendKind.SCATTERED, "global", f16, 8)
    def call(func, mask):
        return FuncCall.make(func, [src, x, reg, 0, mask])
    off = Broadcast.make(x, 8)
    assert lines(seq(call(load, x.lt(x)), FuncCall.make(gather, [src, off, reg, 0, Broadcast.make(x.ne(x), 8)]))) == []
    kept = lines(seq(call(load, x.le(0)), call(load, const(True))))
    assert len(kept) == 2 and all(line.startswith("send.load.block") for line in kept)


def test_groups_stay_and_empty_allocations_go():
    tmp = var("tmp", u64)
    s = Group.make("kernel", seq(Alloc.make(tmp, 64, MemKind.GRF, For.make(i, 0, 0, store(i))), store(0)))
    assert lines(s) == ["kernel {", "  buf.f32[0] = 1.0", "}"]
    assert lines(Group.make("c_store", If.make(const(False), store(0)))) == ["c_store {", "}"]


def test_unchanged_kernel_is_the_same_object_and_simplify_is_idempotent():
    k = Group.make("kernel", For.make(i, 0, n, Let.make(t, i * x, seq(store(t), store(t + 4)))))
    assert simplify(k) is k
    messy = Group.make("kernel", For.make(i, 0, 8, seq(If.make(i.lt(8), store(i * 2 - i)),
                                                        Let.make(t, i, store(t + 0)))))
    once = simplify(messy)
    assert simplify(once) is once
    assert once != messy


def test_ranges_apply_to_free_variables_of_statements():
    s = If.make(x.lt(100), store(x // 128), store(y))
    assert lines(s) == ["if ((x < 100)) {", "  buf.f32[(x / 128)] = 1.0", "} else {", "  buf.f32[y] = 1.0", "}"]
    assert lines(s, {"x": (0, 99)}) == ["buf.f32[0] = 1.0"]


def test_sequence_of_one_statement_becomes_the_statement():
    assert simplify(Seq.make([store(x), If.make(const(False), store(y))])) == store(x)


# -- property: simplified kernels write the same memory ------------------------------------------

FREE = (var("a"), var("b"))
CMP = (Op.LT, Op.LE, Op.GT, Op.GE, Op.EQ, Op.NE)


def _expr(draw, scope, depth):
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(scope)) if draw(st.booleans()) else const(draw(st.integers(-4, 20)))
    op = draw(st.sampled_from("+-*/%mM"))
    l, r = _expr(draw, scope, depth - 1), _expr(draw, scope, depth - 1)
    return {"+": lambda: l + r, "-": lambda: l - r, "*": lambda: l * r, "/": lambda: l // r,
            "%": lambda: l % r, "m": lambda: min_(l, r), "M": lambda: max_(l, r)}[op]()


def _cond(draw, scope):
    c = binary(draw(st.sampled_from(CMP)), _expr(draw, scope, 2), _expr(draw, scope, 1))
    if draw(st.integers(0, 3)) == 0:
        other = binary(draw(st.sampled_from(CMP)), _expr(draw, scope, 1), _expr(draw, scope, 1))
        c = binary(draw(st.sampled_from((Op.AND, Op.OR))), c, other)
    return c.lnot() if draw(st.integers(0, 4)) == 0 else c


def _stmt(draw, scope, depth, names):
    kind = draw(st.integers(0, 5)) if depth else 0
    if kind <= 1:
        return Store.make(buf, _expr(draw, scope, 2), _expr(draw, scope, 3))
    if kind == 2:
        return seq(*(_stmt(draw, scope, depth - 1, names) for _ in range(draw(st.integers(1, 3)))))
    fresh = var(f"v{next(names)}")
    if kind == 3:
        return Let.make(fresh, _expr(draw, scope, 3), _stmt(draw, scope + (fresh,), depth - 1, names))
    if kind == 4:
        els = _stmt(draw, scope, depth - 1, names) if draw(st.booleans()) else None
        return If.make(_cond(draw, scope), _stmt(draw, scope, depth - 1, names), els)
    init = draw(st.integers(-2, 3))
    bound = min_(_expr(draw, scope, 2), init + draw(st.integers(0, 4)))
    return For.make(fresh, init, bound, _stmt(draw, scope + (fresh,), depth - 1, names),
                    step=draw(st.integers(1, 2)))


def run(s, env) -> dict:
    """A reference interpreter for the statements used here: the memory it writes."""
    memory: dict = {}
    work = [(s, dict(env))]
    while work:
        node, scope = work.pop()
        if isinstance(node, Seq):
            work.extend((k, scope) for k in reversed(node.stmts))
        elif isinstance(node, Let):
            work.append((node.body, {**scope, node.var.name: evaluate(node.value, scope)}))
        elif isinstance(node, If):
            branch = node.then if evaluate(node.cond, scope) else node.else_
            if branch is not None:
                work.append((branch, scope))
        elif isinstance(node, For):
            v, end = evaluate(node.init, scope), evaluate(node.bound, scope)
            iterations = []
            while v < end:
                iterations.append((node.body, {**scope, node.var.name: v}))
                v += node.step
            work.extend(reversed(iterations))
        elif isinstance(node, Store):
            memory[evaluate(node.offset, scope)] = evaluate(node.value, scope)
        else:
            raise TypeError(type(node).__name__)
    return memory


@st.composite
def kernels(draw):
    ranges = {}
    for v in FREE:
        lo = draw(st.integers(-10, 10))
        ranges[v.name] = (lo, lo + draw(st.integers(0, 20)))
    env = {name: draw(st.integers(lo, hi)) for name, (lo, hi) in ranges.items()}
    counter = iter(range(1000))
    return _stmt(draw, FREE, draw(st.integers(2, 4)), counter), ranges, env


@settings(max_examples=300, deadline=None)
@given(kernels())
def test_simplified_kernels_write_the_same_memory(case):
    k, ranges, env = case
    out = simplify(k, ranges)
    assert run(out, env) == run(k, env)
    assert simplify(out, ranges) is out


def test_bounds_and_multiples_of_an_offset_inside_an_aligned_block_read_through_it():
    # t is a multiple of 32 and u = t + 8 is kept (read three times): u < 640, t + 24 < 640 and
    # t < 640 are one condition; u * 2 is t * 2 + 16 (its constant an immediate); u read as itself
    # stays u. k = t + 64 (a whole block further) is not read through
    u, k = var("u"), var("k")
    prog = Let.make(t, x * 32 + y * 256, Let.make(u, t + 8, Let.make(k, t + 64, seq(
        Store.make(buf, u, const(1.0), mask=u.lt(640)),
        Store.make(buf, u * 2 + t * 2, const(2.0), mask=(t + 24).lt(640)),
        Store.make(buf, k * 2 + u, const(3.0), mask=(t + 33).le(640)),
        Store.make(buf, k * 4, const(4.0), mask=k.lt(640))))))
    assert lines(prog, {"x": (0, 7), "y": (0, 100)}) == [
        "t.s32 = ((x * 32) + (y * 256))",
        "u.s32 = (t + 8)",
        "k.s32 = (t + 64)",
        "buf.f32[u] = 1.0 if (t < 640)",
        "buf.f32[((t * 4) + 16)] = 2.0 if (t < 640)",
        "buf.f32[((k * 2) + u)] = 3.0 if (t < 608)",
        "buf.f32[(k * 4)] = 4.0 if (k < 640)",
    ]
    for tv in range(-256, 1024, 32):   # the same conditions on every value t takes around the bounds
        assert (tv + 8 < 640) == (tv + 24 < 640) == (tv < 640)
        assert (tv + 33 <= 640) == (tv < 608)
