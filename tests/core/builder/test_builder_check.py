"""Built kernels pass the correctness check (interpreter vs float64 reference) across the matrix.

GEMM and conv fwd/bwd_d/bwd_w x f32/f16/s8 x xehpg/sm_90, default configs,
on benchdnn shapes reduced to a fraction of a second each; then configs that
exercise each builder feature (SLM staging, split K with atomics, subtiles,
blocked layouts, reorders, unrolling, dp4a, bf16, xehpc, post-ops).
"""
from __future__ import annotations

import pytest

from builder_cases import conv_shapes, gemm_shapes, problem
from kdd.core.builder import build_kernel
from kdd.core.config.line import parse_config_line
from kdd.core.interp.check import check_kernel
from kdd.core.problem import parse_post_ops

CONV = conv_shapes()
GEMM = gemm_shapes()
TYPES = ("f32", "f16", "s8")
TARGETS = ("xehpg", "sm_90")
OPS = ("gemm", "fwd", "bwd_d", "bwd_w")


def _matrix():
    cases = []
    for n, (op, types, target) in enumerate((o, t, h) for o in OPS for t in TYPES for h in TARGETS):
        pool = GEMM if op == "gemm" else CONV
        for j in range(2):
            shape = pool[(n * 7 + j * 31) % len(pool)]
            cases.append(pytest.param(op, types, target, shape, id=f"{op}-{types}-{target}-{shape.canonical()}"))
    return cases


@pytest.mark.parametrize("op, types, target, shape", _matrix())
def test_default_configs_pass_the_check(op, types, target, shape):
    prop = "fwd" if op == "gemm" else op
    kernel = build_kernel(problem(shape, prop, types), None, target)
    result = check_kernel(kernel)
    assert result.ok, result
    assert result.unwritten == 0


def _dims(p):
    gd = p.gemm_dims()
    return [n for r in "bmnk" for n, _ in getattr(gd, r)]


