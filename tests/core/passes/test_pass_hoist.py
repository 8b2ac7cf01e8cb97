"""Loop-invariant hoisting: invariant lets and invariant parts of sums move in front of their loop."""
from hypothesis import given, settings
from hypothesis import strategies as st
from passes_oracle import OUT, effects, programs

from kdd.core.ir import Alloc, BoolImm, For, FuncCall, Let, Load, MemKind, Store, evaluate, seq, var, walk
from kdd.core.ir.expr import Binary, Broadcast, IntImm, Op, Ramp, Ternary, Unary, wrap_int
from kdd.core.ir.funcs import Send, SendKind, SendOp
from kdd.core.ir.types import f16, s32, u64
from kdd.core.passes.hoist import _vector_ops, hoist_invariants, vector_addends
from kdd.core.passes.opcount import int_ops
from kdd.core.passes.metrics import kernel_metrics
from kdd.core.passes.registers import RegisterModel
from kdd.core.targets import get_target

I, J, K = var("i"), var("j"), var("k")
MODEL = RegisterModel(32)


def test_invariant_let_and_its_dependents_leave_the_loop_in_order():
    a, b, c = var("a"), var("b"), var("c")
    body = Let.make(a, I * 3, Let.make(b, a + J, Let.make(c, b + K, Store.make(OUT, c, b))))
    loop = For.make(K, 0, 4, body)
    out = hoist_invariants(loop)
    assert out == Let.make(a, I * 3, Let.make(b, a + J, For.make(K, 0, 4, Let.make(c, b + K, Store.make(OUT, c, b)))))


def test_invariant_terms_of_a_sum_are_computed_once_before_the_loop():
    off = K * 64 + I * 4096 + J * 512 + 3
    loop = For.make(K, 0, 8, Store.make(OUT, off, K))
    out = hoist_invariants(loop)
    assert isinstance(out, Let) and out.var.name == "k_inv"
    inner = next(n for n in walk(out) if isinstance(n, Store))
    assert sorted(v.name for v in walk(inner.offset) if isinstance(v, type(K))) == ["k", "k_inv"]
    assert kernel_metrics(out, MODEL).loop_ops < kernel_metrics(loop, MODEL).loop_ops
    env = {"i": 3, "j": -2}
    assert effects(out, env=env) == effects(loop, env=env)


def test_loads_and_values_depending_on_the_loop_stay():
    buf = var("buf", s32)
    a, b = var("a"), var("b")
    loop = For.make(K, 0, 4, Let.make(a, Load.make(s32, buf, I * 4), Let.make(b, K * I, Store.make(OUT, a, b))))
    out = hoist_invariants(loop)
    # The load's invariant offset moves out; the load and the k-dependent let stay in the loop.
    assert isinstance(out, Let) and out.value == I * 4
    assert [n.var.name for n in walk(out.body) if isinstance(n, Let)] == ["a", "b"]
    assert any(isinstance(n, Load) for n in walk(out.body.body))
    unchanged = For.make(K, 0, 4, Let.make(b, K * I, Store.make(OUT, K, b)))
    assert hoist_invariants(unchanged) is unchanged


def test_nested_loops_hoist_to_the_outermost_loop_possible():
    a = var("a")
    inner = For.make(J, 0, 3, Let.make(a, I * 8 + 1, Store.make(OUT, a + J, J)))
    nest = For.make(K, 0, 2, seq(inner, Store.make(OUT, K, K)))
    out = hoist_invariants(nest)
    assert isinstance(out, Let) and out.var.name == "a"  # moved out of both loops
    assert effects(out, env={"i": 5}) == effects(nest, env={"i": 5})


def test_nothing_leaves_a_loop_that_never_runs():
    t = var("t")
    never = For.make(J, 0, 0, Let.make(t, K * 3, Store.make(OUT, t, t)))
    nest = For.make(K, 0, 1, For.make(I, 0, 1, never))
    out = hoist_invariants(nest)
    assert kernel_metrics(out, MODEL).loop_ops == kernel_metrics(nest, MODEL).loop_ops == 0
    assert effects(out) == effects(nest)


