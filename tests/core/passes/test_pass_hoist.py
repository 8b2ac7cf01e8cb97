"""Loop-invariant hoisting: invariant lets and invariant parts of sums move in front of their loop."""
from hypothesis import given, settings
from hypothesis import strategies as st
from passes_oracle import OUT, effects, programs

from kdd.core.ir import For, FuncCall, Let, Load, Store, seq, var, walk
from kdd.core.ir.funcs import Send, SendKind, SendOp
from kdd.core.ir.types import f16, s32, u64
from kdd.core.passes.hoist import hoist_invariants
from kdd.core.passes.metrics import kernel_metrics
from kdd.core.passes.registers import RegisterModel

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
