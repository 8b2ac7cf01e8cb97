"""The main loop's figures per reduction iteration, on hand-made IR whose counts are known, and on the
shipped examples through the engine (validated against the protocol schema)."""
import pytest
from passes_kernels import example_kernel, example_names
from protocol_schemas import validator

from kdd.core.ir.expr import Broadcast, Var, const
from kdd.core.ir.funcs import Dpas, Reorder, Send, SendKind, SendOp
from kdd.core.ir.stmt import For, FuncCall, Group, Let, Store, seq
from kdd.core.ir.types import Type, f16, f32, s32
from kdd.core.layout.layout import Layout
from kdd.core.passes.kernel_pipeline import run_pipeline
from kdd.core.passes.loop_stats import loop_stats
from kdd.core.targets import SM90, XEHPG, get_target

C, A, B, B_LD, HDR, MEM, SLM = (Var.make(Type.parse("u8"), n) for n in ("c", "a", "b", "b_ld", "hdr", "src", "slm"))
DPAS = Dpas(8, 8, 8, f32, f16, f16)


def dpas(n_off: int):
    return FuncCall.make(DPAS, [C, n_off, C, n_off, B, n_off, A, 0])


def send(op, kind, space, elems, buf, reg, off=0):
    mask = Broadcast.make(const(True), elems) if kind is SendKind.SCATTERED else const(True)
    offset = Broadcast.make(const(0), elems) if kind is SendKind.SCATTERED else const(off)
    return FuncCall.make(Send(op, kind, space, f16, elems), [buf, offset, reg, 0, mask])


def built():
    """One reduction iteration: 2 dpas; 12 iterations."""
    k = Var.make(s32, "k")
    return Group.make("k_loop", For.make(k, 0, 12, seq(dpas(0), dpas(256))))


def final(unroll: int = 3):
    """The same 12 iterations, 3 per trip: per trip 6 dpas, one reorder of B, 3 global block loads of
    64 B, one scattered SLM load of 16 f16, a header written from a let (1 add + 1 mul) and a move."""
    k = Var.make(s32, "k")
    x = Var.make(s32, "x")
    layout = Layout.dense(f16, (16, 16), [(0, 16), (1, 16)])
    body = seq(
        Let.make(x, k * 64 + 5, seq(
            Store.make(HDR, 0, x),
            *[send(SendOp.LOAD, SendKind.BLOCK, "global", 32, MEM, B_LD, 64 * i) for i in range(3)],
            send(SendOp.LOAD, SendKind.SCATTERED, "slm", 16, SLM, B_LD),
            FuncCall.make(Reorder(layout, layout), [B_LD, 0, B, 0]),
            *[dpas(256 * (i % 2)) for i in range(2 * unroll)])))
    return Group.make("k_loop", For.make(k, 0, 12, body, step=unroll))


def test_hand_made_loop_per_iteration():
    s = loop_stats(built(), final(), XEHPG)
    assert s.fma == "dpas" and s.iterations_per_trip == 3
    assert s.dpas == 2
    assert s.by_kind == {"load.block.global": {"count": 1.0, "bytes": 64.0},
                         "load.scattered.slm": {"count": 0.33, "bytes": 10.67}}
    assert s.sends == 1.33 and s.send_bytes == 74.67
    # an iteration's 64 global bytes need one 256-byte message, its 10.67 SLM bytes another
    assert s.min_sends == 2
    # per trip: k*64 (mul), + 5 (add), the loop's increment and compare: 4 int ops over 3 iterations
    assert s.int_ops == 1.33 and s.float_ops == 0
    # per trip: a 512-byte reorder in 64-byte (16 lanes x 4 B) moves, 8, and the header's move
    assert s.moves == 3 and s.operand_reorders == 0.33


def test_alu_lanes_come_from_the_target():
    # sm_90's instruction covers 32 lanes x 4 B: the 512-byte reorder is 4 moves, plus the header's
    assert loop_stats(built(), final(), SM90).moves == round(5 / 3, 2)


def test_fully_unrolled_reduction_is_the_main_loop():
    body = seq(*[dpas(0) for _ in range(24)])
    s = loop_stats(built(), Group.make("k_loop", body), XEHPG)
    assert s.iterations_per_trip == 12 and s.dpas == 2 and s.int_ops == 0


def test_no_reduction_no_loop():
    assert loop_stats(dpas(0), dpas(0), XEHPG) is None


@pytest.mark.parametrize("name", example_names())
def test_examples_have_a_main_loop_matching_the_schema(name):
    # The whole `kdd compile --emit stats --json` document is validated in tests/server/test_protocol.py.
    kernel = example_kernel(name, full_shape=True)
    trace = run_pipeline(kernel)
    stats = loop_stats(trace.input, trace.final, get_target(kernel.target))
    if kernel.config.schedule != "classic":     # warpgroup MMAs fed by tensor copies: no main-loop figures yet
        assert stats is None
        return
    loop = stats.to_dict()
    validator("compile.schema.json", "loop").validate(loop)
    assert loop["dpas"] > 0 and loop["min_sends"] > 0
    # min_sends counts block messages; a scattered vector message may move more (16 lanes of 8 dwords), so
    # the true floor is the bytes over the largest message of either kind.
    m = get_target(kernel.target).messages
    largest = max(m.block, m.scattered_lanes * max(m.vectors) * max(m.vector_bytes or (4,)))
    assert loop["sends"] >= loop["send_bytes"] / largest - 0.05
    assert loop["send_bytes"] == pytest.approx(sum(v["bytes"] for v in loop["by_kind"].values()), abs=0.05)


def test_a_negated_send_mask_is_the_predicate_inverted():
    """A store of zeros predicated on ``!m`` costs no operation beyond ``m`` (Xe predicates on
    ``~f0.0``); ``m`` itself, a comparison, costs one."""
    k = Var.make(s32, "k")
    m = k.lt(6)
    store = Send(SendOp.STORE, SendKind.BLOCK, "slm", f16, 16)
    body = seq(FuncCall.make(store, [SLM, 0, B, 0, m]), FuncCall.make(store, [SLM, 0, A, 0, m.lnot()]),
               dpas(0), dpas(256))
    s = loop_stats(built(), Group.make("k_loop", For.make(k, 0, 12, body)), XEHPG)
    # per trip: two comparisons (one per send), the loop's increment and compare
    assert s.int_ops == 4


def test_2d_block_loads_count_as_sends_and_set_the_least_global_loads():
    """gemm_bert (Xe-HPC): A's 64 x 32 bf16 tile is 4 ``load_block2d`` of 16 x 16 x 2 (1024 B each, A's
    registers holding 16 rows of a K block together) instead of 128 rows of 32 B; the least messages count
    global loads at the largest 2D block, within the 31 registers one message writes (64 B x 31 rows =
    1984 B): 4096 + 2048 bytes need 4."""
    kernel = example_kernel("gemm_bert", full_shape=True)
    trace = run_pipeline(kernel)
    loop = loop_stats(trace.input, trace.final, get_target(kernel.target)).to_dict()
    assert loop["by_kind"]["load.block2d.global"] == {"count": 4, "bytes": 4096}
    assert loop["sends"] == 8 and loop["min_sends"] == 4