def test_an_invariant_send_mask_is_computed_once_before_the_message_loop():
    """A padding condition of the iteration's pixel, the same for all of a loop's messages, becomes one
    variable the messages share; a mask that depends on the message stays with it."""
    src, reg = var("src", u64), var("a_g2s", u64)
    load = Send(SendOp.LOAD, SendKind.BLOCK, "global", f16, 16)
    pad = I.gt(0).land(I.lt(56))
    shared = For.make(J, 0, 4, FuncCall.make(load, [src, J * 512 + I * 64, reg, J * 32, pad]))
    out = hoist_invariants(shared)
    lets = [n for n in walk(out) if isinstance(n, Let) and n.value == pad]
    assert len(lets) == 1 and lets[0].var.name == "j_mask"
    calls = [n for n in walk(out) if isinstance(n, FuncCall)]
    assert calls and all(c.ops.mask == lets[0].var for c in calls)
    for i in (-1, 0, 3, 56):
        assert effects(out, env={"i": i}) == effects(shared, env={"i": i})
    own = For.make(J, 0, 4, FuncCall.make(load, [src, J * 512, reg, J * 32, (I + J).lt(56)]))
    assert not [n for n in walk(hoist_invariants(own)) if isinstance(n, Let)]


def test_the_invariant_terms_of_a_send_mask_are_computed_once():
    """A message's own tail test stays with it; the pixel's padding test beside it is named once."""
    src, reg = var("src", u64), var("a_g2s", u64)
    load = Send(SendOp.LOAD, SendKind.BLOCK, "global", f16, 16)
    pad = I.gt(0).land(I.lt(56))
    loop = For.make(J, 0, 4, FuncCall.make(load, [src, J * 512, reg, J * 32, pad.land((K + J).lt(50))]))
    out = hoist_invariants(loop)
    (let,) = [n for n in walk(out) if isinstance(n, Let)]
    assert let.value == pad
    (call,) = [n for n in walk(out) if isinstance(n, FuncCall)]
    assert call.ops.mask == let.var.land((K + J).lt(50))
    for i, k in ((-1, 0), (3, 46), (3, 40), (56, 0)):
        assert effects(out, env={"i": i, "k": k}) == effects(loop, env={"i": i, "k": k})


@settings(max_examples=250, deadline=None)
@given(programs(), st.integers(-50, 50), st.integers(-50, 50))
def test_hoisted_program_has_the_same_effects(p, x, y):
    env = {"x": x, "y": y}
    out = hoist_invariants(p)
    assert effects(out, env=env) == effects(p, env=env)
    assert kernel_metrics(out, MODEL).loop_ops <= kernel_metrics(p, MODEL).loop_ops


def test_a_vector_header_adds_a_scalar_to_a_hoisted_per_lane_base():
    """A scattered header ``(ramp(base) + ic + kw*64) * 2`` in loop ``ic``: its per-lane part is computed
    once before the loop; the loop adds the scalar ``ic * 2`` (and an immediate) to it."""
    lane = var("lane")
    header = (Ramp.make(lane * 16, 1, 8) + Broadcast.make(K, 8) + Broadcast.make(J * 64, 8) + 5) * 2
    loop = For.make(K, 0, 64, Store.make(OUT, K * 32, header))
    out = hoist_invariants(loop)
    vectors = [n for n in walk(out) if isinstance(n, Let) and n.var.type.lanes == 8]
    assert len(vectors) == 1 and vectors[0].var.name.startswith("k_inv")
    (store,) = [n for n in walk(out) if isinstance(n, Store)]
    assert int_ops(store.value) < int_ops(loop.body.value)
    assert not any(isinstance(n, Ramp) for n in walk(store.value))
    for env in ({"lane": 3, "j": -2}, {"lane": 0, "j": 70000}):
        assert effects(out, env=env) == effects(loop, env=env)


