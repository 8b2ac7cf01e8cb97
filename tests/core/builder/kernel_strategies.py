"""Hypothesis strategies of random small kernels: problems (GEMM with batch, conv 1D-3D with groups,
strides, padding and dilation; props, types, layout tags, post-op chains) and configs (iter/tg/loop
blocks, SLM staging, subtiles, FMA forms). Shared by the builder's random test, the differential test
(tests/differential.py) and bench/differential.py."""
from __future__ import annotations

from hypothesis import assume
from hypothesis import strategies as st

from kdd.core.config.kernel_config import KernelConfig
from kdd.core.config.tiles import Tile
from kdd.core.config.values import Buffering, Subtiles
from kdd.core.problem import Problem, parse_data_types
from kdd.core.problem.conv_shape import compute_out, parse_conv_shape
from kdd.core.problem.gemm_shape import GemmShape
from kdd.core.problem.post_ops import parse_post_op


@st.composite
def shapes(draw):
    if draw(st.booleans()):
        batch = tuple(draw(st.lists(st.integers(1, 2), max_size=1)))
        return GemmShape(batch, draw(st.integers(1, 40)), draw(st.integers(1, 40)), draw(st.integers(1, 40)))
    g = draw(st.integers(1, 2))
    parts = [f"g{g}", f"mb{draw(st.integers(1, 2))}", f"ic{g * draw(st.integers(1, 20))}",
             f"oc{g * draw(st.integers(1, 20))}"]
    for a in "dhw"[3 - draw(st.integers(1, 2)):]:
        i, k, s, p, d = (draw(st.integers(1, 7)), draw(st.integers(1, 3)), draw(st.integers(1, 2)),
                         draw(st.integers(0, 1)), draw(st.integers(0, 1)))
        assume(compute_out(i, k, s, p, d) >= 1)
        parts.append(f"i{a}{i}k{a}{k}s{a}{s}p{a}{p}d{a}{d}")
    return parse_conv_shape("_".join(parts))


@st.composite
def configs(draw, p, fmas: tuple = ()):
    """Random iter/tg/loop blocks on the problem's non-trivial dims (at most 32 per thread and role),
    optional SLM staging of A and/or B, optional subtiles; an FMA form from ``fmas`` or the default."""
    gd = p.gemm_dims()
    iter_, tg, loop = {}, {}, {}
    for role in "mnk":
        budget = 32
        for name, size in getattr(gd, role):
            if size == 1:
                continue
            block = draw(st.sampled_from([b for b in (1, 2, 4, 8, 16) if b <= budget]))
            budget //= block
            iter_[name] = block
            if role == "k":
                loop[name] = draw(st.integers(1, 3))
            else:
                tg[name] = draw(st.sampled_from([1, 1, 2]))
    slm = draw(st.sampled_from([0, 0, 1]))
    ab = draw(st.sampled_from([(True, True), (True, False), (False, True)]))
    sub = draw(st.sampled_from([Subtiles(), Subtiles(), Subtiles(a=2), Subtiles(b=2)]))
    fma = draw(st.sampled_from((None,) + tuple(fmas)))
    return KernelConfig(iter=Tile.of(iter_), tg=Tile.of(tg), loop=Tile.of(loop),
                        slm=Buffering(slm, *ab), subtiles=sub, fma=fma)


# post-op elements the differential test draws from (oneDNN attribute syntax, core/problem/post_ops.py)
POST_OPS = ("relu", "relu:0.5", "gelu_tanh", "swish", "tanh", "logistic", "elu", "exp", "linear:2:1", "abs",
            "square", "bias", "bias:f16", "sum", "sum:0.5", "add:f32", "mul:f32:per_oc", "max:f32:common",
            "scale:0.5", "scale:3")


@st.composite
def problems(draw, types: list[str], tagged: bool = True, post_ops: bool = False):
    """A random problem: a shape, a prop of its op, types from ``types``, random layout tags
    (``tagged``) or ``any``, and (``post_ops``, forward problems) a chain of up to three post-ops."""
    shape = draw(shapes())
    op_is_gemm = isinstance(shape, GemmShape)
    prop = "fwd" if op_is_gemm else draw(st.sampled_from(["fwd", "bwd_d", "bwd_w"]))
    dtypes = draw(st.sampled_from(types))
    tags = {t: "any" for t in ("src", "wei", "dst")}
    if tagged:
        tags = {t: draw(st.sampled_from(("any", "ab", "ba") if op_is_gemm else ("any", "axb", "abx", "aBx16b")))
                for t in tags}
        if op_is_gemm and shape.batch:
            tags = {t: "abc" if tag == "ab" else ("acb" if tag == "ba" else tag) for t, tag in tags.items()}
    size = draw(st.integers(0, 3)) if post_ops and prop == "fwd" else 0
    chain = [draw(st.sampled_from(POST_OPS)) for _ in range(size)]
    return Problem(op="gemm" if op_is_gemm else "conv", prop=prop, shape=shape, types=parse_data_types(dtypes),
                   tags=tags, post_ops=tuple(parse_post_op(x) for x in chain))
