"""Register estimate and before/after figures on IR whose answers can be counted by hand."""
from passes_oracle import OUT

from kdd.core.ir import Alloc, For, FuncCall, Group, Let, MemKind, Store, seq, var
from kdd.core.ir.funcs import Barrier, BarrierSignal, BarrierWait
from kdd.core.ir.types import s32, s64
from kdd.core.passes.metrics import kernel_metrics
from kdd.core.passes.registers import RegisterModel, estimate_registers

XE = RegisterModel(32)
SM90 = RegisterModel(128, 4)
X, K = var("x"), var("k")


def test_values_live_until_their_last_use_and_buffers_while_used():
    a, b = var("a"), var("b", s64)
    acc = var("acc", s32)
    s = seq(Let.make(a, X + 1, Let.make(b, (X * 2).cast(s64), seq(Store.make(OUT, a, X), Store.make(OUT, b, X),
                                                                   Alloc.make(acc, 96, MemKind.GRF,
                                                                              Store.make(acc, 0, X))))))
    est = estimate_registers(s, XE)
    # a (4 B) ends at its store; b (8 B) ends at its store; then the 96-byte buffer alone.
    assert est.peak_bytes == 96 and est.regs == 3 and est.buffer_bytes == 96
    assert estimate_registers(s, SM90).peak_bytes == 128 * 3  # 96 B buffer: 1 row; a: 1 reg; b: 2 regs


def test_a_buffer_used_in_a_loop_lives_through_the_loop_and_an_unused_one_costs_nothing():
    acc, tmp, unused = var("acc", s32), var("tmp", s32), var("unused", s32)
    loop = For.make(K, 0, 4, seq(Store.make(acc, 0, K), Alloc.make(tmp, 64, MemKind.GRF, Store.make(tmp, 0, K))))
    s = Alloc.make(unused, 1024, MemKind.GRF, Alloc.make(acc, 32, MemKind.GRF, seq(loop, Store.make(OUT, X, X))))
    # acc (32 B) over the whole loop, tmp (64 B) inside it, the loop variable k (4 B).
    assert estimate_registers(s, XE).peak_bytes == 32 + 64 + 4


def test_a_value_read_inside_a_loop_lives_through_the_whole_loop():
    a, t = var("a"), var("t")
    loop = For.make(K, 0, 4, seq(Store.make(OUT, a, K), Let.make(t, K * 2, Store.make(OUT, t, K)),
                                 Store.make(OUT, K, K)))
    s = Let.make(a, X * 3, loop)
    # a, k and t live together: 12 bytes on Xe; on sm_90 one register each.
    assert estimate_registers(s, XE).peak_bytes == 12
    assert estimate_registers(s, SM90).regs == 3


def test_figures_count_statements_loop_operations_barriers_and_reduction_work():
    kk = var("kk")
    body = seq(FuncCall.make(Barrier()), Store.make(OUT, kk * 16 + X, X), FuncCall.make(BarrierSignal()),
               FuncCall.make(BarrierWait()))
    kernel = Group.make("kernel", seq(Store.make(OUT, X * 2, X),
                                      Group.make("k_loop", For.make(kk, 0, 6, body)),
                                      For.make(K, 0, 3, Store.make(OUT, K + 1, K))))
    m = kernel_metrics(kernel, XE)
    assert m.stmts == 8  # 3 stores, 3 calls, 2 loops; groups and sequences are structure
    assert m.loop_ops == 6 * 2 + 3 * 1
    assert m.inner_ops == 2.0  # per reduction iteration (6 of them)
    assert m.barriers == 12  # barrier + wait, 6 times
    assert kernel_metrics(kernel, XE, iterations=3).inner_ops == 4.0


def test_over_the_budget_a_vector_without_loads_is_held_only_where_it_is_used_as_the_allocator_recomputes_it():
    from types import SimpleNamespace

    from kdd.core.codegen.backend import backend_for
    from kdd.core.ir.expr import Ramp

    walk = backend_for("xehpg").register_model(SimpleNamespace(args=(), simd=16))  # the allocator's walk
    v, tmp = var("v", s32.with_lanes(32)), var("tmp", s32)
    # tmp written at its last dword: all its 8 registers (a buffer used only in its first bytes takes a sub-register)
    loop = For.make(K, 0, 4, seq(Alloc.make(tmp, 256, MemKind.GRF, Store.make(tmp, 63, K)), Store.make(OUT, v, K)))
    s = Let.make(v, Ramp.make(X, 1, 32), loop)
    held = 1 + 4 + 8 + 1  # r0, v (32 lanes of s32) held through the loop beside tmp and k (a sub-register)
    assert estimate_registers(s, walk).regs == held
    assert estimate_registers(s, walk, budget=held).regs == held  # it fits: nothing is recomputed
    assert estimate_registers(s, walk, budget=held - 1).regs == held - 4  # recomputed at its store
    assert estimate_registers(s, SM90, budget=1).peak_bytes == estimate_registers(s, SM90).peak_bytes  # ptxas
