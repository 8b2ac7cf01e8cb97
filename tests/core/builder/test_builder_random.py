"""Random small problems, layouts and configs: every kernel the builder accepts passes the check."""
from __future__ import annotations

from math import prod

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from builder_cases import problem
from kdd.core.builder import BuildError, build_kernel
from kdd.core.config.kernel_config import KernelConfig
from kdd.core.config.tiles import Tile
from kdd.core.config.values import Buffering, Subtiles
from kdd.core.interp.check import check_kernel
from kdd.core.problem.conv_shape import compute_out, parse_conv_shape
from kdd.core.problem.gemm_shape import GemmShape


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
def configs(draw, p):
    """Random iter/tg/loop blocks on the problem's non-trivial dims (at most 32 per thread and role),
    optional SLM staging of A and/or B, optional subtiles."""
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
    return KernelConfig(iter=Tile.of(iter_), tg=Tile.of(tg), loop=Tile.of(loop),
                        slm=Buffering(slm, *ab), subtiles=sub)


@st.composite
def problems(draw, types: list[str], tagged: bool = True):
    """A random problem: a shape, a prop of its op, types from ``types``, and random layout tags
    (``tagged``) or ``any``."""
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
    return problem(shape, prop, dtypes, tags)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much,
                                                                  HealthCheck.too_slow])
@given(st.data())
def test_random_configs_pass_the_check(data):
    p = data.draw(problems(["f32", "f16", "s8", "bf16", "f16:f16:f32", "s8:s8:s32", "bf16:f32:bf16"]))
    target = data.draw(st.sampled_from(["xehpg", "xehpc", "sm_90"]))
    assert_checks_if_built(p, data.draw(configs(p)), target)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much,
                                                                 HealthCheck.too_slow])
@given(st.data())
def test_random_configs_verify_after_every_pass(data):
    """The IR verifier passes on the builder's IR and after every pass, for random problems and configs."""
    from kdd.core.passes.kernel_pipeline import run_pipeline
    from kdd.core.passes.verify import verify_problems_text, verify_trace

    p = data.draw(problems(["f32", "f16", "s8", "f16:f16:f32", "bf16:f32:bf16"], tagged=False))
    target = data.draw(st.sampled_from(["xehpg", "xehpc", "sm_90"]))
    config = data.draw(configs(p))
    try:
        kernel = build_kernel(p, config, target)
    except BuildError:
        assume(False)
    stages = verify_trace(kernel, run_pipeline(kernel))
    assert not any(problems for _, problems in stages), (str(kernel.config), verify_problems_text(stages))


def assert_checks_if_built(p, config, target: str) -> None:
    """Every kernel the builder accepts for ``p`` and ``config`` passes the check; a config it
    rejects, or a launch too large for a quick interpreter run, is discarded (``assume``)."""
    try:
        kernel = build_kernel(p, config, target)
    except BuildError:
        assume(False)
    # The interpreter runs every thread at once; keep launches small.
    assume(prod(kernel.grid) * prod(kernel.tg) <= 256)
    result = check_kernel(kernel)
    assert result.ok, (str(kernel.config), result)
    assert result.unwritten == 0
