"""The tile-to-message plan on oneDNN's kind of tiles: blocked weights with a channel tail move in block
messages, and loads masked only on rows or columns no stored result reads take no zero fill."""
import pytest

from builder_cases import problem
from kdd.core.builder import build_kernel
from kdd.core.config.line import parse_config_line
from kdd.core.interp.check import check_kernel
from kdd.core.ir import FuncCall, walk
from kdd.core.ir.funcs import Reorder, Send, Send2D, SendKind, SendOp
from kdd.core.ir.stmt import Store
from kdd.core.problem import parse_shape


def _kernel(shape: str, line: str, prop: str = "fwd"):
    p = problem(parse_shape(shape), prop, "f16")
    dims = [n for r in "bmnk" for n, _ in getattr(p.gemm_dims(), r)]
    return build_kernel(p, parse_config_line(line, dims), "xehpg")


def _sends(kernel, mem: str) -> list:
    return [n for n in walk(kernel.body) if isinstance(n, FuncCall) and isinstance(n.func, Send)
            and n.ops.mem.name == mem]


def _stored_buffers(kernel) -> set[str]:
    return {n.buf.name for n in walk(kernel.body) if isinstance(n, Store)}


@pytest.mark.parametrize("line", ["fma=dpas simd=8 l=ic2kh3kw3 T=oc2 i=ic16oc32ow8",       # each thread its B
                                  "fma=dpas simd=8 l=ic2kh3kw3 T=oc2ow2 i=ic16oc32ow8"])   # B copied through SLM
def test_blocked_weights_with_a_channel_tail_load_in_blocks_without_zero_fill(line):
    """oc 80 under tiles of 32 (a thread) and 64 (a group): the tail falls on a whole block of the weights'
    8 channels, so a message of the blocked layout is all in or all out and takes the tail as one mask;
    the channels past 80 reach only columns of C that are never stored, so their registers need no zeros
    (fresh registers are NaN in the interpreter: a stray read would show)."""
    kernel = _kernel("mb1ic32ih4iw8oc80oh4ow8kh3kw3ph1pw1", line)
    loads = _sends(kernel, "wei")
    assert loads and all(s.func.kind is SendKind.BLOCK and s.func.op is SendOp.LOAD for s in loads)
    assert not any(name.startswith("b") for name in _stored_buffers(kernel))  # no fill of b or b_g2s
    assert check_kernel(kernel).ok


def test_loads_masked_by_a_view_mask_keep_their_zeros():
    """bwd_d with strides: the rows the stride skips are real rows of diff_src whose sums are zero, so a
    load masked by that view mask (even one reading only M dims) keeps its zero fill."""
    kernel = _kernel("ic16ih9iw6oc16oh3ow3kh1kw1sh4sw2ph0pw0", "fma=dpas simd=8 i=ic16iw8oc16", "bwd_d")
    assert check_kernel(kernel).ok


def test_a_padded_convolution_source_loads_in_2d_blocks_whose_surface_gives_the_zeros():
    """Xe-HPC, A straight from global memory: the input row ``iw = ow + kw - 1`` is the surface's row and
    ``ic`` (tail 48 under 64) its column, so the surface's edges read the padding and the channel tail
    as zeros; the row of the kernel tap ``ih = oh + kh - 1`` holds for the whole message, and where it
    is padding the block starts above the surface. One message of 16 rows x 2 K halves per step."""
    p = problem(parse_shape("mb1ic48ih4iw16oc32oh4ow16kh3kw3ph1pw1"), "fwd", "f16")
    dims = [n for r in "bmnk" for n, _ in getattr(p.gemm_dims(), r)]
    kernel = build_kernel(p, parse_config_line("fma=dpas simd=16 l=ic2kh3kw3 i=ic32oc32ow16 bufs=0", dims), "xehpc")
    loads = [n for n in walk(kernel.body) if isinstance(n, FuncCall) and isinstance(n.func, Send2D)]
    assert [s.ops.mem.name for s in loads] == ["src"] and loads[0].func.height == 16
    assert _sends(kernel, "src") == []
    assert check_kernel(kernel).ok


