"""Multi-buffering and prefetching on built kernels: the structure the config asks for, the same outputs."""
from passes_kernels import example_kernel, outputs

from kdd.core.ir import Alloc, For, FuncCall, MemKind, walk
from kdd.core.ir.funcs import Barrier, BarrierSignal, BarrierWait, Send, SendOp
from kdd.core.passes.buffering import multi_buffer, slm_bytes, split_stages
from kdd.core.passes.options import kernel_options
from kdd.core.passes.prefetch import prefetch_pipeline
from kdd.core.passes.reduction_nest import (block_slm_messages, find_reduction_nest, room_for_copies,
                                            unroll_inner_loops, vector_bytes)


# The demo's shape at its former 128-GRF tile (4 dpas a step): the register room these tests price is
# tight there; the demo itself now takes the defaults' tile (8 dpas a step, 256 GRFs).
DEMO_128 = "i=mb8oc32ic16"


def calls(ir, kind):
    return [n for n in walk(ir) if isinstance(n, FuncCall) and isinstance(n.func, kind)]


def allocs(ir):
    return {n.buf.name: n.size for n in walk(ir) if isinstance(n, Alloc)}


def k_loop(ir):
    return next(n for n in walk(ir) if isinstance(n, For) and n.var.name == "k_it")


def test_triple_buffering_with_one_split_barrier_per_iteration():
    kernel = example_kernel("resnet50_3x3", DEMO_128)  # s=x3, P=u
    out = multi_buffer(kernel.body, kernel_options(kernel))
    before, after = allocs(kernel.body), allocs(out)
    assert after["a_slm"] == 3 * before["a_slm"] and after["b_slm"] == 3 * before["b_slm"]
    assert slm_bytes(out) == 3 * slm_bytes(kernel.body) == 3 * kernel.slm_bytes
    assert not calls(out, Barrier)
    loop = k_loop(out)
    # P=u: a multiple of the buffer count; not of kh3 x kw3 (the nest's inner digits): the ring's 18 SLM
    # block addresses fit the free registers alone, not beside nine copies (the next test)
    assert loop.bound.value == 36 and loop.unroll == 3
    assert len(calls(loop, BarrierWait)) == 1 and len(calls(loop, BarrierSignal)) == 1
    assert len(calls(out, BarrierSignal)) == 2 and len(calls(out, BarrierWait)) == 2  # prologue, loop, drain
    assert outputs(kernel, out) == outputs(kernel)


def test_unroll_by_the_inner_digits_only_where_it_fits_and_leaves_two_trips():
    nest = find_reduction_nest(example_kernel("resnet50_3x3", DEMO_128).body)  # ic4 kh3 kw3, kw innermost
    assert nest.trips == (4, 3, 3)
    assert nest.amortized_unroll(3, 16) == 9    # kw3 and kh3 fold in every copy; 4 trips of 9
    assert nest.amortized_unroll(2, 16) == 6    # kw folds; lcm(2, 9) = 18 is over the limit
    assert nest.amortized_unroll(3, 8) == 3     # 9 copies over the limit
    assert nest.amortized_unroll(4, 36) == 12   # lcm(4, 9) = 36 would leave one trip, no steady state
    blocked = example_kernel("blocked", full_shape=True)  # 17 free registers: no room for nine copies
    assert k_loop(multi_buffer(blocked.body, kernel_options(blocked))).unroll == 3
    tuned = example_kernel("resnet50_3x3_tuned", full_shape=True)  # room for 9 copies and 21 addresses
    assert k_loop(multi_buffer(tuned.body, kernel_options(tuned))).unroll == 9


def test_the_rings_slm_addresses_are_priced_against_the_copies_beyond_the_ring():
    kernel = example_kernel("resnet50_3x3", DEMO_128, full_shape=True)
    stages = split_stages(find_reduction_nest(kernel.body).body)
    # a step's SIMD1 SLM messages: the A tile's and four B loads (a loop of 4), B's store; A's store
    # is scattered (an address per lane), not one a register's dword 0 holds
    assert block_slm_messages(stages.compute) == 5 and block_slm_messages(stages.stores) == 1
    options = kernel_options(kernel)
    assert room_for_copies(kernel.body, options, 9, 2)            # nine copies fit alone (19.5 free)
    assert room_for_copies(kernel.body, options, 0, 2, 3 * 6)     # so do the ring's 18 addresses
    assert not room_for_copies(kernel.body, options, 9, 2, 3 * 6)  # not both: only kw folds (ring 3: 3)
    assert k_loop(multi_buffer(kernel.body, options)).unroll == 3
    ring2 = example_kernel("resnet50_3x3", f"{DEMO_128} bufs=2", full_shape=True)  # the ring's 2 copies leave kw a digit
    assert k_loop(multi_buffer(ring2.body, kernel_options(ring2))).unroll == 6


