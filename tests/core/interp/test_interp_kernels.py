"""Hand-written IR kernels run by the interpreter and compared with numpy."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.interp import InterpError, Launch, run_ir
from kdd.core.ir import (Alloc, Broadcast, For, FuncCall, Group, If, Let, Load, MemKind, Ramp, Store,
                         const, seq, var)
from kdd.core.ir.expr import FloatImm
from kdd.core.ir.funcs import (Barrier, BarrierSignal, BarrierWait, Dp4a, Dpas, Eltwise, Fence, Mad, Mma,
                               Reduce, Reorder, Send, SendKind, SendOp)
from kdd.core.ir.types import Type, bf16, f16, f32, s8, s32, u32, u64
from kdd.core.layout.layout import Layout

TRUE = const(True)
FENCE = FuncCall.make(Fence("slm"))
XE = dict(simd=8, reg_bytes=32)
rng = np.random.default_rng(1)


def send(op, space, t, n, *args, kind=SendKind.BLOCK):
    return FuncCall.make(Send(op, kind, space, t, n), args)


def allocs(body, *bufs, kind=MemKind.GRF):
    for buf, size in reversed(bufs):
        body = Alloc.make(buf, size, kind, body)
    return Group.make("kernel", body)


def buf(name):
    return var(name, u64)


# -- a GEMM with SLM, barriers, a K loop, masks and a divergent if --------------------------------

M, N, K = 3, 16, 8
A_, B_, C_ = buf("A"), buf("B"), buf("C")
acc, a_reg, b_reg, tmp, bs = buf("acc"), buf("a"), buf("b"), buf("tmp"), buf("bs")
g0, g1, t1 = var("group_id0"), var("group_id1"), var("thread_id1")
n0, m, k0, kk, r = var("n0"), var("m"), var("k0"), var("kk"), var("r")


def slm_gemm(first_barrier=True):
    """C(3x16) = A(3x8) B(8x16): groups of 2 threads (one row each) share a B tile through SLM."""
    k_iter = seq(
        FuncCall.make(Barrier()) if first_barrier else None,
        For.make(r, 0, 2, send(SendOp.LOAD, "global", f32, 8, B_, ((k0 + t1 * 2 + r) * N + n0) * 4,
                               tmp, r * 32, TRUE)),
        send(SendOp.STORE, "slm", f32, 16, bs, t1 * 64, tmp, 0, TRUE),
        FENCE,
        FuncCall.make(Barrier()),
        send(SendOp.LOAD, "slm", f32, 32, bs, 0, b_reg, 0, TRUE),
        # Row 3 does not exist: its A load is masked off (a_reg unchanged) and its store skipped below.
        send(SendOp.LOAD, "global", f32, 4, A_, (m * K + k0) * 4, a_reg, 0, m.lt(M)),
        For.make(kk, 0, 4, FuncCall.make(Mad(8, f32, f32, f32, 0),
                                         [acc, 0, acc, 0, b_reg, kk * 32, a_reg, kk * 4])),
    )
    body = seq(
        Store.make(acc, 0, Broadcast.make(const(0.0), 8)),
        For.make(k0, 0, K, k_iter, step=4),
        If.make(m.lt(M), send(SendOp.STORE, "global", f32, 8, C_, (m * N + n0) * 4, acc, 0, TRUE)),
    )
    body = Let.make(n0, g0 * 8, Let.make(m, g1 * 2 + t1, body))
    body = Alloc.make(bs, 4 * 32, MemKind.SLM, body)
    return allocs(body, (acc, 32), (a_reg, 16), (b_reg, 128), (tmp, 64))


def test_slm_gemm_matches_numpy_and_writes_every_output():
    A = rng.integers(-4, 5, (M, K)).astype(np.float32)
    B = rng.integers(-4, 5, (K, N)).astype(np.float32)
    C = np.full((M, N), np.nan, np.float32)
    res = run_ir(slm_gemm(), Launch((2, 2, 1), (1, 2, 1), **XE), {"A": A, "B": B, "C": C})
    np.testing.assert_array_equal(C, A @ B)
    assert res.written["C"].all() and not res.written["A"].any()


def test_missing_barrier_is_reported_as_slm_race():
    A, B, C = np.ones((M, K), np.float32), np.ones((K, N), np.float32), np.zeros((M, N), np.float32)
    with pytest.raises(InterpError, match="SLM race on 'bs'.*overwrites a byte read by"):
        run_ir(slm_gemm(first_barrier=False), Launch((2, 2, 1), (1, 2, 1), **XE), {"A": A, "B": B, "C": C})


def test_barrier_in_divergent_control_flow_is_an_error():
    body = If.make(var("thread_id0").eq(0), FuncCall.make(Barrier()))
    with pytest.raises(InterpError, match="barrier in divergent control flow"):
        run_ir(Group.make("kernel", body), Launch((1, 1, 1), (2, 1, 1), **XE), {})


def test_barrier_uniform_per_group_is_allowed():
    out = buf("out")
    body = If.make(var("group_id0").eq(1), seq(
        FuncCall.make(Barrier()),
        Store.make(out, var("thread_id0") * 4, const(7))))
    o = np.zeros(4, np.int32)
    run_ir(Group.make("kernel", body), Launch((2, 1, 1), (4, 1, 1), **XE), {"out": o})
    assert o.tolist() == [7, 7, 7, 7]


def test_split_barrier_pairing_is_checked():
    wait = FuncCall.make(BarrierWait())
    with pytest.raises(InterpError, match="waits on a barrier it did not signal"):
        run_ir(Group.make("kernel", wait), Launch((1, 1, 1), (1, 1, 1), **XE), {})
    twice = seq(FuncCall.make(BarrierSignal()), FuncCall.make(BarrierSignal()))
    with pytest.raises(InterpError, match="signals a barrier twice"):
        run_ir(Group.make("kernel", twice), Launch((1, 1, 1), (1, 1, 1), **XE), {})


def test_non_uniform_loop_bound_is_an_error():
    i = var("i")
    body = For.make(i, 0, var("thread_id0") + 1, FuncCall.make(Barrier()))
    with pytest.raises(InterpError, match="bound of loop 'i' differs between threads"):
        run_ir(Group.make("kernel", body), Launch((1, 1, 1), (2, 1, 1), **XE), {})


def test_masked_off_threads_neither_store_nor_fault():
    out, src = buf("out"), buf("src")
    t = var("thread_id0")
    # Thread 3 would read past the end of src: it is masked off by the if, so nothing happens.
    body = If.make(t.lt(3), Store.make(out, t * 4, Load.make(s32, src, t * 4) * 10),
                   Store.make(out, t * 4, const(-1)))
    o = np.zeros(4, np.int32)
    run_ir(Group.make("kernel", body), Launch((1, 1, 1), (4, 1, 1), **XE),
           {"out": o, "src": np.array([1, 2, 3], np.int32)})
    assert o.tolist() == [10, 20, 30, -1]


def test_active_out_of_bounds_store_names_thread_and_buffer():
    out = buf("out")
    body = Store.make(out, var("thread_id0") * 4, const(1))
    with pytest.raises(InterpError, match=r"thread \(2, 0, 0\) of group \(0, 0, 0\) writes byte 8 "
                                          r"of global buffer 'out'"):
        run_ir(Group.make("kernel", body), Launch((1, 1, 1), (3, 1, 1), **XE), {"out": np.zeros(2, np.int32)})


def test_vector_store_with_lane_mask():
    out = buf("out")
    lanes = Ramp.make(const(0), 1, 8)
    body = Store.make(out, 0, Ramp.make(const(100), 1, 8), mask=lanes.lt(Broadcast.make(const(5), 8)))
    o = np.zeros(8, np.int32)
    run_ir(Group.make("kernel", body), Launch((1, 1, 1), (1, 1, 1), **XE), {"out": o})
    assert o.tolist() == [100, 101, 102, 103, 104, 0, 0, 0]


def test_long_let_chain_runs_without_recursion():
    out = buf("out")
    names = [var(f"x{i}") for i in range(5000)]
    body = Store.make(out, 0, names[-1])
    for i in reversed(range(1, len(names))):
        body = Let.make(names[i], names[i - 1] + 1, body)
    body = Let.make(names[0], var("thread_id0"), body)
    o = np.zeros(1, np.int32)
    run_ir(Group.make("kernel", body), Launch((1, 1, 1), (1, 1, 1), **XE), {"out": o})
    assert o[0] == 4999


def test_shadowed_let_is_restored_after_its_scope():
    out, x = buf("out"), var("x")
    body = Let.make(x, 1, seq(Let.make(x, 2, Store.make(out, 0, x)), Store.make(out, 4, x)))
    o = np.zeros(2, np.int32)
    run_ir(Group.make("kernel", body), Launch((1, 1, 1), (1, 1, 1), **XE), {"out": o})
    assert o.tolist() == [2, 1]


def test_fresh_registers_are_poisoned():
    out, reg = buf("out"), buf("reg")
    body = allocs(send(SendOp.STORE, "global", f32, 8, out, 0, reg, 0, TRUE), (reg, 32))
    o = np.zeros(8, np.float32)
    run_ir(body, Launch((1, 1, 1), (1, 1, 1), **XE), {"out": o})
    assert np.isnan(o).all()


# -- dpas with VNNI-packed B from a reorder --------------------------------------------------------

def _dpas_kernel(dt, acc_t, dpasw=False):
    """C(8x8) = sum over two K blocks of A(8x16) B(16x8) (16-bit), A(8x32) B(32x8) (8-bit) or A(8x8)
    B(8x8) (f32 in tf32)."""
    A, B, C = buf("A"), buf("B"), buf("C")
    a, b_row, b_vnni, c = buf("a"), buf("b_row"), buf("b_vnni"), buf("c")
    ops = 4 // dt.size
    kd = 8 * ops
    kb = var("kb")
    t0 = var("thread_id0")
    rows = 4 if dpasw else 8
    plain = Layout.dense(dt, (kd, 8), [(0, kd), (1, 8)])
    vnni = Layout.dense(dt, (kd, 8), [(0, 8), (1, 8), (0, ops)])
    a_bytes, b_bytes = rows * kd * dt.size, kd * 8 * dt.size
    n_a, n_b = a_bytes // 4, b_bytes // 4
    body = seq(
        Store.make(c, 0, Broadcast.make(const(0, acc_t), 64)),
        For.make(kb, 0, 2, seq(
            # A is (2 K blocks) x 8 x kd; with dpasw thread t holds rows 4t .. 4t+3.
            send(SendOp.LOAD, "global", u32, n_a, A, kb * (8 * kd * dt.size) + t0 * a_bytes, a, 0, TRUE),
            send(SendOp.LOAD, "global", u32, n_b, B, (t0 * 2 + kb) * b_bytes, b_row, 0, TRUE),
            FuncCall.make(Reorder(plain, vnni), [b_row, 0, b_vnni, 0]),
            FuncCall.make(Dpas(8, 8, 8, acc_t, dt, dt, is_dpasw=dpasw), [c, 0, c, 0, b_vnni, 0, a, 0]),
        )),
        send(SendOp.STORE, "global", u32, 64, C, t0 * 256, c, 0, TRUE),
    )
    return allocs(body, (a, a_bytes), (b_row, b_bytes), (b_vnni, b_bytes), (c, 256))


def _as_storage(x, t):
    if t == bf16:
        return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return x.astype(t.numpy)


@pytest.mark.parametrize("dt", [f16, bf16, s8])
def test_dpas_with_vnni_b_matches_numpy(dt):
    acc_t = s32 if dt.is_int else f32
    kd = 32 if dt.size == 1 else 16
    A = rng.integers(-3, 4, (2, 8, kd)).astype(np.float64)
    B = rng.integers(-3, 4, (1, 2, kd, 8)).astype(np.float64)
    C = np.zeros((1, 8, 8), acc_t.numpy)
    run_ir(_dpas_kernel(dt, acc_t), Launch((1, 1, 1), (1, 1, 1), **XE),
           {"A": _as_storage(A, dt), "B": _as_storage(B, dt), "C": C})
    want = A[0] @ B[0, 0] + A[1] @ B[0, 1]
    np.testing.assert_array_equal(C[0], want)


def _tf32_oracle(x: np.ndarray) -> np.ndarray:
    """Toward zero to 11 significant bits, by arithmetic (normal values)."""
    exp = np.floor(np.log2(np.abs(x)))
    quantum = 2.0 ** (exp - 10)
    return np.trunc(x / quantum) * quantum


def test_dpas_over_f32_multiplies_in_tf32():
    """f32 sources of dpas are read as tf32 (xehpc's ``:tf32``): the low 13 mantissa bits do not count."""
    A = rng.uniform(1, 2, (2, 8, 8)) * rng.choice([-1, 1], (2, 8, 8))
    B = rng.uniform(1, 2, (1, 2, 8, 8)) * rng.choice([-1, 1], (1, 2, 8, 8))
    A, B = A.astype(np.float32).astype(np.float64), B.astype(np.float32).astype(np.float64)
    C = np.zeros((1, 8, 8), np.float32)
    run_ir(_dpas_kernel(f32, f32), Launch((1, 1, 1), (1, 1, 1), **XE),
           {"A": A.astype(np.float32), "B": B.astype(np.float32), "C": C})
    ta, tb = _tf32_oracle(A), _tf32_oracle(B)
    want = (ta[0] @ tb[0, 0] + ta[1] @ tb[0, 1]).astype(np.float32)
    np.testing.assert_allclose(C[0], want, rtol=1e-6)
    exact = A[0] @ B[0, 0] + A[1] @ B[0, 1]
    assert np.abs(C[0] - exact).max() > 1e-3     # the exact f32 product is not what dpas computes


def test_dpasw_shares_a_between_thread_pairs():
    A = rng.integers(-3, 4, (2, 8, 16)).astype(np.float16)   # [kb, row, k]; thread t loads rows 4t..4t+3
    B = rng.integers(-3, 4, (2, 2, 16, 8)).astype(np.float16)  # a different B per thread
    C = np.zeros((2, 8, 8), np.float32)
    # Thread t reads its half of A at kb * 256 + t * 128 bytes: rows 4t .. 4t+3 of block kb.
    run_ir(_dpas_kernel(f16, f32, dpasw=True), Launch((1, 1, 1), (2, 1, 1), **XE), {"A": A, "B": B, "C": C})
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    for t in range(2):
        np.testing.assert_array_equal(C[t], A64[0] @ B64[t, 0] + A64[1] @ B64[t, 1])


# -- mma.sync with the PTX fragment layout ---------------------------------------------------------

def _lane_offsets(r, row_stride, elem, k_half, row_step=8, pair=2):
    """Byte offsets of fragment register r per lane: row groupID (+row_step for odd r), col
    tig*pair (+k_half for r >= 2), for a row-major matrix with row_stride elements per row."""
    lane = Ramp.make(const(0), 1, 32)
    g, tig = lane >> 2, lane & 3
    row = g + (r & 1) * row_step
    col = tig * pair + (r >> 1) * k_half
    return (row * row_stride + col) * elem


@pytest.mark.parametrize("dt", [f16, bf16, s8])
def test_mma_fragments_follow_the_ptx_isa(dt):
    A_, Bt_, C_, D_ = buf("A"), buf("Bt"), buf("C"), buf("D")
    a, b, c = buf("a"), buf("b"), buf("c")
    e = 4 // dt.size                 # elements per 32-bit register
    kf = 16 if e == 2 else 32
    acc_t = s32 if dt.is_int else f32
    lane = Ramp.make(const(0), 1, 32)
    g, tig = lane >> 2, lane & 3
    gather = lambda mem, offs, reg, r: send(SendOp.LOAD, "global", u32, 32, mem, offs, reg, r * 128, TRUE,  # noqa
                                            kind=SendKind.SCATTERED)
    steps = []
    for r in range(4):   # A: row g (+8 in odd registers), cols tig*e .. (+kf/2 in registers 2, 3)
        steps.append(gather(A_, _lane_offsets(r, kf, dt.size, kf // 2, pair=e), a, r))
    for r in range(2):   # B (stored transposed, n x k): col g, rows tig*e .. (+kf/2 in register 1)
        steps.append(gather(Bt_, (g * kf + tig * e + r * (kf // 2)) * dt.size, b, r))
    c_offs = [((g + (r >> 1) * 8) * 8 + tig * 2 + (r & 1)) * 4 for r in range(4)]
    for r in range(4):   # C/D: row g (+8 for c2, c3), col 2*tig + (r & 1)
        steps.append(gather(C_, c_offs[r], c, r))
    steps.append(FuncCall.make(Mma(16, 8, kf, dt, dt, acc_t), [c, 0, a, 0, b, 0, c, 0]))
    for r in range(4):
        steps.append(send(SendOp.STORE, "global", u32, 32, D_, c_offs[r], c, r * 128, TRUE,
                          kind=SendKind.SCATTERED))
    body = allocs(seq(*steps), (a, 512), (b, 256), (c, 512))
    A = rng.integers(-3, 4, (16, kf)).astype(np.float64)
    B = rng.integers(-3, 4, (kf, 8)).astype(np.float64)
    C = rng.integers(-3, 4, (16, 8)).astype(acc_t.numpy)
    D = np.zeros((16, 8), acc_t.numpy)
    run_ir(body, Launch((1, 1, 1), (1, 1, 1), simd=32, reg_bytes=128),
           {"A": _as_storage(A, dt), "Bt": _as_storage(np.ascontiguousarray(B.T), dt), "C": C, "D": D})
    np.testing.assert_array_equal(D, C + A @ B)


def test_mma_needs_32_lane_registers():
    a = buf("a")
    body = allocs(FuncCall.make(Mma(16, 8, 16, f16, f16, f32), [a, 0, a, 0, a, 0, a, 0]), (a, 1024))
    with pytest.raises(InterpError, match="reg_bytes 128"):
        run_ir(body, Launch((1, 1, 1), (1, 1, 1), **XE), {})


# -- atomics, dp4a, reduce, eltwise ----------------------------------------------------------------

def test_global_and_slm_atomics_accumulate_every_thread():
    out_f, out_i, slm, reg = buf("out_f"), buf("out_i"), buf("slm"), buf("reg")
    t0, gid = var("thread_id0"), var("group_id0")
    val = (gid * 4 + t0 + 1).cast(f32)
    body = seq(
        Store.make(reg, 0, Broadcast.make(val, 4)),
        Store.make(reg, 16, Broadcast.make(gid + 1, 4)),
        # All threads of all groups add into the same 4 floats.
        send(SendOp.ATOMIC_ADD, "global", f32, 4, out_f, 0, reg, 0, TRUE),
        # SLM: per group sum of (group + 1) over its threads, then thread 0 stores it.
        If.make(t0.eq(0), Store.make(slm, 0, Broadcast.make(const(0), 4))),
        FENCE,
        FuncCall.make(Barrier()),
        send(SendOp.ATOMIC_ADD, "slm", s32, 4, slm, 0, reg, 16, TRUE),
        FuncCall.make(Barrier()),
        If.make(t0.eq(0), seq(send(SendOp.LOAD, "slm", s32, 4, slm, 0, reg, 16, TRUE),
                              send(SendOp.STORE, "global", s32, 4, out_i, gid * 16, reg, 16, TRUE))),
    )
    body = Alloc.make(slm, 16, MemKind.SLM, body)
    body = allocs(body, (reg, 32))
    out_f_arr, out_i_arr = np.zeros(4, np.float32), np.zeros((3, 4), np.int32)
    res = run_ir(body, Launch((3, 1, 1), (4, 1, 1), **XE), {"out_f": out_f_arr, "out_i": out_i_arr})
    assert out_f_arr.tolist() == [sum(range(1, 13))] * 4
    assert out_i_arr.tolist() == [[4 * (g + 1)] * 4 for g in range(3)]
    assert res.written["out_f"].all()


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 5), st.integers(0, 2**32 - 1), st.sampled_from([s32, u32]))
def test_atomic_fetch_add_returns_what_each_thread_found(groups, threads, counters, seed, t):
    """Every thread adds its value into a counter it picks and gets the counter's value before its add:
    the adds to one counter happen one at a time in flat thread order (sequential oracle), wrapping."""
    g = np.random.default_rng(seed)
    total = groups * threads
    pick = g.integers(0, counters, total).astype(np.int32)
    adds = g.integers(-2**31 if t is s32 else 0, 2**31, total).astype(np.int64)
    start = g.integers(0, 2**31, counters).astype(np.int64)
    cnt, idx, val, out, reg = buf("cnt"), buf("idx"), buf("val"), buf("out"), buf("reg")
    flat = var("group_id0") * threads + var("thread_id0")
    body = allocs(seq(
        Store.make(reg, 0, Load.make(t, val, flat * 4)),
        send(SendOp.ATOMIC_FETCH_ADD, "global", t, 1, cnt, Load.make(s32, idx, flat * 4) * 4, reg, 0, TRUE),
        send(SendOp.STORE, "global", t, 1, out, flat * 4, reg, 0, TRUE)), (reg, 32))
    dtype = np.int32 if t is s32 else np.uint32
    arrays = {"cnt": start.astype(dtype), "idx": pick, "val": adds.astype(dtype), "out": np.zeros(total, dtype)}
    run_ir(body, Launch((groups, 1, 1), (threads, 1, 1), **XE), arrays)
    memory, found = start.copy(), np.zeros(total, np.int64)
    for k in range(total):
        found[k] = memory[pick[k]]
        memory[pick[k]] += adds[k]
    assert arrays["out"].tolist() == found.astype(dtype).tolist()
    assert arrays["cnt"].tolist() == memory.astype(dtype).tolist()


def test_atomic_fetch_add_of_floats_is_an_error():
    cnt, reg = buf("cnt"), buf("reg")
    body = allocs(seq(Store.make(reg, 0, FloatImm.make(f32, 1.0)),
                      send(SendOp.ATOMIC_FETCH_ADD, "global", f32, 1, cnt, 0, reg, 0, TRUE)), (reg, 32))
    with pytest.raises(InterpError, match="only integers return their old values"):
        run_ir(body, Launch((1, 1, 1), (1, 1, 1), **XE), {"cnt": np.zeros(1, np.float32)})


def test_dp4a_dot_products():
    d, a, b = buf("d"), buf("a"), buf("b")
    src1 = rng.integers(-128, 128, (8, 4)).astype(np.int8)
    src2 = rng.integers(-128, 128, 4).astype(np.int8)
    words1 = src1.view(np.int32).reshape(8)
    body = seq(
        Store.make(a, 0, Ramp.make(const(int(words1[0])), 0, 8)),
        *[Store.make(a, 4 * i, const(int(w))) for i, w in enumerate(words1)],
        Store.make(b, 0, const(int(src2.view(np.int32)[0]))),
        Store.make(d, 0, Ramp.make(const(10), 1, 8)),
        FuncCall.make(Dp4a(8, s8, s8, 0), [d, 0, d, 0, a, 0, b, 0]),
        send(SendOp.STORE, "global", s32, 8, buf("out"), 0, d, 0, TRUE),
    )
    out = np.zeros(8, np.int32)
    run_ir(allocs(body, (d, 32), (a, 32), (b, 32)), Launch((1, 1, 1), (1, 1, 1), **XE), {"out": out})
    want = 10 + np.arange(8) + src1.astype(np.int64) @ src2.astype(np.int64)
    assert out.tolist() == want.tolist()


def test_reduce_and_eltwise_on_registers():
    x, s = buf("x"), buf("s")
    src = Layout.dense(f32, (4, 8), [(0, 4), (1, 8)])
    dst = Layout.dense(f32, (1, 8), [(1, 8)])
    values = rng.integers(-4, 5, (4, 8)).astype(np.float32)
    body = seq(
        *[Store.make(x, 32 * i, Broadcast.make(const(0.0), 8) + Ramp.make(const(0), 1, 8).cast(f32) * 0.0
                     + Load.make(Type.parse("f32x8"), buf("inp"), 32 * i)) for i in range(4)],
        FuncCall.make(Reduce(src, dst, (0,)), [x, 0, s, 0]),
        FuncCall.make(Eltwise("relu", 8, alpha=0.5), [s, 0]),
        send(SendOp.STORE, "global", f32, 8, buf("out"), 0, s, 0, TRUE),
    )
    out = np.zeros(8, np.float32)
    run_ir(allocs(body, (x, 128), (s, 32)), Launch((1, 1, 1), (1, 1, 1), **XE), {"inp": values, "out": out})
    col = values.sum(axis=0)
    np.testing.assert_array_equal(out, np.where(col > 0, col, 0.5 * col))


def test_cached_loop_values_follow_memory_changes():
    """Statement expressions are cached by their inputs; values loaded from memory must never go stale."""
    mem, i = buf("mem"), var("i")
    t = var("thread_id0")
    x, y = var("x"), var("y")
    body = For.make(i, 0, 4, Let.make(x, Load.make(s32, mem, 0), Let.make(y, Load.make(s32, mem, 4 + t * 4), seq(
        If.make(t.eq(0), Store.make(mem, 0, x * 3 + 1)),
        Store.make(mem, 4 + t * 4, y * 2 + (x & 1))))))
    m = np.array([1, 5, 7], np.int32)
    run_ir(Group.make("kernel", body), Launch((1, 1, 1), (2, 1, 1), **XE), {"mem": m})
    xs, ys = [1], [5, 7]
    for _ in range(4):
        x0 = xs[-1]
        ys = [v * 2 + (x0 & 1) for v in ys]
        xs.append(x0 * 3 + 1)
    assert m.tolist() == [xs[-1]] + ys


def _slm_kernel(*steps):
    slm, reg, t = buf("slm"), buf("reg"), var("thread_id0")
    body = Alloc.make(slm, 64, MemKind.SLM, seq(Store.make(reg, 0, Broadcast.make(t, 8)), *steps))
    return allocs(body, (reg, 32)), slm, reg, t


def test_reading_another_threads_slm_write_needs_a_barrier():
    def steps(sync):
        slm, reg, t = buf("slm"), buf("reg"), var("thread_id0")
        return (send(SendOp.STORE, "slm", s32, 8, slm, t * 32, reg, 0, TRUE), sync,
                send(SendOp.LOAD, "slm", s32, 8, slm, (1 - t) * 32, reg, 0, TRUE))
    racy, *_ = _slm_kernel(*steps(None))
    with pytest.raises(InterpError, match="reads a byte written by thread"):
        run_ir(racy, Launch((1, 1, 1), (2, 1, 1), **XE), {})
    split, *_ = _slm_kernel(*steps(seq(FENCE, FuncCall.make(BarrierSignal()), FuncCall.make(BarrierWait()))))
    run_ir(split, Launch((1, 1, 1), (2, 1, 1), **XE), {})


@pytest.mark.parametrize("barrier", [(Barrier(),), (BarrierSignal(), BarrierWait())])
def test_a_barrier_orders_slm_writes_only_after_a_fence(barrier):
    slm, reg, t = buf("slm"), buf("reg"), var("thread_id0")
    sync = [FuncCall.make(f) for f in barrier]

    def kernel(*between):
        k, *_ = _slm_kernel(send(SendOp.STORE, "slm", s32, 8, slm, t * 32, reg, 0, TRUE), *between, *sync,
                            send(SendOp.LOAD, "slm", s32, 8, slm, (1 - t) * 32, reg, 0, TRUE))
        return k
    with pytest.raises(InterpError, match="no fence.slm after its writes"):
        run_ir(kernel(), Launch((1, 1, 1), (2, 1, 1), **XE), {})
    with pytest.raises(InterpError, match="no fence.slm"):  # a global fence does not complete SLM writes
        run_ir(kernel(FuncCall.make(Fence("global"))), Launch((1, 1, 1), (2, 1, 1), **XE), {})
    run_ir(kernel(FENCE), Launch((1, 1, 1), (2, 1, 1), **XE), {})


@pytest.mark.parametrize("kind", [SendKind.BLOCK, SendKind.SCATTERED])
def test_masked_off_load_elements_keep_the_destination(kind):
    src, out, reg = buf("src"), buf("out"), buf("reg")
    lane = Ramp.make(const(0), 1, 4)
    offset, mask = (const(0), const(False)) if kind is SendKind.BLOCK else (lane * 4, lane.lt(2))
    body = seq(Store.make(reg, 0, Broadcast.make(const(-7), 4)),
               send(SendOp.LOAD, "global", s32, 4, src, offset, reg, 0, mask, kind=kind),
               send(SendOp.STORE, "global", s32, 4, out, 0, reg, 0, TRUE))
    src_arr, out_arr = np.arange(1, 5, dtype=np.int32), np.zeros(4, np.int32)
    run_ir(allocs(body, (reg, 32)), Launch((1, 1, 1), (1, 1, 1), **XE), {"src": src_arr, "out": out_arr})
    expect = [-7] * 4 if kind is SendKind.BLOCK else [1, 2, -7, -7]
    assert out_arr.tolist() == expect


def test_two_threads_writing_the_same_slm_bytes_race():
    slm, reg = buf("slm"), buf("reg")
    kernel, *_ = _slm_kernel(send(SendOp.STORE, "slm", s32, 8, slm, 0, reg, 0, TRUE))
    with pytest.raises(InterpError, match="writes the same byte in one access"):
        run_ir(kernel, Launch((1, 1, 1), (2, 1, 1), **XE), {})
    # One thread per group writing is fine, and groups have separate SLM.
    run_ir(kernel, Launch((2, 1, 1), (1, 1, 1), **XE), {})
