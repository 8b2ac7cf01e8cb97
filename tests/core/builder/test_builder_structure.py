"""The shape of the built IR: loop nest, messages, masks, FMA calls, SLM, atomics, origins, ABI."""
from __future__ import annotations

import pytest

from builder_cases import problem
from kdd.core.builder import BuildError, Origin, build_kernel
from kdd.core.config.kernel_config import KernelConfig
from kdd.core.config.line import parse_config_line
from kdd.core.config.tiling import derive_tiling
from kdd.core.ir import Alloc, For, FuncCall, Group, If, Let, Seq, Store, count_nodes, walk
from kdd.core.ir.expr import Op, Unary
from kdd.core.interp.check import check_kernel
from kdd.core.ir.funcs import Barrier, Dpas, Mad, Mma, Reorder, Send, SendKind, SendOp
from kdd.core.problem import parse_post_ops, parse_shape


def build(shape, prop="fwd", types="f32", target="xehpg", line="", tags=None, post_ops=""):
    p = problem(parse_shape(shape), prop, types, tags, parse_post_ops(post_ops))
    gd = p.gemm_dims()
    return build_kernel(p, parse_config_line(line, [n for r in "bmnk" for n, _ in getattr(gd, r)]), target)


def calls(kernel, func_type):
    return [n for n in walk(kernel.body) if isinstance(n, FuncCall) and isinstance(n.func, func_type)]


def group(kernel, label):
    return next(n for n in walk(kernel.body) if isinstance(n, Group) and n.label == label)


def sends(node, op=None, space="global"):
    return [n for n in walk(node) if isinstance(n, FuncCall) and isinstance(n.func, Send)
            and (op is None or n.func.op is op) and n.func.space == space]


def test_abi_follows_the_tiling():
    k = build("mb2ic16ih6oc32oh6kh3ph1", line="fma=mad simd=16 i=ow4oc16ic8 T=oc2 l=ic2kh3kw3")
    t = derive_tiling(k.problem, k.config)
    assert (k.grid, k.tg, k.simd, k.target, k.reg_bytes) == (t.kernel_grid, t.tg_grid, 16, "xehpg", 32)
    assert [(a.name, a.role) for a in k.args] == [("src", "input"), ("wei", "input"), ("dst", "output")]
    assert all(str(a.var.type) == "u64" and a.var.name == a.name for a in k.args)
    assert [n for n, _ in k.arg("wei").dims] == ["oc", "ic", "kh", "kw"]
    assert isinstance(k.body, Group) and k.body.label == "kernel"
    assert [g.label for g in walk(k.body) if isinstance(g, Group)] == ["kernel", "init_c", "k_loop", "epilogue"]


def test_reduction_stays_a_loop_nest():
    """The default check shape keeps its reduction as loops: small IR, not unrolled."""
    k = build("mb2ic64ih8oc64oh8kh3ph1")
    loops = [n for n in walk(group(k, "k_loop")) if isinstance(n, For)]
    assert {v.var.name for v in loops} >= {"ic_loop", "kh_loop", "kw_loop"}
    assert count_nodes(k.body) < 2000


def test_packed_grid_dims_are_unpacked_with_div_and_mod():
    k = build("mb2ic16ih8oc16oh8kh3ph1", line="fma=mad simd=16 i=ow8oc16ic16 l=kh3kw3")
    lets = {n.var.name: str(n.value) for n in walk(k.body) if isinstance(n, Let)}
    # M dims mb (2 groups) and oh (8 groups) share group_id1, oh fastest.
    assert lets["mb_grp"] == "(group_id1 / 8)"
    assert lets["oh_grp"] == "(group_id1 % 8)"
    assert k.grid == (1, 16, 1)


def test_contiguous_unmasked_tiles_use_block_messages():
    # 1x1 unpadded: channels-last src rows of 16 f32 are contiguous and unmasked
    k = build("mb2ic16ih4oc16oh4kh1ph0", line="fma=mad simd=16 i=ow4oc16ic16")
    loads = sends(group(k, "k_loop"), SendOp.LOAD)
    assert loads and all(s.func.kind is SendKind.BLOCK for s in loads)
    assert all(str(s.ops.mask) == "true" for s in loads)


