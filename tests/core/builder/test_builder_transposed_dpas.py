"""dpas in its transposed form (``C^T = B^T A^T``: M in the lanes, A the VNNI operand) where A comes
straight from global memory in short rows: each vector gather moves ``simd`` pixels' 16 channels and lands
them as dpas's ``src1``, where the plain form takes one block message a pixel. Each case is checked in
the interpreter against the float64 reference (fresh registers are NaN there: a stray read would show)."""
import pytest

from builder_cases import problem
from kdd.core.builder import build_kernel
from kdd.core.config.line import parse_config_line
from kdd.core.interp.check import check_kernel
from kdd.core.ir import FuncCall, walk
from kdd.core.ir.funcs import Dpas, Send, SendKind
from kdd.core.problem import parse_shape


def _kernel(shape: str, line: str, target: str = "xehpg"):
    p = problem(parse_shape(shape), "fwd", "f16")
    dims = [n for r in "bmnk" for n, _ in getattr(p.gemm_dims(), r)]
    return build_kernel(p, parse_config_line(line, dims), target)


def _calls(kernel, kind) -> list:
    return [n for n in walk(kernel.body) if isinstance(n, FuncCall) and isinstance(n.func, kind)]


def _wei_tag(kernel) -> str:
    return kernel.arg("wei").layout.tag(["oc", "ic", "kh", "kw"])


@pytest.mark.parametrize("shape, line", [
    # 8 pixels x 16 channels a step: one gather of 8 lanes x 8 dwords instead of 8 row messages
    ("mb2ic32ih6oc32oh6kh3ph1", "fma=dpas simd=8 i=ow8oc16ic16 l=ic2kh3kw3"),
    # mb2 x ow12 rows (3 gathers a step), padded rows at both image edges, oc 24 under tiles of 16 (a tail)
    ("mb2ic32ih5iw12oc24oh5ow12kh3kw3ph1pw1", "fma=dpas simd=8 i=mb2ow12oc16ic16 l=ic2kh3kw3"),
    # rows of 32 channels (two K blocks) and M 14 padded to 16: a gather a K block and 8 rows (4 a step)
    ("mb1ic64ih4iw14oc16oh4ow14kh3kw3ph1pw1", "fma=dpas simd=8 i=ow14oc16ic32 l=ic2kh3kw3"),
])
def test_a_from_global_in_short_rows_gathers_whole_vnni_operands(shape, line):
    kernel = _kernel(shape, line)
    dpas = _calls(kernel, Dpas)
    assert dpas and all(c.ops.src1.name == "a" and c.ops.src2.name == "b" for c in dpas)
    a_loads = [c for c in _calls(kernel, Send) if c.ops.mem.name == "src"]
    assert a_loads and all((c.func.kind, c.func.vec, c.func.elems) == (SendKind.SCATTERED, 8, 64) for c in a_loads)
    # wei = any: 8 columns of 16 channels each, a dpas's src2 one 256-byte run
    assert _wei_tag(kernel) == "hwIO8o16i"
    assert check_kernel(kernel).ok


def test_a_staged_in_slm_or_loaded_in_2d_blocks_keeps_the_plain_form():
    staged = _kernel("mb2ic32ih6oc32oh6kh3ph1", "fma=dpas simd=8 i=ow8oc16ic16 T=ow2 l=ic2kh3kw3 s=x1.a")
    assert all(c.ops.src2.name == "a" for c in _calls(staged, Dpas)) and _wei_tag(staged) == "hwIO8i8o2i"
    # B staged with the group's threads splitting K: each thread reads its K slice of the transposed
    # B's rows (32-byte pieces), more messages than the VNNI tile's blocks
    split_k = _kernel("mb2ic32ih6oc32oh6kh3ph1", "fma=dpas simd=8 i=ow8oc16ic16 T=ic2 l=kh3kw3 s=x1.b")
    assert all(c.ops.src2.name == "a" for c in _calls(split_k, Dpas))
    hpc = _kernel("mb1ic32ih4iw16oc32oh4ow16kh3kw3ph1pw1", "fma=dpas simd=16 l=ic2kh3kw3 i=ic16oc32ow16 bufs=0",
                  "xehpc")
    assert all(c.ops.src2.name == "a" for c in _calls(hpc, Dpas))
