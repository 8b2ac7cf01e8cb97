"""Every other shipped example through the full pipeline (conv fwd/bwd, GEMM, int8, blocked layouts,
tails, sm_90): every pass keeps the exact result and the reduction loop does less address arithmetic."""
import pytest
from passes_kernels import check_example_pipeline, example_kernel, example_names

OTHERS = [n for n in example_names() if not n.startswith("resnet50")]


@pytest.mark.slow
@pytest.mark.parametrize("name", OTHERS)
def test_example_pipeline(name):
    check_example_pipeline(example_kernel(name))