def test_padding_and_tails_use_masked_scattered_messages():
    # plain nchw src: iw is contiguous but padding masks differ along ow
    k = build("ic16ih6oc17oh6kh3ph1", line="fma=mad simd=16 i=ow4oc16ic16 l=kh3kw3 s=x0", tags={"src": "abx"})
    a_loads = [s for s in sends(group(k, "k_loop"), SendOp.LOAD) if s.ops.mem.name == "src"]
    assert a_loads and all(s.func.kind is SendKind.SCATTERED for s in a_loads)
    mask = str(a_loads[0].ops.mask)
    assert ">= 0" in mask and "< 6" in mask  # 0 <= ih, iw < 6: padding
    stores = sends(group(k, "epilogue"), SendOp.STORE)
    assert "(c_acc_oc < 17)" in str(stores[0].ops.mask)  # the oc tail


def test_backward_by_data_masks_the_stride_condition():
    k = build("mb1ic4ih9oc8oh4kh3sh2ph1", "bwd_d")
    masks = " ".join(str(s.ops.mask) for s in sends(group(k, "k_loop"), SendOp.LOAD) if s.ops.mem.name == "dst")
    assert "% 2) == 0)" in masks


@pytest.mark.parametrize("types, target, func, shape", [
    ("f32", "xehpg", Mad, "mad.16.f32.f32.f32"),
    ("f16", "xehpg", Dpas, "dpas.8x8.f32.f16.f16"),
    ("s8", "xehpc", Dpas, "dpas.8x8.s32.s8.s8"),
    ("f32", "sm_90", Mad, "mad.32.f32.f32.f32"),
    ("f16", "sm_90", Mma, "mma.m16n8k16.f32.f16.f16"),
    ("s8", "sm_90", Mma, "mma.m16n8k32.s32.s8.s8"),
])
def test_multiplication_uses_the_targets_instruction(types, target, func, shape):
    k = build("mb2ic32ih6oc32oh6kh3ph1", types=types, target=target)
    fmas = calls(k, (Mad, Dpas, Mma))
    assert fmas and all(isinstance(c.func, func) for c in fmas)
    assert str(fmas[0].func) == shape


def test_dpas_calls_cover_the_thread_tile():
    # M=32 (4 x rcount 8), N=16 (2 x simd 8), K=32 (2 x 16 for f16): 16 dpas per iteration
    k = build("mb2ic32ih6oc32oh6kh3ph1", types="f16", line="fma=dpas simd=8 i=mb2oh2ow8oc16ic32 l=kh3kw3")
    loops = [n for n in walk(group(k, "k_loop")) if isinstance(n, For)
             and any(isinstance(c.func, Dpas) for c in walk(n) if isinstance(c, FuncCall))]
    fma_loops = [n for n in loops if n.var.name in ("mb", "nb", "kb")]
    assert sorted(int(str(n.bound)) for n in fma_loops) == [2, 2, 4]


def test_reorder_matches_memory_order_to_the_dpas_layout():
    # wei with oc innermost: B rows of 16 oc are contiguous; dpas wants VNNI pairs of ic
    k = build("mb2ic32ih6oc32oh6kh3ph1", types="f16", line="fma=dpas simd=8 i=ow8oc16ic16 l=ic2kh3kw3",
              tags={"wei": "cdba"})
    reorders = calls_in(group(k, "k_loop"), Reorder)
    assert len(reorders) == 1
    assert reorders[0].ops.dst.name == "b"
    b_loads = [s for s in sends(group(k, "k_loop"), SendOp.LOAD) if s.ops.mem.name == "wei"]
    assert all(s.func.kind is SendKind.BLOCK for s in b_loads)


def test_any_weights_are_blocked_as_dpas_b_and_loaded_with_no_reorder():
    # wei = any under dpas (f16: 8 dwords of K pairs x 8 columns): ic/16, oc/8, 8 ic pairs, 8 oc, 2 ic
    # (A staged in SLM: A straight from global memory takes the transposed dpas and its own blocking,
    # test_builder_transposed_dpas.py)
    k = build("mb2ic32ih6oc32oh6kh3ph1", types="f16", line="fma=dpas simd=8 i=ow8oc16ic16 l=ic2kh3kw3 s=x1.a")
    assert k.arg("wei").layout.tag(["oc", "ic", "kh", "kw"]) == "hwIO8i8o2i"
    assert not calls_in(group(k, "k_loop"), Reorder)
    b_loads = [s for s in sends(group(k, "k_loop"), SendOp.LOAD) if s.ops.mem.name == "wei"]
    # the thread's 16 x 16 tile is one run of 512 bytes: two 256-byte block messages
    assert [(s.func.kind, s.func.elems) for s in b_loads] == [(SendKind.BLOCK, 128)] * len(b_loads)
    # a K that does not divide by 16 keeps the plain layout (oc innermost)
    plain = build("mb2ic24ih6oc32oh6kh3ph1", types="f16", line="fma=dpas simd=8 i=ow8oc16ic8 l=ic3kh3kw3")
    assert plain.arg("wei").layout.tag(["oc", "ic", "kh", "kw"]) == "hwio"
    # B in sub-tiles too: each subtile's 8 columns are one block of the weights, one message, no reorder
    split = build("mb2ic32ih6oc32oh6kh3ph1", types="f16", line="fma=dpas simd=8 i=ow8oc16ic16 l=ic2kh3kw3 S=a1b2")
    assert split.arg("wei").layout.tag(["oc", "ic", "kh", "kw"]) == "hwIO8i8o2i"
    assert not calls_in(group(split, "k_loop"), Reorder)
    b_loads = [s for s in sends(group(split, "k_loop"), SendOp.LOAD) if s.ops.mem.name == "wei"]
    assert [(s.func.kind, s.func.elems) for s in b_loads] == [(SendKind.BLOCK, 128)]
    assert check_kernel(split).ok
    # mad reads B rows as they are: plain
    mad = build("mb2ic32ih6oc32oh6kh3ph1", types="f16", line="fma=mad simd=16 i=ow8oc16ic16 l=ic2kh3kw3")
    assert mad.arg("wei").layout.tag(["oc", "ic", "kh", "kw"]) == "hwio"


