"""Small problems for builder tests, reduced from benchdnn's shape files (see ``benchdnn_data``),
so every case runs in the interpreter in a fraction of a second."""
from __future__ import annotations

from benchdnn_data import reduce_conv, reduce_gemm, shape_lines

from kdd.core.problem import Problem, parse_data_types
from kdd.core.problem.gemm_shape import GemmShape


def conv_shapes() -> list:
    """Reduced, distinct shapes of shapes_basic, shapes_tails and shapes_1x1, in file order."""
    seen, out = set(), []
    for name in ("shapes_basic", "shapes_tails", "shapes_1x1"):
        for line in shape_lines(f"conv/{name}"):
            shape = reduce_conv(line)
            if shape is not None and shape.canonical() not in seen:
                seen.add(shape.canonical())
                out.append(shape)
    return out


def gemm_shapes() -> list:
    seen, out = set(), []
    for name in ("shapes_2d", "shapes_bert", "shapes_perf_basic"):
        for line in shape_lines(f"matmul/{name}"):
            shape = reduce_gemm(line)
            if shape.canonical() not in seen:
                seen.add(shape.canonical())
                out.append(shape)
    return out


def problem(shape, prop: str = "fwd", types: str = "f32", tags=None, post_ops=()) -> Problem:
    op = "gemm" if isinstance(shape, GemmShape) else "conv"
    return Problem(op=op, prop=prop, shape=shape, types=parse_data_types(types), tags=tags or {},
                   post_ops=tuple(post_ops))
