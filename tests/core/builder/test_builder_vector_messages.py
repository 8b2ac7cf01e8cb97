"""Vector scattered messages for short rows: which plans the builder picks, and where they put the data."""
import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from builder_cases import problem
from kdd.core.builder import build_kernel
from kdd.core.builder.loads import MessagePlan, MessageRules, VectorPlan, plan_vectors
from kdd.core.builder.tile import RegTensor
from kdd.core.config.line import parse_config_line
from kdd.core.interp.check import check_kernel
from kdd.core.ir import FuncCall, evaluate, var, walk
from kdd.core.ir.expr import Binary, Op
from kdd.core.ir.funcs import Send, SendKind, SendOp
from kdd.core.ir.types import f16, f32, s8, u64
from kdd.core.layout.layout import Block, Layout
from kdd.core.problem import parse_shape

XEHPG = MessageRules(8, 256, vectors=(1, 2, 3, 4, 8), vector_lanes=8)


def test_rows_of_32_bytes_become_one_vector_message():
    # 8 rows of 16 f16: 8 lanes, a row each
    assert plan_vectors(MessagePlan(SendKind.BLOCK, 16, 8), 8, 2, XEHPG) == VectorPlan(8, 8, 1)
    # 4 rows: half rows on 8 lanes, so the lanes fill a register
    assert plan_vectors(MessagePlan(SendKind.BLOCK, 16, 4), 4, 2, XEHPG) == VectorPlan(8, 4, 1)
    # 16 rows: two messages of 8 lanes
    assert plan_vectors(MessagePlan(SendKind.BLOCK, 16, 16), 16, 2, XEHPG) == VectorPlan(8, 8, 2)
    # lanes walking rows: 16 rows of 32 f16 on 8 lanes, each row in two pieces -> 4 messages
    assert plan_vectors(MessagePlan(SendKind.BLOCK, 32, 16), 16, 2, XEHPG, by_rows=True) == VectorPlan(8, 8, 4, 16)


def test_no_vectors_where_they_do_not_save_a_message():
    assert plan_vectors(MessagePlan(SendKind.BLOCK, 128, 4), 4, 2, XEHPG) is None   # full-size rows
    assert plan_vectors(MessagePlan(SendKind.BLOCK, 16, 1), 1, 2, XEHPG) is None    # one row of 8 dwords
    assert plan_vectors(MessagePlan(SendKind.SCATTERED, 8, 8), 8, 2, XEHPG) is None
    assert plan_vectors(MessagePlan(SendKind.BLOCK, 16, 8), 8, 2, MessageRules(8, 256)) is None  # no vectors