def test_slm_buffering_stages_through_shared_memory_between_barriers():
    k = build("ic16ih6oc16oh6kh3ph1", line="fma=mad simd=16 i=ow4oc16ic8 T=ow2oc2 l=ic2kh3kw3 s=x1")
    slm = [n for n in walk(k.body) if isinstance(n, Alloc) and n.kind.value == "slm"]
    assert {a.buf.name for a in slm} == {"a_slm", "b_slm"}
    assert k.slm_bytes == sum(a.size for a in slm)
    body = group(k, "k_loop")
    assert len(calls_in(body, Barrier)) == 2
    assert sends(body, SendOp.STORE, "slm") and sends(body, SendOp.LOAD, "slm")
    # cooperative loads: the threads of the 2x2 group deal the messages by their linear id
    # (each thread's share is one vector message here: the lanes' indices, bound by lets, carry the ids)
    coop = [n for n in walk(body) if isinstance(n, Let) and n.var.name.startswith(("a_g2s", "b_g2s"))]
    assert {n.var.name[0] for n in coop} == {"a", "b"}
    assert all("thread_id0" in str(n.value) and "thread_id1" in str(n.value) for n in coop)


def calls_in(node, func_type):
    return [n for n in walk(node) if isinstance(n, FuncCall) and isinstance(n.func, func_type)]


def test_cooperative_loads_guard_the_last_round():
    # 3 threads share a number of messages that is not a multiple of 3
    k = build("ic16ih6oc16oh6kh3ph1", line="fma=mad simd=16 i=ow2oc16ic4 T=ow3 l=ic4kh3kw3 s=x1.a")
    guards = [n for n in walk(group(k, "k_loop")) if isinstance(n, If)]
    assert guards and all("<" in str(g.cond) for g in guards)


def test_split_reduction_stores_with_atomic_adds_into_a_zeroed_output():
    k = build("ic32ih6oc16oh6kh3ph1", line="fma=mad simd=16 i=ow4oc16ic8 l=ic2kh3kw3")
    assert k.grid[2] == 2
    stores = sends(group(k, "epilogue"))
    assert stores and all(s.func.op is SendOp.ATOMIC_ADD for s in stores)
    assert k.arg("dst").zero_init and not k.arg("src").zero_init


def test_split_reduction_with_post_ops_finishes_in_the_last_group_to_arrive():
    k = build("ic32ih6oc16oh6kh3ph1", line="fma=mad simd=16 i=ow4oc16ic8 l=ic2kh3kw3", post_ops="relu")
    ops = [s.func.op for s in sends(group(k, "epilogue"))]
    # partial sums into the scratch, the count, then (last arrival) the sums back and plain stores
    assert ops.index(SendOp.ATOMIC_FETCH_ADD) > ops.index(SendOp.ATOMIC_ADD)
    assert ops[ops.index(SendOp.ATOMIC_FETCH_ADD) + 1:].count(SendOp.ATOMIC_ADD) == 0
    assert SendOp.STORE in ops and not k.arg("dst").zero_init
    assert k.arg("dst_partial").zero_init and k.arg("dst_partial").role == "scratch"


