"""Unrolling: marked loops become copies (with remainders), names stay unique; register loops get marked."""
from hypothesis import given, settings
from hypothesis import strategies as st
from passes_oracle import OUT, effects, programs

from kdd.core.ir import Alloc, For, FuncCall, Let, MemKind, Store, seq, var, walk
from kdd.core.ir.funcs import Send, SendKind, SendOp
from kdd.core.ir.types import f16, s32, u64
from kdd.core.passes.register_loops import mark_register_loops
from kdd.core.passes.tree import binder
from kdd.core.passes.unroll import unroll_loops

I, K, N = var("i"), var("k"), var("n")


def loops(s):
    return [x for x in walk(s) if isinstance(x, For)]


def binders(s):
    return [v.name for v in (binder(x) for x in walk(s)) if v is not None]


def body_with_let():
    t = var("t")
    return Let.make(t, K * 4 + I, Store.make(OUT, t, K))


def test_divisible_trip_count_keeps_a_loop_with_a_larger_step():
    loop = For.make(K, 0, 8, body_with_let(), unroll=4)
    out = unroll_loops(loop)
    (main,) = loops(out)
    assert main.step == 4 and main.unroll == 1 and main.bound.value == 8
    assert sorted(binders(out)) == ["k", "t", "t_1", "t_2", "t_3"]
    assert effects(out, env={"i": 7}) == effects(loop, env={"i": 7})


def test_remainder_iterations_follow_as_constant_copies():
    loop = For.make(K, 1, 12, body_with_let(), step=2, unroll=4)  # 6 iterations: 4 in the loop, 2 after
    out = unroll_loops(loop)
    (main,) = loops(out)
    assert (main.init.value, main.bound.value, main.step) == (1, 9, 8)
    assert len(out.stmts) == 3
    assert effects(out, env={"i": 2}) == effects(loop, env={"i": 2})


def test_a_loop_no_longer_than_its_unroll_disappears():
    loop = For.make(K, 0, 3, body_with_let(), unroll=4)
    out = unroll_loops(loop)
    assert not loops(out)
    assert effects(out, env={"i": 1}) == effects(loop, env={"i": 1})


def test_bounds_known_only_at_run_time_get_a_tail_loop():
    loop = For.make(K, I, N, body_with_let(), step=3, unroll=2)
    out = unroll_loops(loop)
    main, tail = loops(out)
    assert main.step == 6 and tail.step == 3 and tail.var.name == "k_tail"
    for i, n in ((0, 0), (0, 1), (2, 17), (5, 3), (-4, 20)):
        assert effects(out, env={"i": i, "n": n}) == effects(loop, env={"i": i, "n": n})


def test_unmarked_loops_are_the_same_object():
    loop = For.make(K, 0, 8, body_with_let())
    assert unroll_loops(loop) is loop


@settings(max_examples=250, deadline=None)
@given(programs(), st.integers(-50, 50), st.integers(-50, 50))
def test_unrolled_program_has_the_same_effects_and_unique_names(p, x, y):
    env = {"x": x, "y": y}
    out = unroll_loops(p)
    assert effects(out, env=env) == effects(p, env=env)
    names = binders(out)
    assert len(names) == len(set(names))
    assert all(lp.unroll == 1 for lp in loops(out))


def test_loops_choosing_registers_are_marked_for_complete_unrolling():
    reg, src = var("a", u64), var("src", u64)
    msg, j, off = var("msg"), var("j"), var("off")
    load = FuncCall.make(Send(SendOp.LOAD, SendKind.BLOCK, "global", f16, 16), [src, msg * 512, reg, off, True])
    message_loop = For.make(msg, 0, 4, Let.make(off, msg * 32, load))  # msg -> off -> register offset
    address_only = For.make(j, 0, 4, Store.make(OUT, j * 4, j))  # a global store: not a register
    kernel = Alloc.make(reg, 128, MemKind.GRF, seq(message_loop, address_only))
    out = mark_register_loops(kernel)
    marks = {lp.var.name: lp.unroll for lp in loops(out)}
    assert marks == {"msg": 4, "j": 1}
    assert mark_register_loops(out) is out
    assert not loops(unroll_loops(out).body.stmts[0])


def test_register_buffer_stores_count_as_register_operands():
    acc, i = var("acc", s32), var("i")
    kernel = Alloc.make(acc, 64, MemKind.GRF, For.make(i, 0, 16, Store.make(acc, i * 4, i)))
    (loop,) = loops(mark_register_loops(kernel))
    assert loop.unroll == 16


def test_the_peeled_iteration_is_the_copy_of_the_whole_unrolled_iteration(monkeypatch):
    """``_peeled`` builds the last unrolled iteration from copies of the body; a copy of the whole
    iteration (with the loop variable the constant) is what it stands for: equal IR, the same fresh
    names asked in the same order, on an example whose pipelined loop is peeled."""
    import copy

    from passes_kernels import example_kernel

    from kdd.core.ir import print_ir
    from kdd.core.passes import unroll
    from kdd.core.passes.kernel_pipeline import run_pipeline
    from kdd.core.passes.naming import Copies

    built = unroll._peeled
    seen = []

    def checked(body, renamed, k, first, step, names):
        before = copy.deepcopy(names)
        out = built(body, renamed, k, first, step, names)
        whole = seq(body.stmt, *(body.copy({k: k + unroll._imm(k, j * step), **renamed[j - 1]})
                                 for j in range(1, len(renamed) + 1)))
        expected = Copies(whole, (k,)).copy({k: unroll._imm(k, first)}, before)
        assert out.is_equal(expected) and print_ir(out).text == print_ir(expected).text
        assert before._used == names._used
        seen.append(first)
        return out

    monkeypatch.setattr(unroll, "_peeled", checked)
    run_pipeline(example_kernel("resnet50_3x3"))
    assert seen
