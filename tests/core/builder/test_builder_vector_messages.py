"""Vector scattered messages for short rows: which plans the builder picks, and where they put the data."""
import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.builder.loads import MessagePlan, MessageRules, VectorPlan, plan_vectors
from kdd.core.ir.funcs import SendKind
from kdd.core.ir.types import f16, f32, s8

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