def test_subtiles_loop_over_parts_of_one_operand():
    k = build("mb2ic32ih6oc32oh6kh3ph1", line="fma=mad simd=16 i=ow4oc32ic8 l=ic4kh3kw3 S=b2")
    sub = [n for n in walk(k.body) if isinstance(n, For) and n.var.name == "b_sub"]
    assert len(sub) == 1 and str(sub[0].bound) == "2"
    b_alloc = next(n for n in walk(k.body) if isinstance(n, Alloc) and n.buf.name == "b")
    assert b_alloc.size == 8 * 16 * 4  # one subtile of 8 x 16 f32, not 8 x 32


def test_b_subtiles_lie_side_by_side_in_slm_and_are_read_in_whole_registers():
    # dpas's VNNI B of 64 columns (xehpc) holds a 16-column subtile in pieces of 32 bytes: SLM holds the
    # four subtiles one after another, each read with 512-byte block messages straight into ``b`` (no
    # staging buffer, no reorder); the weights blocked as dpas's B are copied with block messages.
    k = build("mb2ic32ih8oc64oh8kh3ph1", types="f16", target="xehpc",
              line="fma=dpas simd=16 i=ic32mb2oc64ow4 T=ow2 l=kh3kw3 bufs=3 S=b4")
    body = group(k, "k_loop")
    assert calls_in(body, Reorder) == []
    assert not [a for a in walk(k.body) if isinstance(a, Alloc) and a.buf.name.startswith("b_ld")]
    b_reads = [s for s in sends(body, SendOp.LOAD, "slm") if s.ops.reg.name == "b"]
    assert b_reads and all(s.func.kind is SendKind.BLOCK and s.func.elems * 2 == 512 for s in b_reads)
    b_copies = [s for s in sends(body, None, "global") + sends(body, SendOp.STORE, "slm")
                if s.ops.reg.name == "b_g2s"]
    assert len(b_copies) == 2 and all(s.func.kind is SendKind.BLOCK for s in b_copies)
    result = check_kernel(k)
    assert result.ok, result


def test_unroll_knob_marks_the_reduction_loop():
    k = build("mb2ic32ih6oc32oh6kh3ph1", line="fma=mad simd=16 i=ow4oc16ic8 l=ic4kh3kw3 u=kw3")
    kw = next(n for n in walk(k.body) if isinstance(n, For) and n.var.name == "kw_loop")
    assert kw.unroll == 3


def test_epilogue_applies_post_ops_in_order_and_converts():
    k = build("mb2ic16ih5oc16oh5kh3ph1", types="f16", post_ops="relu+bias+scale:0.5")
    text = "\n".join(str(s) for s in group(k, "epilogue").body.stmts) if isinstance(group(k, "epilogue").body, Seq) \
        else str(group(k, "epilogue"))
    assert text.index("eltwise.relu") < text.index("bias") < text.index("0.5")
    assert [a.name for a in k.args] == ["src", "wei", "dst", "bias"]
    converts = calls_in(group(k, "epilogue"), Reorder)  # f32 -> f16, rounding, before the store
    assert [str(c.func.dst_layout.dtype) for c in converts] == ["f16"]


def test_every_statement_has_an_origin_naming_a_knob():
    k = build("ic16ih6oc17oh6kh3ph1", line="fma=mad simd=16 i=ow4oc16ic8 T=ow2 l=ic2kh3kw3 s=x1",
              post_ops="relu")
    knobs = set(KernelConfig.__dataclass_fields__) | {"post_ops", None}
    for n in walk(k.body):
        if isinstance(n, (Let, For, If, Alloc, FuncCall)):
            assert isinstance(n.origin, Origin), n
            assert n.origin.knob in knobs


@pytest.mark.parametrize("line, message", [
    ("fma=mad simd=16 i=ow4oc16 l=ow2", "loops run over K dims only"),
    ("fma=dpas simd=8 i=ow4oc16", "Xe instruction"),
])
def test_unbuildable_configs_raise_a_build_error_naming_the_knob(line, message):
    with pytest.raises(BuildError, match=message):
        build("ic16ih6oc16oh6kh3ph1", target="sm_90" if "dpas" in line else "xehpg", line=line)