def test_a_vector_is_not_hoisted_beyond_the_free_registers():
    """With a target whose registers the kernel already fills, the per-lane base stays in the loop."""
    lane = var("lane")
    header = (Ramp.make(lane * 16, 1, 8) + Broadcast.make(K, 8) + Broadcast.make(J * 64, 8)) * 2
    loop = For.make(K, 0, 64, Store.make(OUT, K * 32, header))
    target = get_target("xehpg")
    free = hoist_invariants(loop, {"target": target, "regs": 128})
    assert [n for n in walk(free) if isinstance(n, Let) and n.var.type.lanes == 8]
    full = Alloc.make(var("big", s32), (128 - target.registers.reserved) * 32, MemKind.GRF,
                      seq(Store.make(var("big", s32), 0, K), loop))
    out = hoist_invariants(full, {"target": target, "regs": 128})
    assert not [n for n in walk(out) if isinstance(n, Let) and n.var.type.lanes == 8]


_LANES = 8
_VECTOR_CODE = st.lists(st.tuples(st.integers(0, 7), st.integers(-3000, 3000), st.integers(0, 99)), min_size=1,
                        max_size=8)


def _vector_expr(code, scalars):
    """An integer vector sum over ``scalars`` as ``code`` draws it: ramps, broadcasts, ``+ - *c``,
    ``add3``, ``mad`` by a constant, negation, and a non-linear ``%`` the split must keep whole."""
    pool = [Ramp.make(scalars[0] * 4, 1, _LANES), Broadcast.make(scalars[1], _LANES)]
    for op, c, pick in code:
        a, b = pool[pick % len(pool)], pool[(pick // 7) % len(pool)]
        s = scalars[pick % len(scalars)]
        imm = IntImm.make(s32, c)
        made = (a + b, a - b, a * imm, Ternary.make(Op.ADD3, a, s, imm), Ternary.make(Op.MAD, a, b, imm),
                Unary.make(Op.NEG, a), Ramp.make(s * c + scalars[1], 2, _LANES) + a, (a % 7) + s)[op]
        pool.append(made)
    return pool[-1]


@settings(max_examples=200, deadline=None)
@given(_VECTOR_CODE, st.integers(-2 ** 31, 2 ** 31 - 1), st.integers(-100, 100))
def test_vector_addends_sum_to_the_vector(code, i, k):
    e = _vector_expr(code, [I, K, J])
    terms, const = vector_addends(e)
    env = {"i": i, "k": k, "j": 7}
    lanes = lambda v: v if isinstance(v, tuple) else (v,) * _LANES  # noqa: E731
    total = [const] * _LANES
    for t, c in terms.items():
        total = [x + c * y for x, y in zip(total, lanes(evaluate(t, env)))]
    assert tuple(wrap_int(x, s32) for x in total) == lanes(evaluate(e, env))


@settings(max_examples=150, deadline=None)
@given(_VECTOR_CODE, st.integers(-50, 50), st.integers(-50, 50))
def test_hoisting_vector_sums_keeps_the_effects(code, i, j):
    e = _vector_expr(code, [I, K, J])
    loop = For.make(K, 0, 16, Store.make(OUT, K * 64, e))
    out = hoist_invariants(loop)
    env = {"i": i, "j": j}
    assert effects(out, env=env) == effects(loop, env=env)
    assert kernel_metrics(out, MODEL).loop_ops <= kernel_metrics(loop, MODEL).loop_ops


def test_a_mask_reads_the_hoisted_let_of_its_conjuncts_and_a_negated_variable_stays():
    """An unrolled copy's load mask ``(m && a) && b`` and its SLM store's let ``s = m && (a && b)`` are one
    value: the load reads ``s`` (one flag for both), no new variable; the store of zeros' ``!s`` is the
    flag negated, nothing to name before the loop."""
    src, reg, slm = var("src", u64), var("a_g2s", u64), var("a_slm", u64)
    load = Send(SendOp.LOAD, SendKind.BLOCK, "global", f16, 16)
    store = Send(SendOp.STORE, SendKind.BLOCK, "slm", f16, 16)
    m, a, b, st_mask = I.gt(0), I.lt(56), (I + 2).lt(56), var("s", BoolImm.make(True).type)
    body = Let.make(st_mask, m.land(a.land(b)), seq(
        FuncCall.make(load, [src, K * 512, reg, 0, m.land(a).land(b)]),
        FuncCall.make(store, [slm, 0, reg, 0, st_mask]),
        FuncCall.make(store, [slm, 0, reg, 0, st_mask.lnot()])))
    loop = For.make(K, 0, 4, body)
    out = hoist_invariants(loop)
    assert [n.var.name for n in walk(out) if isinstance(n, Let)] == ["s"]
    masks = [c.ops.mask for c in walk(out) if isinstance(c, FuncCall)]
    assert masks == [st_mask, st_mask, st_mask.lnot()]
    for i in (-1, 0, 53, 54, 56):
        assert effects(out, env={"i": i}) == effects(loop, env={"i": i})


def test_the_invariant_lanes_of_a_scattered_mask_are_computed_once():
    """A scattered load's mask: the lanes' column padding test is loop-invariant (named once, a vector),
    the row test of the iteration stays in the loop beside it."""
    src, reg = var("src", u64), var("a_g2s", u64)
    load = Send(SendOp.LOAD, SendKind.SCATTERED, "global", s32, 8)
    col = Ramp.make(I, 1, 8) - 1
    row = K + J - 1
    mask = row.ge(0).land(row.lt(6)).land(col.ge(0).land(col.lt(6)))
    loop = For.make(K, 0, 4, FuncCall.make(load, [src, Ramp.make(K * 64, 4, 8), reg, 0, mask]))
    out = hoist_invariants(loop)
    (let,) = [n for n in walk(out) if isinstance(n, Let) and n.var.type.is_bool]
    assert let.var.type.lanes == 8 and let.value == col.ge(0).land(col.lt(6))
    (call,) = [n for n in walk(out) if isinstance(n, FuncCall)]
    assert let.var in list(walk(call.ops.mask)) and not any(isinstance(n, Ramp) for n in walk(call.ops.mask))
    for i, j in ((-3, 0), (0, 2), (4, 5), (9, -1)):
        assert effects(out, env={"i": i, "j": j}) == effects(loop, env={"i": i, "j": j})


def test_invariant_terms_of_a_row_test_let_join_the_lanes_of_the_mask_that_reads_it():
    """``lanes && row`` with ``row = m && (r >= 0 && r < 6)`` a let that only the mask reads (as ``cse``
    names a scalar row test inside a vector message's mask): ``lanes && m`` is one hoisted vector, the
    let goes, and the row's range tests stay one term."""
    src, reg = var("src", u64), var("a_g2s", u64)
    load = Send(SendOp.LOAD, SendKind.SCATTERED, "global", s32, 8)
    lanes = (Ramp.make(I, 1, 8) - 1).ge(0)
    r, row_var = K + J - 1, var("row", BoolImm.make(True).type)
    row = var("m", BoolImm.make(True).type).land(r.ge(0).land(r.lt(6)))
    body = Let.make(row_var, row, FuncCall.make(load, [src, Ramp.make(K * 64, 4, 8), reg, 0, lanes.land(row_var)]))
    loop = For.make(K, 0, 4, body)
    out = hoist_invariants(loop)
    (let,) = [n for n in walk(out) if isinstance(n, Let) and n.var.type.is_bool]
    assert let.var.type.lanes == 8 and let.value == lanes.land(var("m", BoolImm.make(True).type))
    (call,) = [n for n in walk(out) if isinstance(n, FuncCall)]
    assert call.ops.mask == let.var.land(r.ge(0).land(r.lt(6)))
    for i, j, m in ((-3, 0, 1), (0, 2, 0), (4, 5, 1), (9, -1, 1)):
        env = {"i": i, "j": j, "m": m}
        assert effects(out, env=env) == effects(loop, env=env)


def test_a_row_test_let_read_twice_stays():
    """Read by two masks, the row test's let is not seen through (that would compute it twice)."""
    src, reg = var("src", u64), var("a_g2s", u64)
    load = Send(SendOp.LOAD, SendKind.SCATTERED, "global", s32, 8)
    lanes = (Ramp.make(I, 1, 8) - 1).ge(0)
    row_var, r = var("row", BoolImm.make(True).type), K + J - 1
    row = var("m", BoolImm.make(True).type).land(r.ge(0))
    call = FuncCall.make(load, [src, Ramp.make(K * 64, 4, 8), reg, 0, lanes.land(row_var)])
    again = FuncCall.make(load, [src, Ramp.make(K * 64 + 32, 4, 8), reg, 32, lanes.land(row_var)])
    loop = For.make(K, 0, 4, Let.make(row_var, row, seq(call, again)))
    out = hoist_invariants(loop)
    assert any(isinstance(n, Let) and n.var == row_var for n in walk(out))


def _header_loop(first_offset):
    """A loop of two SLM block loads addressed through one header register, as send lowering leaves
    them: the first load's address is ``first_offset``, the second's depends on the loop variable."""
    slm, reg, hdr = var("a_slm", u64), var("a", u64), var("a_slm_hdr", u64)
    load = Send(SendOp.LOAD, SendKind.BLOCK, "slm", f16, 16)
    attrs = (("addr", "header"),)

    def send(value):
        return seq(Store.make(hdr, 0, value),
                   FuncCall.make(load, [slm, Load.make(s32, hdr, 0), reg, 0, BoolImm.make(True)], attrs=attrs))
    loop = For.make(K, 0, 4, seq(send(first_offset), send(K * 64)))
    return Alloc.make(hdr, 32, MemKind.GRF, loop)


def test_an_invariant_header_is_written_once_before_the_loop_into_its_own_register():
    kernel = _header_loop(I * 4 + 256)
    out = hoist_invariants(kernel)
    (lifted,) = [n for n in walk(out) if isinstance(n, Alloc) and n.buf.name != "a_slm_hdr"]
    loop = next(n for n in walk(out) if isinstance(n, For))
    assert not any(isinstance(n, Store) and n.buf == lifted.buf for n in walk(loop))
    offsets = [n.ops.mem_offset.buf.name for n in walk(loop) if isinstance(n, FuncCall)]
    assert offsets == [lifted.buf.name, "a_slm_hdr"]
    stores = [n for n in walk(loop) if isinstance(n, Store)]
    assert len(stores) == 1 and stores[0].value == K * 64
    for i in (0, 5):
        assert effects(out, env={"i": i}) == effects(kernel, env={"i": i})


def test_a_header_is_not_lifted_beyond_the_free_registers_and_an_unread_header_goes():
    target = get_target("xehpg")
    fill = (128 - target.registers.reserved) * 32
    big = var("big", s32)
    kernel = Alloc.make(big, fill, MemKind.GRF, seq(Store.make(big, 0, K), _header_loop(I * 4 + 256)))
    out = hoist_invariants(kernel, {"target": target, "regs": 128})
    assert sum(isinstance(n, Store) for n in walk(next(n for n in walk(out) if isinstance(n, For)))) == 2
    # Both loads with invariant headers: each gets its own, and the shared one nobody reads goes.
    both = Alloc.make(var("a_slm_hdr", u64), 32, MemKind.GRF, For.make(K, 0, 4, seq(
        *_header_loop(I * 4).body.body.stmts[:2], *_header_loop(I * 8).body.body.stmts[:2])))
    lifted = hoist_invariants(both)
    assert "a_slm_hdr" not in {n.buf.name for n in walk(lifted) if isinstance(n, Alloc)}
    assert effects(lifted, env={"i": 3}) == effects(both, env={"i": 3})


def _header_reads():
    slm, reg, hdr = var("a_slm", u64), var("a", u64), var("a_slm_hdr", u64)
    load = Send(SendOp.LOAD, SendKind.BLOCK, "slm", f16, 16)
    attrs = (("addr", "header"),)
    read = FuncCall.make(load, [slm, Load.make(s32, hdr, 0), reg, 0, BoolImm.make(True)], attrs=attrs)
    return hdr, read


def test_a_header_another_send_reads_without_its_own_store_stays():
    """Two loads through one header written once, another statement between them: lifting the store
    for the first would leave the second reading a header nobody writes, so neither moves."""
    hdr, read = _header_reads()
    other = Store.make(OUT, K * 4, K)
    kernel = Alloc.make(hdr, 32, MemKind.GRF, For.make(K, 0, 4, seq(Store.make(hdr, 0, I * 4), read, other, read)))
    out = hoist_invariants(kernel)
    assert [n.buf.name for n in walk(out) if isinstance(n, Alloc)] == ["a_slm_hdr"]
    assert effects(out, env={"i": 3}) == effects(kernel, env={"i": 3})


def test_sends_right_after_one_another_share_a_lifted_header():
    """Two sends one after the other through one header (send lowering shares it between sends of one
    address, an SLM store and its store of zeros): the header moves out and both read it."""
    hdr, read = _header_reads()
    kernel = Alloc.make(hdr, 32, MemKind.GRF, For.make(K, 0, 4, seq(Store.make(hdr, 0, I * 4), read, read)))
    out = hoist_invariants(kernel)
    assert [n.buf.name for n in walk(out) if isinstance(n, Alloc)] == ["a_slm_hdr_1"]
    loop = next(n for n in walk(out) if isinstance(n, For))
    assert not [n for n in walk(loop.body) if isinstance(n, Store)]
    assert effects(out, env={"i": 3}) == effects(kernel, env={"i": 3})


def test_the_scalar_part_of_a_message_loop_header_is_one_sum_before_it():
    """A vector header whose lanes vary with its message loop and whose scalars do not: the scalars
    and the constant become one scalar sum before the message loop (which the loop around it can
    carry across iterations), the lanes stay; the result stays a vector."""
    lanes = Ramp.make(J * 8, 1, 8) / IntImm.make(s32, 16)
    header = (lanes * 64 + Broadcast.make(K * 16, 8) + Broadcast.make(I * 3584, 8) - 7) * 2
    kernel = For.make(K, 0, 4, For.make(J, 0, 8, Store.make(OUT, J * 32, header)))
    out = hoist_invariants(kernel)
    inner = next(n for n in walk(out) if isinstance(n, For) and n.var == J)
    outer = next(n for n in walk(out) if isinstance(n, For) and n.var == K)
    (scalar,) = [n for n in walk(outer.body) if isinstance(n, Let) and n.var in set(walk(inner.body.value))]
    assert scalar.var.type == s32 and inner.body.value.type.lanes == 8
    assert int_ops(inner.body.value) == 4  # the lanes' ramp base, division and scale, plus the scalar
    assert effects(out, env={"i": 3}) == effects(kernel, env={"i": 3})


def test_a_header_over_a_lane_vector_its_mask_shares_hoists_that_vectors_invariant_lanes():
    """``row = rows + kh - 1`` (a let the padding mask reads too) in a header
    ``k*2 + cols*256 + row*7168 + 5``: the header is seen through the let, the per-lane ``rows * 7168``
    joins the hoisted ``cols * 256`` and ``kh * 7168`` the scalar part (which strength reduction
    carries), so the loop adds one scalar sum to one hoisted vector; the mask keeps the let."""
    rows, cols = Ramp.make(I, 1, 8), var("cols", s32.with_lanes(8))
    row, kh = var("row", s32.with_lanes(8)), var("kh")
    header = Broadcast.make(K * 2, 8) + cols * 256 + row * 7168 + 5
    body = Let.make(kh, (K / IntImm.make(s32, 3)) % IntImm.make(s32, 3),
                    Let.make(row, rows + Broadcast.make(kh, 8) - 1,
                             seq(Store.make(OUT, K * 64, header), Store.make(OUT, K * 64 + 32, Unary.make(Op.NEG, row)))))
    kernel = Let.make(cols, Ramp.make(J, 1, 8), For.make(K, 0, 18, body))
    out = hoist_invariants(kernel)
    loop = next(n for n in walk(out) if isinstance(n, For))
    stores = [n for n in walk(loop.body) if isinstance(n, Store)]
    assert row not in set(walk(stores[0].value)) and row in set(walk(stores[1].value))
    def vector_ops(e):
        return len({id(n) for n in walk(e) if n.type.lanes == 8 and int_ops(n)})

    # hoisted lanes + the scalar sum, + the immediate (which add3 takes along): was 6 vector operations
    assert vector_ops(stores[0].value) == 2 < vector_ops(header) == 6
    for env in ({"i": 3, "j": -2}, {"i": 0, "j": 70000}):
        assert effects(out, env=env) == effects(kernel, env=env)


def test_a_header_over_two_lane_vectors_is_seen_through_both_at_the_cost_of_scalar_products():
    """``row = rows + kh - 1`` and ``col = cols + kw - 1`` (lets the mask reads too, a tile whose lanes
    span rows and columns) in ``k*2 + col*128 + row*7168 + base``: seen through both lets, the per-lane
    parts join the hoisted base and ``kh*7168 + kw*128`` the scalar sum. That adds scalar products
    (strength reduction carries them) but leaves one vector add (and an immediate) instead of two products and three adds."""
    rows, cols, base = Ramp.make(I, 1, 8), Ramp.make(J, 2, 8), var("base", s32.with_lanes(8))
    row, col, kh, kw = var("row", s32.with_lanes(8)), var("col", s32.with_lanes(8)), var("kh"), var("kw")
    header = Broadcast.make(K * 2, 8) + col * 128 + row * 7168 + base
    uses = Store.make(OUT, K * 64 + 32, Unary.make(Op.NEG, row) + col)
    body = Let.make(kh, (K / IntImm.make(s32, 3)) % IntImm.make(s32, 3), Let.make(
        kw, K % IntImm.make(s32, 3), Let.make(row, rows + Broadcast.make(kh, 8) - 1, Let.make(
            col, cols + Broadcast.make(kw, 8) - 1, seq(Store.make(OUT, K * 64, header), uses)))))
    kernel = Let.make(base, Ramp.make(J * 5, 3, 8), For.make(K, 0, 18, body))
    out = hoist_invariants(kernel)
    loop = next(n for n in walk(out) if isinstance(n, For))
    stores = [n for n in walk(loop.body) if isinstance(n, Store)]
    walked = set(walk(stores[0].value))
    assert row not in walked and col not in walked

    def vector_ops(e):
        return len({id(n) for n in walk(e) if n.type.lanes == 8 and int_ops(n)})
    # hoisted lanes + the scalar sum, + the immediate (which add3 takes along)
    assert vector_ops(stores[0].value) == 2 < vector_ops(header)
    for env in ({"i": 3, "j": -2}, {"i": 0, "j": 70000}):
        assert effects(out, env=env) == effects(kernel, env=env)


def _vector_exprs():
    """Integer vector expressions over scalar and vector leaves, subtrees shared between operands."""
    scalars = st.sampled_from((I, J, K, IntImm.make(s32, 3)))
    leaves = st.one_of(scalars.map(lambda s: Broadcast.make(s, 8)), scalars.map(lambda s: Ramp.make(s, 2, 8)),
                       st.just(var("lanes", s32.with_lanes(8))))
    ops = st.sampled_from((Op.ADD, Op.SUB, Op.MUL))
    return st.recursive(leaves, lambda kids: st.one_of(
        st.builds(Binary.make, ops, kids, kids),
        kids.map(lambda e: Binary.make(Op.ADD, e, e))), max_leaves=8)  # a subtree shared by both operands


@settings(max_examples=200, deadline=None)
@given(st.lists(_vector_exprs(), min_size=1, max_size=4))
def test_operation_counts_shared_between_calls_and_vector_counts_match_the_per_node_definition(es):
    """``int_ops`` with one count table over expressions that share subtrees gives each one's own count;
    ``_vector_ops`` (the vector nodes that are an operation) equals its definition, per distinct vector node
    its operations minus its operands'."""
    shared: dict = {}
    assert [int_ops(e, shared) for e in es] == [int_ops(e) for e in es]
    for e in es:
        oracle = sum(int_ops(n) - sum(int_ops(k) for k in n.children())
                     for n in {id(n): n for n in walk(e)}.values() if n.type.lanes > 1)
        assert _vector_ops(e) == oracle
