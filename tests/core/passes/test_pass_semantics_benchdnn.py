"""A sample of benchdnn shapes (ResNet-50, MobileNet, tails, 1x1, BERT matmul), reduced to interpreter
size and built with the default config for Xe and sm_90: every pass keeps the exact result."""

import pytest
from benchdnn_data import reduce_conv, reduce_gemm, shape_lines
from passes_kernels import check_example_pipeline

from kdd.core.builder import build_kernel
from kdd.core.config import parse_config_line
from kdd.core.config.defaults import resolve_config
from kdd.core.config.kernel_config import KernelConfig
from kdd.core.problem import Problem, parse_data_types
from kdd.core.targets import get_target

# (file, line number among the file's shapes, prop, types, target, config line over the defaults)
SAMPLE = [
    ("conv/shapes_resnet_50", 0, "fwd", "f16", "xehpg", ""),            # conv1: 7x7, stride 2
    ("conv/shapes_resnet_50", 3, "fwd", "f16", "xehpg", ""),            # res2a_branch2b: 3x3
    ("conv/shapes_resnet_50", 3, "fwd", "f16", "xehpg", "s=x2 P=r"),    # double SLM buffering
    ("conv/shapes_resnet_50", 3, "fwd", "f16", "xehpg", "s=x3.g2 P=u"),  # triple + GRF buffering
    ("conv/shapes_resnet_50", 1, "fwd", "f16", "xehpg", "p=x2"),        # prefetch, no SLM
    ("conv/shapes_resnet_50", 5, "bwd_d", "f16", "xehpg", ""),          # res3a_branch1: 1x1, stride 2
    ("conv/shapes_resnet_50", 3, "fwd", "f16", "sm_90", ""),
    ("conv/shapes_mobilenet", 0, "fwd", "f32", "xehpg", ""),            # 3x3 stride 2, 3 channels
    ("conv/shapes_tails", 1, "fwd", "f32", "xehpg", "s=x3 u=kw3"),      # oc 33, unroll knob
    ("conv/shapes_1x1", 2, "bwd_w", "f32", "xehpg", ""),
    ("matmul/shapes_bert", 0, "fwd", "f16:f16:f32", "xehpg", ""),
    ("matmul/shapes_2d", 1, "fwd", "f16:f16:f32", "sm_90", ""),
]


@pytest.mark.slow
@pytest.mark.parametrize("file,index,prop,types,target,line", SAMPLE,
                         ids=[f"{f.split('/')[1]}:{i}:{p}:{t}:{ln}" for f, i, p, _, t, ln in SAMPLE])
def test_benchdnn_shape_pipeline(file, index, prop, types, target, line):
    text = shape_lines(file)[index]
    op = "gemm" if file.startswith("matmul") else "conv"
    shape = reduce_gemm(text) if op == "gemm" else reduce_conv(text, max_groups=2)
    problem = Problem(op=op, prop=prop, shape=shape, types=parse_data_types(types))
    hw = get_target(target)
    user = parse_config_line(line) if line else KernelConfig()
    kernel = build_kernel(problem, resolve_config(problem, hw, user), hw)
    check_example_pipeline(kernel)