FEATURES = [
    # SLM staging of A and B (cooperative loads over a 2x2 group), tails on oc
    ("ic16ih6oc17oh6kh3ph1", "fwd", "f32", "xehpg", {}, "", "fma=mad simd=16 i=ow4oc16ic8 T=ow2oc2 l=ic2kh3kw3 s=x1"),
    ("ic16ih6oc17oh6kh3ph1", "fwd", "f16", "xehpg", {}, "", "fma=dpas simd=8 i=ow8oc8ic16 T=ow2oc2 l=kh3kw3 s=x1.b"),
    # split K across the grid: atomic adds into a zeroed output
    ("ic32ih6oc16oh6kh3ph1", "fwd", "f32", "xehpg", {}, "", "fma=mad simd=16 i=ow4oc16ic8 l=ic2kh3kw3"),
    ("ic32ih6oc16oh6kh3ph1", "bwd_w", "f32", "sm_90", {}, "", "fma=fma i=ic8oc32 l=mb1oh3ow6"),
    ("m40n24k72", "fwd", "f16:f16:f32", "xehpg", {}, "", "fma=dpas simd=8 i=m8n8k16 l=k2"),
    # subtiles: A split (dpas), B split (mad, mma)
    ("ic32ih6oc32oh6kh3ph1", "fwd", "f16", "xehpg", {}, "", "fma=dpas simd=8 i=mb2ow8oc8ic16 l=ic2kh3kw3 S=a2"),
    ("ic32ih6oc32oh6kh3ph1", "fwd", "f32", "xehpg", {}, "", "fma=mad simd=16 i=ow4oc32ic8 l=ic4kh3kw3 S=b2"),
    ("ic32ih6oc32oh6kh3ph1", "fwd", "f16", "sm_90", {}, "", "fma=mma i=mb2ow8oc16ic16 l=ic2kh3kw3 S=b2"),
    # B subtiles read from the FMA-ready SLM tile, each its chunk, straight into the operand registers
    ("ic32ih6oc64oh6kh3ph1", "fwd", "f16", "xehpg", {}, "", "fma=dpas simd=8 i=ow8oc32ic16 T=ow2oc2 l=ic2kh3kw3 s=x3 S=b2"),
    # u8 A subtiles of 2 bytes from the FMA-ready SLM tile: no block message is that small, so they are
    # not read past their chunk (the last thread's once read beyond the SLM buffer)
    ("36x32:32x23", "fwd", "u8:s8:s32", "xehpc", {}, "", "fma=mad simd=16 i=m2n16k2 T=m2n2 l=k3 s=x1.a P=r S=a2b1"),
    # blocked layouts (loads through several blocks per dim), reorders into dpas layouts
    ("ic32ih6oc32oh6kh3ph1", "fwd", "f32", "xehpg",
     {"src": "NChw16n16c", "wei": "OIhw16i16o", "dst": "nChw16c"}, "", "fma=mad simd=16 i=ow2oc16ic8 l=ic4kh3kw3"),
    ("ic32ih6oc32oh6kh3ph1", "fwd", "f16", "xehpg",
     {"src": "aBcd16b", "wei": "ABcd8a16b2a", "dst": "abcd"}, "", "fma=dpas simd=8 i=ow8oc8ic16 l=ic2kh3kw3"),
    ("m64n48k40", "fwd", "f16", "xehpg", {"src": "ba", "wei": "ba", "dst": "ba"}, "", "fma=dpas simd=8 i=m8n8k16"),
    # unrolled reduction loop, dp4a, bf16, xehpc, batch (group) tiles, per-thread batch loop
    ("ic32ih6oc32oh6kh3ph1", "fwd", "f32", "xehpg", {}, "", "fma=mad simd=16 i=ow4oc16ic8 l=ic4kh3kw3 u=kw3"),
    ("ic32ih6oc32oh6kh3ph1", "fwd", "s8", "xehpg", {}, "", "fma=dp4a simd=16 i=ow4oc16ic8 l=ic4kh3kw3"),
    ("ic32ih6oc32oh6kh3ph1", "bwd_d", "bf16", "xehpc", {}, "", ""),
    ("ic32ih6oc32oh6kh3ph1", "fwd", "bf16", "sm_90", {}, "", ""),
    ("g4mb2ic8ih6oc8oh6kh3ph1", "fwd", "f32", "xehpg", {}, "", "fma=mad simd=16 i=g2ow4oc16ic2 l=ic1kh3kw3"),
    ("2x2x16x24:2x2x24x20", "fwd", "f32", "sm_90", {}, "", "fma=fma i=b12m2n32k8 l=k3"),
    # strided backward by data with dilation: the stride condition masks
    ("mb1ic4ih9oc8oh4kh3sh2dh1ph1", "bwd_d", "f16", "sm_90", {}, "", ""),
    # post-op chains (every kind and policy), converted to the destination type
    ("mb2ic16ih5oc16oh5kh3ph1", "fwd", "f32", "xehpg", {}, "relu+bias+scale:0.5", ""),
    ("mb2ic16ih5oc16oh5kh3ph1", "fwd", "f16", "xehpg", {}, "sum:2+add:f32:per_oc+mul:f32:per_tensor", ""),
    ("mb2ic16ih5oc16oh5kh3ph1", "fwd", "s8:s8:s32", "sm_90", {}, "linear:2:1+add:s32:common+bias:s8", ""),
    ("m33n17k40", "fwd", "f16", "xehpc", {}, "gelu_tanh+bias+sub:f16:per_tensor+max:f32:per_oc", ""),
]


@pytest.mark.parametrize("shape, prop, types, target, tags, post_ops, line", FEATURES,
                         ids=[f"{c[0]}-{c[1]}-{c[2]}-{c[3]}-{c[6] or c[5] or 'default'}" for c in FEATURES])
def test_builder_features_pass_the_check(shape, prop, types, target, tags, post_ops, line):
    from kdd.core.problem import parse_shape
    p = problem(parse_shape(shape), prop, types, tags, parse_post_ops(post_ops))
    kernel = build_kernel(p, parse_config_line(line, _dims(p)), target)
    result = check_kernel(kernel)
    assert result.ok, result
    assert result.unwritten == 0


@pytest.mark.parametrize("target", ["xehpg", "sm_90"])
def test_default_check_shape_builds_and_checks(target):
    """The [check] shape kdd uses on save builds and checks (its time is measured by bench/check_examples.py)."""
    from kdd.core.problem import parse_shape
    kernel = build_kernel(problem(parse_shape("mb2ic64ih8oc64oh8kh3ph1"), "fwd", "f32"), None, target)
    assert check_kernel(kernel).ok
