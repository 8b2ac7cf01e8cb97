"""Every other shipped example through the full pipeline (conv fwd/bwd, GEMM, int8, blocked layouts,
tails, sm_90): every pass keeps the exact result and the reduction loop does less address arithmetic."""
import pytest
from passes_kernels import check_example_pipeline, example_kernel, example_names

OTHERS = [n for n in example_names() if not n.startswith("resnet50")]
# The interpreter runs a group's warps in lockstep: a warp-specialized producer gets ahead of its consumers
# only by its stages, so the check shape's K blocks (sm90_conv: 9 taps of one block) must all fit in them.
LOCKSTEP = {"sm90_conv": "tile=m64n64k64 stages=9"}


@pytest.mark.slow
@pytest.mark.parametrize("name", OTHERS)
def test_example_pipeline(name):
    check_example_pipeline(example_kernel(name, LOCKSTEP.get(name)))
