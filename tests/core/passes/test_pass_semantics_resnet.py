"""The ResNet-50 examples through the full pipeline: every pass keeps the exact result, and the
reduction loop ends up with less address arithmetic than the builder's IR."""
import pytest
from passes_kernels import check_example_pipeline, example_kernel, example_names

RESNET = [n for n in example_names() if n.startswith("resnet50")]


def test_there_are_resnet_examples():
    assert len(RESNET) >= 4


@pytest.mark.slow
@pytest.mark.parametrize("name", RESNET)
def test_resnet_example_pipeline(name):
    check_example_pipeline(example_kernel(name))