def test_rows_over_two_pixel_dims_load_in_2d_blocks_a_message_inside_each_image():
    """Xe-HPC, A straight from global memory with the thread's M over ``mb2 ow16``: the surface's rows are
    ``iw`` (the innermost of M's dims) and each message stays inside one image, whose ``mb`` then holds
    for the whole message like ``ih`` does. Two messages of 16 rows x 2 K halves per step, not 64 block
    messages of 32 bytes with their zero fills and bounce moves."""
    p = problem(parse_shape("mb2ic64ih4iw16oc32oh4ow16kh3kw3ph1pw1"), "fwd", "f16")
    dims = [n for r in "bmnk" for n, _ in getattr(p.gemm_dims(), r)]
    kernel = build_kernel(p, parse_config_line("fma=dpas simd=16 l=ic2kh3kw3 i=ic32mb2oc32ow16 bufs=0", dims),
                          "xehpc")
    loads = [n for n in walk(kernel.body) if isinstance(n, FuncCall) and isinstance(n.func, Send2D)]
    assert {s.ops.mem.name for s in loads} == {"src"} and all(s.func.height == 16 for s in loads)
    assert _sends(kernel, "src") == []
    assert check_kernel(kernel).ok


def test_a_tail_that_the_tile_does_not_divide_shortens_the_block_messages():
    """oc 80 under a group tile of 64 channels, weights `hwio` (oc contiguous): the tail (16 channels into
    the second tile) falls on a multiple of 16, so the copy's rows move in block messages of 16 channels,
    each all in or all out, not one element per lane."""
    p = problem(parse_shape("mb1ic16ih4iw8oc80oh4ow8kh3kw3ph1pw1"), "fwd", "f16", tags={"wei": "hwio"})
    dims = [n for r in "bmnk" for n, _ in getattr(p.gemm_dims(), r)]
    kernel = build_kernel(p, parse_config_line("fma=dpas simd=8 l=kh3kw3 T=oc2ow2 i=ic16oc32ow8", dims), "xehpg")
    loads = _sends(kernel, "wei")
    assert loads and all(s.func.kind is SendKind.BLOCK for s in loads)
    assert check_kernel(kernel).ok


def test_a_depthwise_row_of_eight_channels_is_one_block_message():
    """Depthwise f16 with the channels in 8 lanes: a pixel's 8 channels are 16 contiguous bytes, as many
    elements as a scattered message moves, so one block message (one address) loads them, not an
    8-lane gather with an address per lane. With 17 channels the pixels lie 34 bytes apart, off a
    dword, and the gathers stay."""
    kernel = _kernel("mb2g40ic40ih6oc40oh6kh3ph1", "fma=mad simd=8 l=kh3 i=g8mb2kw3 s=x0")
    loads = _sends(kernel, "src")
    assert loads and all(s.func.kind is SendKind.BLOCK and s.func.elems == 8 for s in loads)
    assert check_kernel(kernel).ok
    odd = _sends(_kernel("mb2g17ic17ih6oc17oh6kh3ph1", "fma=mad simd=8 l=kh3 i=g8mb2kw3 s=x0"), "src")
    assert odd and all(s.func.kind is SendKind.SCATTERED for s in odd)


def test_k_takes_the_source_channels_innermost_and_slm_rows_run_across_taps():
    """oneDNN's grouped line ``i=ic8kw4mb12oc8`` (8 channels a group): with the taps innermost in K, A's
    copy moved one 16-bit element a lane (the taps of a channel lie a pixel apart). K's order is the
    kernel's own, so the channels go innermost: a pixel's 8 channels (16 bytes) are a run, gathered 4
    dwords a lane; in SLM a tap's channels are followed by the next tap's, so each dpas row of 16 K is
    one 32-byte block read."""
    p = problem(parse_shape("g2mb16ic16ih8iw16oc16oh8ow16kh3kw3ph1pw1"), "fwd", "f16")
    dims = [n for r in "bmnk" for n, _ in getattr(p.gemm_dims(), r)]
    kernel = build_kernel(p, parse_config_line("fma=dpas simd=8 l=kh3 T=ow8 i=ic8kw4mb12oc8 bufs=2", dims), "xehpg")
    loads = _sends(kernel, "src")
    assert loads and all(s.func.vec == 4 for s in loads)
    reads = [s for s in _sends(kernel, "a_slm") if s.func.op is SendOp.LOAD]
    assert reads and all(s.func.kind is SendKind.BLOCK and s.func.elems == 16 for s in reads)
    assert check_kernel(kernel).ok


