"""Strength reduction: loop-linear address sums become induction variables held in a GRF, lets
linear in the loop variable are seen through, and mixed-radix digits become wrapping counters."""
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from passes_kernels import example_kernel
from passes_oracle import OUT, effects, programs

from kdd.core.ir import Alloc, For, If, Let, Load, MemKind, Store, seq, var, walk
from kdd.core.ir.expr import Binary, IntImm, Op
from kdd.core.passes.kernel_pipeline import KERNEL_PIPELINE, run_pipeline
from kdd.core.passes.metrics import kernel_metrics, reduction_iterations
from kdd.core.passes.pipeline import Pipeline
from kdd.core.passes.options import kernel_options
from kdd.core.passes.registers import RegisterModel, estimate_registers
from kdd.core.passes.simplify_pass import simplify_kernel
from kdd.core.passes.strength_reduce import reduce_strength
from kdd.core.passes.unroll import unroll_loops

I, J, K, M = var("i"), var("j"), var("k"), var("m")
X, Y = var("x"), var("y")
MODEL = RegisterModel(32)
OPTIONS = {"reg_bytes": 32}


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


# -- lets seen through ---------------------------------------------------------------------------

def _grf_allocs(ir, part: str):
    return [n.buf.name for n in walk(ir) if isinstance(n, Alloc) and n.kind is MemKind.GRF and part in n.buf.name]


def test_lets_linear_in_the_loop_variable_are_seen_through():
    # gemm_bert's k loop: k0 = k*32; a = k0*2 + i*128; b = k0*2 + j*128, read by unrolled message loops.
    k0, a, b = var("k0"), var("a"), var("b")
    body = Let.make(k0, K * 32, Let.make(a, k0 * 2 + I * 128, Let.make(b, k0 * 2 + J * 128, seq(
        For.make(M, 0, 4, Store.make(OUT, a + M * 4, M), unroll=4),
        For.make(M, 0, 4, Store.make(OUT, b + M * 4, I), unroll=4)))))
    loop = For.make(K, 0, 8, body)
    out = reduce_strength(loop, OPTIONS)
    assert sorted(_grf_allocs(out, "_iv_reg")) == ["k_iv_reg", "k_iv_reg_1"]
    starts = sorted(str(n.value) for n in walk(out) if isinstance(n, Store) and n.buf.name.startswith("k_iv_reg")
                    and "k_iv" not in str(n.value))  # the increments read the induction variable
    assert starts == ["(i * 128)", "(j * 128)"]
    assert all(not (isinstance(n, Let) and n.var.name == "k0") for n in walk(out))  # nothing reads k0 now
    assert kernel_metrics(out, MODEL).loop_ops < kernel_metrics(loop, MODEL).loop_ops
    for env in ({"i": 1, "j": 2}, {"i": -7, "j": 40}):
        assert effects(out, env=env) == effects(loop, env=env)
        assert effects(unroll_loops(out), env=env) == effects(loop, env=env)


def test_induction_variables_start_at_the_constant_most_uses_add():
    base = K * 64 + I * 4
    loop = For.make(K, 0, 6, seq(*(Store.make(OUT, base + 16, K) for _ in range(3)), Store.make(OUT, base + 48, I)))
    out = reduce_strength(loop, OPTIONS)
    (start,) = [n.value for n in walk(out) if isinstance(n, Store) and n.buf.name == "k_iv_reg"
                and "k_iv" not in str(n.value)]
    assert str(start) == "((i * 4) + 16)"
    offsets = sorted(str(n.offset) for n in walk(out) if isinstance(n, Store) and n.buf.name == "out")
    assert offsets == ["(k_iv + 32)", "k_iv", "k_iv", "k_iv"]
    assert effects(out, env={"i": 9}) == effects(loop, env={"i": 9})


