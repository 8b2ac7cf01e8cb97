"""Strength reduction: loop-linear address sums become induction variables held in a GRF."""
from hypothesis import given, settings
from hypothesis import strategies as st
from passes_oracle import OUT, effects, programs

from kdd.core.ir import Alloc, For, Let, Load, MemKind, Store, seq, var, walk
from kdd.core.passes.metrics import kernel_metrics
from kdd.core.passes.registers import RegisterModel
from kdd.core.passes.strength_reduce import reduce_strength
from kdd.core.passes.unroll import unroll_loops

I, K = var("i"), var("k")
MODEL = RegisterModel(32)


def test_sums_sharing_slope_and_base_share_one_induction_variable():
    base = K * 96 + I * 4
    loop = For.make(K, 1, 9, seq(Store.make(OUT, base, K), Store.make(OUT, base + 32, I), Store.make(OUT, base + 64, K)),
                    step=2)
    out = reduce_strength(loop, {"reg_bytes": 32})
    allocs = [n for n in walk(out) if isinstance(n, Alloc)]
    assert len(allocs) == 1 and allocs[0].kind is MemKind.GRF and allocs[0].buf.name == "k_iv_reg"
    (iv_let,) = [n for n in walk(out) if isinstance(n, Let)]
    assert isinstance(iv_let.value, Load)
    stores = [n for n in walk(out) if isinstance(n, Store) and n.buf.name == "k_iv_reg"]
    assert [s.value for s in stores] == [I * 4 + 96, iv_let.var + 192]  # start at k = 1, advance 96 * step
    assert kernel_metrics(out, MODEL).loop_ops < kernel_metrics(loop, MODEL).loop_ops
    for i in (0, 5, -3):
        assert effects(out, env={"i": i}) == effects(loop, env={"i": i})


def test_unprofitable_or_nonlinear_sums_and_fully_unrolled_loops_are_left_alone():
    cheap = For.make(K, 0, 4, Store.make(OUT, K + I, K))  # one add either way
    assert reduce_strength(cheap) is cheap
    nonlinear = For.make(K, 0, 4, Store.make(OUT, K * I + 8, K))
    assert reduce_strength(nonlinear) is nonlinear
    fully = For.make(K, 0, 4, Store.make(OUT, K * 64 + I * 8, K), unroll=4)
    assert reduce_strength(fully) is fully
    reduced = reduce_strength(For.make(K, 0, 4, Store.make(OUT, K * 64 + I * 8, K)))
    assert reduce_strength(reduced) is reduced


def test_an_unrolled_loop_advances_its_induction_variable_once_per_unrolled_iteration():
    loop = For.make(K, 0, 12, Store.make(OUT, K * 64 + I * 8, K), unroll=3)
    out = unroll_loops(reduce_strength(loop, {"reg_bytes": 32}))
    (main,) = [n for n in walk(out) if isinstance(n, For)]
    increments = [n for n in walk(main) if isinstance(n, Store) and n.buf.name == "k_iv_reg"]
    assert main.step == 3 and len(increments) == 1 and increments[0].value.b.value == 192
    offsets = [n.offset for n in walk(main) if isinstance(n, Store) and n.buf.name == "out"]
    assert [str(o) for o in offsets] == ["k_iv", "(k_iv + 64)", "(k_iv + 128)"]
    assert kernel_metrics(out, MODEL).loop_ops < kernel_metrics(unroll_loops(loop), MODEL).loop_ops
    assert effects(out, env={"i": 3}) == effects(loop, env={"i": 3})


@settings(max_examples=250, deadline=None)
@given(programs(), st.integers(-50, 50), st.integers(-50, 50))
def test_reduced_program_has_the_same_effects_before_and_after_unrolling(p, x, y):
    env = {"x": x, "y": y}
    reduced = reduce_strength(p, {"reg_bytes": 32})
    assert effects(reduced, env=env) == effects(p, env=env)
    assert effects(unroll_loops(reduced), env=env) == effects(p, env=env)