def test_runs_shorter_than_a_block_message_are_gathered_a_run_a_lane():
    """oneDNN's grouped line ``i=ic4kw4mb32oc8`` (4 channels a group): a pixel's channels are 8 bytes,
    under any block message, and the copy moved them one 16-bit element a lane; as rows they are what
    vector messages gather (2 dwords a lane), mirrored by the SLM stores."""
    p = problem(parse_shape("g2mb32ic8ih16oc8oh16kh3ph1"), "fwd", "f16")
    dims = [n for r in "bmnk" for n, _ in getattr(p.gemm_dims(), r)]
    kernel = build_kernel(p, parse_config_line("fma=dpas simd=8 l=kh3 T=ow8 i=ic4kw4mb32oc8 bufs=2", dims), "xehpg")
    loads = _sends(kernel, "src")
    assert loads and all(s.func.vec == 2 for s in loads)
    assert check_kernel(kernel).ok


def test_gathered_pixel_rows_store_to_slm_mirrored_without_a_reorder():
    """Xe-HPC, A copied through SLM in columns (stride 2: a pixel's 8 channels, 16 bytes, a lane of a
    16-lane vector gather): the thread's piece of the FMA-ready SLM tile holds the gathered rows in their
    row-major order, so the gather's registers (dword-major) go to SLM by the same message mirrored,
    lane ``l`` at the piece's start + 16 l, instead of a reorder into rows and a block store."""
    p = problem(parse_shape("mb1ic64ih4iw64oc64oh2ow32kh3kw3sh2sw2ph1pw1"), "fwd", "f16")
    dims = [n for r in "bmnk" for n, _ in getattr(p.gemm_dims(), r)]
    kernel = build_kernel(p, parse_config_line("fma=dpas simd=16 l=ic2kh3kw3 T=oc4ow2 i=ic32oc16ow16", dims),
                          "xehpc")
    stores = [s for s in _sends(kernel, "a_slm") if s.func.op is SendOp.STORE]
    assert stores and all(s.func.kind is SendKind.SCATTERED and s.func.vec == 4 for s in stores)
    staged = stores[0].args[2].name  # the gather's registers, stored as they are
    assert not any(isinstance(n, FuncCall) and isinstance(n.func, Reorder) and n.args[0].name == staged
                   for n in walk(kernel.body))
    assert check_kernel(kernel).ok


def test_a_thread_tile_over_two_pixel_dims_reads_slm_in_whole_registers():
    """Xe-HPC, A staged in SLM with the thread's M over ``mb2 ow8`` and the group's 4 threads along
    ``ow``: M takes ``ow`` outermost (the order the group tile has), so the thread tiles lie one after
    another in the group's M and SLM holds them FMA-ready: each thread reads its 1 KiB in two 512-byte
    block messages, not 32 rows of 32 bytes (two to a 64-byte register), and the cooperative copy's
    lanes store their 32-byte pieces where that layout places them."""
    p = problem(parse_shape("mb2ic64ih2iw32oc64oh2ow32kh3kw3ph1pw1"), "fwd", "f16")
    dims = [n for r in "bmnk" for n, _ in getattr(p.gemm_dims(), r)]
    kernel = build_kernel(p, parse_config_line("fma=dpas simd=16 l=ic2kh3kw3 T=ow4 i=ic32mb2oc32ow8 bufs=3", dims),
                          "xehpc")
    reads = [s for s in _sends(kernel, "a_slm") if s.func.op is SendOp.LOAD]
    assert reads and all(s.func.kind is SendKind.BLOCK and s.func.elems * 2 == 512 for s in reads)
    stores = [s for s in _sends(kernel, "a_slm") if s.func.op is SendOp.STORE]
    assert stores and all(s.func.kind is SendKind.SCATTERED for s in stores)
    assert check_kernel(kernel).ok