@pytest.mark.parametrize("tg", ["oc2ow4", "oc1ow4"])  # B split between the threads, and shared whole
def test_dpas_operands_come_from_an_fma_ready_slm_layout(tg):
    """B sits in SLM in dpas's VNNI layout, thread tiles one after another: the threads read their
    tile with full-size block messages straight into ``b`` (no staging buffer, no reorder of an
    operand in the loop); each thread's cooperative piece (8 rows of K) is one vector gather
    (``d32x8``, lane n a row of K) that lands in the VNNI layout already, so it is stored with one
    256-byte block message and never reordered; A's rows come in one vector message too and its
    thread tiles lie one after another in SLM (one 256-byte read, one store per thread); and the
    result is right."""
    k = build("mb8ic32ih4oc64oh4kh3ph1", types="f16", tags={"wei": "axcb"},
              line=f"fma=dpas simd=8 i=mb8oc32ic16 T={tg} l=kh3kw3ic2 s=x1")
    body = group(k, "k_loop")
    assert calls_in(body, Reorder) == []
    b_loads = [s for s in sends(body, SendOp.LOAD, "global") if s.ops.reg.name == "b_g2s"]
    assert [(s.func.kind, s.func.lanes, s.func.vec) for s in b_loads] == [(SendKind.SCATTERED, 8, 8)]
    b_reads = [s for s in sends(body, SendOp.LOAD, "slm") if s.ops.reg.name == "b"]
    assert b_reads and all(s.func.kind is SendKind.BLOCK and s.func.elems * 2 == 256 for s in b_reads)
    b_stores = [s for s in sends(body, SendOp.STORE, "slm") if s.ops.mem.name == "b_slm"]
    assert len(b_stores) == 1 and b_stores[0].func.kind is SendKind.BLOCK and b_stores[0].func.elems * 2 == 256
    assert b_stores[0].ops.reg.name == "b_g2s"
    a_loads = [s for s in sends(body, SendOp.LOAD, "global") if s.ops.reg.name == "a_g2s"]
    assert len(a_loads) == 1 and a_loads[0].func.vec > 1
    a_reads = [s for s in sends(body, SendOp.LOAD, "slm") if s.ops.reg.name == "a"]
    assert len(a_reads) == 1 and a_reads[0].func.kind is SendKind.BLOCK and a_reads[0].func.elems * 2 == 256
    a_stores = [s for s in sends(body, SendOp.STORE, "slm") if s.ops.mem.name == "a_slm"]
    # A's padded lanes: the store takes the load's mask, a store of zeros its negation (no zero fill).
    assert [s.ops.reg.name for s in a_stores] == ["a_g2s", "a_zero"]
    assert a_stores[1].ops.mask == Unary.make(Op.NOT, a_stores[0].ops.mask)
    assert not [st for st in walk(body) if isinstance(st, Store) and st.buf.name == "a_g2s"]
    assert not [a for a in walk(k.body) if isinstance(a, Alloc) and a.buf.name.startswith("b_ld")]
    result = check_kernel(k)
    assert result.ok, result


def test_c_is_converted_into_memory_order_and_stored_with_block_messages():
    """dpas leaves C in 8-wide N blocks; the f32 -> f16 conversion reorders it into the destination's
    order (oc contiguous), so each row of the tile is one block store instead of 16-byte scatters."""
    k = build("mb8ic32ih4oc64oh4kh3ph1", types="f16", tags={"wei": "axcb"},
              line="fma=dpas simd=8 i=mb8oc32ic16 T=oc2ow4 l=kh3kw3ic2 s=x1")
    stores = sends(group(k, "epilogue"), SendOp.STORE)
    assert stores and all(s.func.kind is SendKind.BLOCK and s.func.elems * 2 == 64 for s in stores)
    convert = calls_in(group(k, "epilogue"), Reorder)[-1]
    assert convert.ops.dst.name == "c_out" and not convert.func.dst_layout.is_equal(convert.func.src_layout)
    result = check_kernel(k)
    assert result.ok, result


def test_k_slices_and_a_bias_gradient_are_refused_on_tg():
    with pytest.raises(BuildError, match="bias gradient of bwd_w is not summed across them") as err:
        build("mb4ic16ih6oc16oh6kh3ph1", prop="bwd_w", line="fma=mad simd=16 i=ic16oc16 T=mb2", post_ops="bias")
    assert err.value.knob == "tg"


def test_b_with_k_contiguous_is_gathered_straight_into_its_vnni_registers():
    """GEMM B with rows of K (``wei=acb``) on Xe-HPC: 16-lane ``d32x8`` gathers, lane ``n`` a row of K,
    fill dpas's VNNI ``b`` directly (4 messages for 32 x 32 bf16, where rows of 64 bytes took 32 and a
    reorder followed), and the result is right."""
    k = build("2x32x64:2x64x32", prop="fwd", types="bf16:bf16:f32", target="xehpc", tags={"src": "abc", "wei": "acb"})
    loads = [s for s in sends(k.body, SendOp.LOAD) if s.ops.reg.name == "b"]
    assert [(s.func.kind, s.func.lanes, s.func.vec) for s in loads] == [(SendKind.SCATTERED, 16, 8)]
    assert not [r for r in calls(k, Reorder) if r.ops.dst.name == "b"]
    result = check_kernel(k)
    assert result.ok, result