def _oracle_position(i, plan: VectorPlan, pe: int, elems: int) -> int:
    """Element ``i`` of the thread's run: dword ``i // pe`` is dword ``v`` of piece ``p``; piece ``p`` is
    lane ``p % lanes`` of message ``p // lanes`` (or, lanes walking rows, piece ``h`` of row ``r`` is lane
    ``r % lanes`` of message ``h * (rows / lanes) + r // lanes``); the message's data is vector element by
    vector element."""
    word, w = divmod(i, pe)
    p, v = divmod(word, plan.vec)
    if plan.rows:
        r, h = i // elems, (i % elems) // pe // plan.vec
        b, lane = divmod(r, plan.lanes)
        q = h * (plan.rows // plan.lanes) + b
    else:
        q, lane = divmod(p, plan.lanes)
    return ((q * plan.vec + v) * plan.lanes + lane) * pe + w


@settings(max_examples=60, deadline=None)
@given(dtype=st.sampled_from((f16, f32, s8)), rows=st.sampled_from((1, 2, 4, 8, 16, 32)),
       row_dwords=st.sampled_from((1, 2, 4, 8, 16)), order=st.permutations((0, 1, 2)), split=st.integers(0, 5),
       by_rows=st.booleans())
def test_the_staging_layout_is_where_the_messages_put_each_element(dtype, rows, row_dwords, order, split, by_rows):
    pe = 4 // dtype.size
    elems = row_dwords * pe
    plan = plan_vectors(MessagePlan(SendKind.BLOCK, elems, rows), rows, dtype.size, XEHPG, by_rows)
    if plan is None:
        return
    # the box: rows over the two outer dims (split between them), the row along the innermost
    outer = [2 ** min(split, rows.bit_length() - 1), 0]
    outer[1] = rows // outer[0]
    box = [0, 0, 0]
    box[order[2]], box[order[1]], box[order[0]] = elems, outer[0], outer[1]
    layout = plan.layout(dtype, tuple(box), tuple(order))
    for index in itertools.product(*(range(n) for n in box)):
        flat = 0
        for d in order:  # row-major in ``order``
            flat = flat * box[d] + index[d]
        assert layout.offset_of(index) == _oracle_position(flat, plan, pe, elems)


_COLUMNS = Layout(f16, (1, 16, 128), (Block(2, 8, 1), Block(1, 16, 8), Block(2, 16, 128)))


@settings(max_examples=80, deadline=None)
@given(base=st.one_of(st.integers(0, 2047), st.integers(0, 31).map(lambda k: k * 64)),
       stride=st.sampled_from((1, 8, 128)), lanes=st.sampled_from((2, 4, 8)))
def test_a_ramp_of_positions_decodes_without_vector_division(base, stride, lanes):
    """``decode_ramp``: the lanes' matrix indices are the base's plus a constant ramp along the one dim
    whose digit they step, equal lane by lane to decoding each position; refused where they would carry."""
    reg = RegTensor(var("r", u64), _COLUMNS)
    b = var("b")
    align = base & -base if base else 0
    out = reg.decode_ramp(b, stride, lanes, align, bound=reg.elems)
    if out is None:
        assert align % (stride * lanes)  # refused only where the lanes could carry
        return
    assert not [n for e in out for n in walk(e) if isinstance(n, Binary) and n.op in (Op.DIV, Op.MOD)
                and n.type.lanes > 1]
    for lane in range(lanes):
        want = [evaluate(x, {"b": base + lane * stride}) for x in reg.decode(b, bound=reg.elems)]
        got = [evaluate(x, {"b": base}) for x in out]
        got = [v[lane] if isinstance(v, tuple) else v for v in got]
        assert got == want


def test_weights_with_n_contiguous_are_copied_in_columns_and_stored_as_blocks():
    """res3a's weights written plain (``hwio``: a row of 128 output channels per input channel; ``any``
    is blocked as dpas's B instead): each thread gathers 16 K rows of 8 columns with vector messages
    (a lane a row), reorders them once into dpas's VNNI block and stores it with one block message,
    not 16 two-byte scatters."""
    p = problem(parse_shape("mb2ic128ih4oc128oh4kh3ph1"), "fwd", "f16", {"wei": "hwio"})
    dims = [n for r in "bmnk" for n, _ in getattr(p.gemm_dims(), r)]
    kernel = build_kernel(p, parse_config_line("fma=dpas simd=8 i=oh2ow4oc32ic16 T=mb2oh2oc4", dims), "xehpg")
    sends = [n for n in walk(kernel.body) if isinstance(n, FuncCall) and isinstance(n.func, Send)]
    to_b = [s for s in sends if s.func.op is SendOp.STORE and s.ops.mem.name.startswith("b_slm")]
    assert to_b and all(s.func.kind is SendKind.BLOCK for s in to_b)
    from_wei = [s for s in sends if s.func.op is SendOp.LOAD and s.ops.mem.name == "wei"]
    assert from_wei and all(s.func.kind is SendKind.SCATTERED and s.func.vec == 4 for s in from_wei)
    assert check_kernel(kernel).ok


def test_a_column_copy_whose_pieces_would_overlap_falls_back_to_scatters():
    """oneDNN's xehpg bwd_d line ``T=ic4iw8 i=ic32mb16oc32``: the weights' FMA-ready layout nests K
    rows outside the column chunks, so the column copy's thread pieces would overlap in SLM (two
    threads storing the same bytes). The builder checks that the pieces tile the SLM tile and copies
    this tile the other way; the check (with its SLM race detector) passes."""
    p = problem(parse_shape("mb16ic64iw24oc64ow24kw1pw0"), "bwd_d", "f16")
    dims = [n for r in "bmnk" for n, _ in getattr(p.gemm_dims(), r)]
    line = parse_config_line("fma=dpas simd=8 l=oc16 T=ic4iw8 i=ic32mb16oc32 bufs=3", dims)
    kernel = build_kernel(p, line, "xehpg")
    stores = [n for n in walk(kernel.body) if isinstance(n, FuncCall) and isinstance(n.func, Send)
              and n.func.op is SendOp.STORE and n.ops.mem.name.startswith("b_slm")]
    assert stores
    assert check_kernel(kernel).ok


def test_weights_blocked_by_the_column_chunk_are_copied_as_one_block_per_thread():
    """``ABcd16b16a`` weights (the ``blocked`` example's): a thread's box of the column copy, 8 K rows of
    the 16-channel chunk, is 256 contiguous bytes in memory: one block load with one address (no lane a
    row), one reorder of whole rows into dpas's VNNI pairs, one block store; the result is right."""
    p = problem(parse_shape("mb32ic64ih4oc64oh4kh3ph1"), "fwd", "f16",
                {"src": "NChw32n32c", "wei": "ABcd16b16a", "dst": "NChw32n32c"})
    dims = [n for r in "bmnk" for n, _ in getattr(p.gemm_dims(), r)]
    line = parse_config_line("fma=dpas simd=16 regs=256 l=ic4kh3kw3 T=oh4oc2 i=mb32ow2oc32ic16 s=x1", dims)
    kernel = build_kernel(p, line, "xehpc")
    sends = [n for n in walk(kernel.body) if isinstance(n, FuncCall) and isinstance(n.func, Send)]
    from_wei = [s for s in sends if s.func.op is SendOp.LOAD and s.ops.mem.name == "wei"]
    assert from_wei and all(s.func.kind is SendKind.BLOCK and s.func.elems * s.func.type.size == 256
                            for s in from_wei)
    to_b = [s for s in sends if s.func.op is SendOp.STORE and s.ops.mem.name.startswith("b_slm")]
    assert to_b and all(s.func.kind is SendKind.BLOCK for s in to_b)
    assert check_kernel(kernel).ok