def test_a_tile_every_thread_reads_whole_is_copied_by_a_gather_whose_lanes_store_in_place():
    """Xe-HPC, a 1x1 convolution's A staged in SLM under threads along ``oc`` (each thread reads the whole
    A tile): its FMA-ready layout splits a pixel's 64-byte row into two 32-byte K halves, so a copy of
    row messages loaded 16 rows of 64 bytes a thread and stored 32 halves (a bounce ``mov`` each). The
    copy is a 32-lane gather of 32-byte pieces instead, each lane storing its piece where the layout
    places it: one load and one store, no reorder."""
    p = problem(parse_shape("mb1ic64iw64oc128ow64kw1pw0"), "fwd", "f16")
    dims = [n for r in "bmnk" for n, _ in getattr(p.gemm_dims(), r)]
    kernel = build_kernel(p, parse_config_line("fma=dpas simd=16 l=ic2 T=oc2 i=ic32oc32ow32 bufs=3", dims),
                          "xehpc")
    stores = [s for s in _sends(kernel, "a_slm") if s.func.op is SendOp.STORE]
    assert len(stores) == 1 and stores[0].func.kind is SendKind.SCATTERED and stores[0].func.vec == 8
    loads = _sends(kernel, "src")
    assert len(loads) == 1 and loads[0].func.kind is SendKind.SCATTERED
    staged = stores[0].args[2].name  # the gather's registers, stored as they are
    assert not any(isinstance(n, FuncCall) and isinstance(n.func, Reorder) and n.args[0].name == staged
                   for n in walk(kernel.body))
    assert check_kernel(kernel).ok


def test_a_one_thread_weights_copy_packs_its_rows_into_vnni_and_stores_blocks():
    """Xe-HPC, ``ic4 kw4`` folded into K with one thread (``T=x``): B's rows of ``oc`` pair two K rows in
    a VNNI dword, so SLM stores of the staged rows were 16-bit scatters (64 a step, each with its address
    vector); the thread's run is the whole tile, one piece of the FMA-ready layout, so its rows are read
    by block messages, reordered once and stored with block messages."""
    p = problem(parse_shape("mb1ic4ih8iw32oc128oh8ow32kh3kw3ph1pw1"), "fwd", "f16")
    dims = [n for r in "bmnk" for n, _ in getattr(p.gemm_dims(), r)]
    kernel = build_kernel(p, parse_config_line("fma=dpas simd=16 l=kh3 T=x i=ic4kw4oc64ow16 bufs=3", dims),
                          "xehpc")
    stores = [s for s in _sends(kernel, "b_slm") if s.func.op is SendOp.STORE]
    assert stores and all(s.func.kind is SendKind.BLOCK for s in stores)
    loads = _sends(kernel, "wei")
    assert loads and all(s.func.kind is SendKind.BLOCK for s in loads)
    assert any(isinstance(n, FuncCall) and isinstance(n.func, Reorder) for n in walk(kernel.body))
    assert check_kernel(kernel).ok


def test_weights_of_a_short_channel_dim_load_their_real_rows_in_blocks():
    """xehpg, ``oc6`` under an 8-wide B tile, weights ``hwio``: the padded tile's rows (16 bytes, 12 of
    them real) made 16-bit gathers, 16 a step; the tile holds ``oc`` whole, so its real rows are one
    192-byte run of memory: block messages into a staging tile of the real rows, one reorder into
    dpas's VNNI B (its padding columns reach no stored result)."""
    p = problem(parse_shape("mb1ic32ih5oc6oh5kh3ph1"), "fwd", "f16", tags={"wei": "hwio"})
    dims = [n for r in "bmnk" for n, _ in getattr(p.gemm_dims(), r)]
    kernel = build_kernel(p, parse_config_line("fma=dpas simd=8 l=ic2kh3kw3 i=ic16oc8ow8 bufs=0", dims), "xehpg")
    loads = _sends(kernel, "wei")
    assert loads and all(s.func.kind is SendKind.BLOCK for s in loads)
    assert sum(s.func.elems for s in loads) == 16 * 6
    assert any(isinstance(n, FuncCall) and isinstance(n.func, Reorder) for n in walk(kernel.body))
    assert check_kernel(kernel).ok