def test_induction_variables_take_only_the_free_registers():
    # 12 induction variables would each save a multiply; the config's registers less the target's
    # reserve (16 on xehpg) and what the loop already holds bound how many are made.
    rests = [var(f"v{n}") for n in range(12)]
    loop = For.make(K, 0, 10, seq(*(Store.make(OUT, K * 64 + v * 4 + c, K) for v in rests for c in (0, 32))))
    env = {v.name: 3 * n + 1 for n, v in enumerate(rests)}
    for regs, made in ((128, 12), (21, 4), (16, 0)):
        out = reduce_strength(loop, {"target": "xehpg", "regs": regs, "reg_bytes": 32})
        assert len(_grf_allocs(out, "_iv_reg")) == made, regs
        assert effects(out, env=env) == effects(loop, env=env)


# -- mixed-radix digits --------------------------------------------------------------------------

def _digit_body(x):
    """Stores reading the digits of ``x`` in base (3, 3, ...) the way a flattened kh3kw3ic nest does."""
    return seq(Store.make(OUT, (x % 3) * 4 + ((x / 3) % 3) * 64 + (x / 9) * 1024 + I, K),
               Store.make(OUT, ((x / 3) % 3) * 8 + I * 2, x / 9),
               Store.make(OUT, (x / 9) * 16 + (x % 3) + ((x / 3) % 3), I))


def _divisions(ir):
    return [n for n in walk(ir) if isinstance(n, Binary) and n.op in (Op.DIV, Op.MOD)]


def _loop(ir):
    (loop,) = [n for n in walk(ir) if isinstance(n, For)]
    return loop


def test_digits_of_a_counting_loop_become_wrapping_counters():
    loop = For.make(K, 0, 36, _digit_body(K + 2))
    out = reduce_strength(loop, OPTIONS)
    assert sorted(_grf_allocs(out, "digit")) == ["k_digit_reg", "k_digit_reg_1", "k_digit_reg_2"]
    assert not _divisions(_loop(out).body)  # no division or modulus left in the loop
    starts = [n.value.value for n in walk(out) if isinstance(n, Store) and isinstance(n.value, IntImm)]
    assert sorted(starts) == [0, 0, 2]  # x = 2: digits 2, 0 and quotient 0
    assert kernel_metrics(out, MODEL).loop_ops < kernel_metrics(loop, MODEL).loop_ops
    for i in (0, 5):
        assert effects(out, env={"i": i}) == effects(loop, env={"i": i})