def test_an_unbuffered_nest_has_its_inner_loops_marked_for_complete_unrolling():
    kernel = example_kernel("blocked", "s=x0")  # ic2 kh3 kw3, no pipeline flattens it
    out = unroll_inner_loops(kernel.body, kernel_options(kernel))
    nest = find_reduction_nest(out)
    assert [loop.unroll for loop in nest.loops] == [1, 3, 3]  # kh and kw: 9 copies; ic stays a loop
    assert outputs(kernel, out) == outputs(kernel)
    assert unroll_inner_loops(out, kernel_options(kernel)) is out  # marked loops keep their marks
    gather = example_kernel("resnet50_3x3", f"{DEMO_128} s=x0")  # A's lanes gathered through per-lane index vectors
    options = kernel_options(gather)
    assert vector_bytes(find_reduction_nest(gather.body).body) == 32  # a copy's lane offsets: one register
    out = unroll_inner_loops(gather.body, options)  # 9 copies x (mask + offsets) fit the 38 free registers
    assert [loop.unroll for loop in find_reduction_nest(out).loops] == [1, 3, 3]
    assert outputs(gather, out) == outputs(gather)
    assert room_for_copies(gather.body, options, 9, 1, per_copy_bytes=32)
    assert not room_for_copies(gather.body, options, 9, 1, per_copy_bytes=4 * 32)  # 45 registers: no
    demo = example_kernel("resnet50_3x3", DEMO_128)
    flat = multi_buffer(demo.body, kernel_options(demo))
    assert unroll_inner_loops(flat, {}) is flat  # a pipelined nest is one loop already


def test_an_unbuffered_loop_of_one_step_per_trip_is_unrolled_by_a_few_steps():
    """By the largest of 4, 3 and 2 that divides the trips and leaves two of them."""
    for k, unroll in ((256, 4), (192, 3), (128, 2), (96, 1)):  # 8, 6, 4 trips (4 would leave one), 3 (none would)
        kernel = example_kernel("gemm_f16", "s=x0 regs=256", k=k)  # the k loop alone, one step per trip
        before = find_reduction_nest(kernel.body)
        assert len(before.loops) == 1 and before.loops[0].unroll == 1
        out = unroll_inner_loops(kernel.body, kernel_options(kernel))
        assert [loop.unroll for loop in find_reduction_nest(out).loops] == [unroll], k
        assert outputs(kernel, out) == outputs(kernel)
    buffered = example_kernel("gemm_f16", "s=x3", k=256)  # a pipeline's loop is the buffering pass's
    assert unroll_inner_loops(buffered.body, kernel_options(buffered)) is buffered.body


def test_double_buffering_without_unroll_rotates_buffers_with_arithmetic():
    kernel = example_kernel("tails", "s=x2 P=r")
    out = multi_buffer(kernel.body, kernel_options(kernel))
    assert k_loop(out).unroll == 1
    assert slm_bytes(out) == 2 * slm_bytes(kernel.body)
    assert outputs(kernel, out) == outputs(kernel)


def test_grf_buffering_doubles_the_staging_registers():
    kernel = example_kernel("tails", "s=x3.g2")
    out = multi_buffer(kernel.body, kernel_options(kernel))
    before, after = allocs(kernel.body), allocs(out)
    assert after["a_g2s"] == 2 * before["a_g2s"] and after["b_g2s"] == 2 * before["b_g2s"]
    assert k_loop(out).unroll == 6  # P=u: a multiple of both the 3 SLM and the 2 staging buffers
    assert outputs(kernel, out) == outputs(kernel)


def test_single_buffering_and_kernels_without_slm_are_left_alone():
    single = example_kernel("tails", "s=x1")
    assert multi_buffer(single.body, kernel_options(single)) is single.body
    plain = example_kernel("gemm_f16")
    assert multi_buffer(plain.body, kernel_options(plain)) is plain.body
    assert prefetch_pipeline(plain.body, kernel_options(plain)) is plain.body  # p=x0


def test_prefetch_pipeline_fetches_later_iterations_of_the_chosen_operand():
    kernel = example_kernel("resnet50_conv1", "p=x2.a")
    options = kernel_options(kernel)
    assert options["prefetch_buffers"] == ("src",)
    out = prefetch_pipeline(kernel.body, options)
    fetches = [c for c in calls(out, Send) if c.func.op is SendOp.PREFETCH]
    assert fetches and {c.ops.mem.name for c in fetches} == {"src"}
    assert k_loop(out).bound.value == 147  # ic3 x kh7 x kw7 flattened
    assert outputs(kernel, out) == outputs(kernel)
    assert all(a.kind is not MemKind.SLM for a in walk(out) if isinstance(a, Alloc))