def test_a_counters_allocation_says_the_values_its_register_holds():
    """x = k + 2 for k in 0 .. 35: the wrapping digits ``x % 3`` and ``(x / 3) % 3`` hold 0 .. 2, the top
    one ``x / 9`` from 2 // 9 to one past 37 // 9 (the update after the last iteration advances it)."""
    from kdd.core.passes.mixed_radix import RANGE_ATTR
    out = reduce_strength(For.make(K, 0, 36, _digit_body(K + 2)), OPTIONS)
    held = sorted(dict(n.attrs)[RANGE_ATTR] for n in walk(out) if isinstance(n, Alloc) and "digit" in n.buf.name)
    assert held == [(0, 2), (0, 2), (0, 37 // 9 + 1)]


def test_digits_are_found_through_lets_of_the_counter_and_of_digits():
    xk, q, d = var("xk"), var("q"), var("d")
    body = Let.make(xk, K + 1, Let.make(q, xk / 4, Let.make(d, q % 5, seq(
        Store.make(OUT, d * 32 + q / 5 * 256 + (xk % 4), K), Store.make(OUT, d * 8 + (q / 5) * 4 + I, K)))))
    loop = For.make(K, 0, 50, body)
    out = reduce_strength(loop, OPTIONS)
    assert _grf_allocs(out, "digit")
    assert not _divisions(_loop(out).body)
    assert effects(out, env={"i": 2}) == effects(loop, env={"i": 2})


def test_in_a_loop_unrolled_by_the_low_radix_counters_update_once_per_unrolled_iteration():
    loop = For.make(K, 0, 36, _digit_body(K + 2), unroll=3)
    out = reduce_strength(loop, OPTIONS)
    # x % 3 folds in every unrolled copy: no counter for it; the two above it advance when it wraps.
    assert len(_grf_allocs(out, "digit")) == 2
    (guard,) = [n for n in walk(_loop(out).body) if isinstance(n, If)]
    assert str(guard.cond) == "(((k + 2) % 3) == 2)"
    final = simplify_kernel(unroll_loops(out))
    plain = simplify_kernel(unroll_loops(loop))
    main = _loop(final)
    assert main.step == 3 and not _divisions(main.body)
    updates = [n for n in walk(main.body) if isinstance(n, Store) and "digit" in n.buf.name]
    assert len(updates) == 2  # one copy of three carries; the guard folded away in the others
    assert kernel_metrics(final, MODEL).loop_ops < kernel_metrics(plain, MODEL).loop_ops
    for stage in (out, unroll_loops(out), final):
        assert effects(stage, env={"i": 3}) == effects(loop, env={"i": 3})


def test_a_top_digit_worth_its_register_only_for_the_sums_it_carries_is_kept():
    # Unrolled by kh3 x kw3: both low digits fold per copy; the quotient x / 9 (ic) alone saves one
    # division, less than its register, but the sum ic*1024 + i it carries becomes one register
    # advanced once per unrolled iteration, and the counter itself goes.
    xk = var("xk")
    body = Let.make(xk, K + 2, Store.make(OUT, (xk % 3) * 4 + ((xk / 3) % 3) * 64 + (xk / 9) * 1024 + I, K))
    loop = For.make(K, 0, 36, body, unroll=9)
    out = reduce_strength(loop, OPTIONS)
    assert _grf_allocs(out, "div") and not _grf_allocs(out, "digit_reg")
    final = simplify_kernel(unroll_loops(out))
    main = _loop(final)
    assert main.step == 9 and not _divisions(main.body)
    assert len([n for n in walk(main.body) if isinstance(n, Store) and "div" in n.buf.name]) == 1
    for stage in (out, final):
        assert effects(stage, env={"i": 3}) == effects(loop, env={"i": 3})


def test_digits_of_a_counter_that_starts_negative_get_no_counter():
    loop = For.make(K, 0, 30, _digit_body(K - 1))  # x = -1 first: truncating division is no digit
    out = reduce_strength(loop, OPTIONS)
    assert not _grf_allocs(out, "digit")
    assert effects(out, env={"i": 1}) == effects(loop, env={"i": 1})


def test_counters_that_save_less_than_their_registers_are_not_made():
    loop = For.make(K, 0, 40, Store.make(OUT, K / 7, K))  # one division against two counters
    assert reduce_strength(loop, OPTIONS) is loop


@st.composite
def digit_loops(draw):
    """A counting loop whose stores read mixed-radix digits of ``k + c`` (inline or through a let),
    sums of lets linear in ``k`` and a guard, with random start, length, radices and unrolling."""
    init, trips = draw(st.integers(-3, 3)), draw(st.integers(2, 30))
    c, m, n = draw(st.integers(-3, 5)), draw(st.integers(2, 4)), draw(st.integers(2, 4))
    xk, t, u = var("xk"), var("t"), var("u")
    x = xk if draw(st.booleans()) else K + c
    pieces = [x % m, (x / m) % n, x / (m * n), x / m, (x % (m * n)) / m, x, K, t, u, t * 2 + 5, X]
    index = st.integers(0, len(pieces) - 1)
    stores = []
    for _ in range(draw(st.integers(1, 5))):
        terms = draw(st.lists(st.tuples(index, st.integers(-3, 70)), min_size=1, max_size=4))
        offset = pieces[terms[0][0]] * terms[0][1]
        for p, coef in terms[1:]:
            offset = offset + pieces[p] * coef
        stores.append(Store.make(OUT, offset, pieces[draw(index)]))
    cut = draw(st.integers(0, len(stores)))
    body = seq(*stores[:cut], If.make(K.lt(init + trips - 1), seq(*stores[cut:]))) if cut < len(stores) \
        else seq(*stores)
    body = Let.make(t, K * draw(st.integers(-2, 40)) + X * draw(st.integers(-2, 2)) + draw(st.integers(-9, 9)),
                    Let.make(u, t * draw(st.integers(1, 3)) + Y, body))
    body = Let.make(xk, K + c, body)
    return For.make(K, init, init + trips, body, unroll=draw(st.sampled_from((1, 1, 2, 3, 4, 6, 9))))


@settings(max_examples=250, deadline=None)
@given(digit_loops(), st.integers(-50, 50), st.integers(-50, 50))
def test_digit_and_linear_loops_keep_their_stores_through_reduction_unrolling_and_folding(loop, x, y):
    env = {"x": x, "y": y}
    expected = effects(loop, env=env)
    reduced = reduce_strength(loop, OPTIONS)
    assert effects(reduced, env=env) == expected
    unrolled = unroll_loops(reduced)
    assert effects(unrolled, env=env) == expected
    assert effects(simplify_kernel(unrolled), env=env) == expected


# -- shipped examples ----------------------------------------------------------------------------

def _without(name: str) -> Pipeline:
    return Pipeline(tuple(p for p in KERNEL_PIPELINE.passes if p.name != name))


@pytest.mark.parametrize("name", ["bwd_d"])  # the vector messages left the others no message-loop arithmetic
def test_the_pass_reduces_the_reduction_loop_arithmetic_of_shipped_examples(name):
    kernel = example_kernel(name)
    iterations = reduction_iterations(kernel.body)
    trace = run_pipeline(kernel)
    ops = lambda ir: kernel_metrics(ir, MODEL, iterations).inner_ops  # noqa: E731
    assert ops(trace.after("strength-reduce")) < ops(trace.before("strength-reduce"))
    # ... and the saving survives unrolling and folding: the final IR does less than without the pass.
    assert ops(trace.final) < ops(run_pipeline(kernel, _without("strength-reduce")).final)
    reduced = trace.after("strength-reduce")
    assert reduce_strength(reduced, {"reg_bytes": kernel.reg_bytes}) is reduced


def test_a_kernel_without_free_registers_gets_no_induction_register():
    # The same IR gets counters when the config leaves registers free, none when its buffers and the
    # target's reserve take every register: the pass has nothing to spend.
    kernel = example_kernel("resnet50_3x3")
    options = kernel_options(kernel)
    ir = run_pipeline(kernel).before("strength-reduce")
    target = options.target
    peak = estimate_registers(ir, RegisterModel.of(target)).peak_bytes
    full = -(-peak // options.reg_bytes) + target.registers.reserved
    assert reduce_strength(ir, replace(options, regs=full + 32)) is not ir
    assert reduce_strength(ir, replace(options, regs=full)) is ir

def test_address_sums_of_digits_become_one_register_the_counters_advance():
    """A conv header's scalar part ``kh*7168 + ic*32`` (kh, ic digits of the flattened kh3kw3ic loop,
    kw folding per unrolled copy): one register, advanced with the counters by 7168, or by
    32 - 2*7168 where kh wraps; the ic counter nothing else reads goes."""
    x = K
    kh, ic, kw = (x / 3) % 3, x / 9, x % 3
    body = seq(Store.make(OUT, kh * 7168 + ic * 32 + I + kw * 128, K), Store.make(OUT, kh + I, K))
    loop = For.make(K, 0, 36, body, unroll=3)
    out = reduce_strength(loop, OPTIONS)
    assert _grf_allocs(out, "div") == ["k_div_reg"]
    assert _grf_allocs(out, "digit") == ["k_digit_reg"]  # kh: read by the second store and the wraps
    (guard,) = [n for n in walk(_loop(out).body) if isinstance(n, If)]
    steps = {n.value for n in walk(guard) if isinstance(n, IntImm)}
    assert {7168, 32 - 2 * 7168} <= steps
    final = simplify_kernel(unroll_loops(out))
    assert not _divisions(_loop(final).body)
    assert kernel_metrics(final, MODEL).loop_ops < kernel_metrics(simplify_kernel(unroll_loops(loop)), MODEL).loop_ops
    for stage in (out, unroll_loops(out), final):
        for i in (0, 7):
            assert effects(stage, env={"i": i}) == effects(loop, env={"i": i})
