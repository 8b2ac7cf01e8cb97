"""Hypothesis strategies for kernel-config values, shared by the config tests."""
from hypothesis import strategies as st

from kdd.core.config import Buffering, KernelConfig, Pipeline, Subtiles, Tile, WalkOrder
from kdd.core.config.knobs import BWD_D_OPTIMIZE
from kdd.core.problem import problem_from_text
from kdd.core.targets import FMA_KINDS

CONV_DIMS = ("g", "mb", "ic", "oc", "id", "ih", "iw", "od", "oh", "ow", "kd", "kh", "kw")
names = st.one_of(st.sampled_from(CONV_DIMS + ("m", "n", "k")), st.text("abcdefghijklmnopqrstuvwxyz", min_size=1,
                                                                       max_size=4))
tiles = st.lists(st.tuples(names, st.integers(1, 4096)), max_size=6, unique_by=lambda p: p[0]).map(Tile.of)


@st.composite
def bufferings(draw, gmem: bool):
    a, b = draw(st.sampled_from([(True, True), (True, False), (False, True)]))
    return Buffering(draw(st.integers(0, 3)), a, b, draw(st.integers(0, 2)) if gmem else 0,
                     draw(st.integers(-1, 3)) if gmem else -1)


layouts = st.sampled_from(["any", "axb", "abx", "aBx16b", "ABx32a16b", "axcb", "aBx16b.axb", "a"])


def optional(strategy):
    return st.one_of(st.none(), strategy)


configs = st.builds(
    KernelConfig,
    fma=optional(st.sampled_from(FMA_KINDS)),
    simd=optional(st.sampled_from([8, 16, 32])),
    regs=optional(st.integers(1, 512)), vec=optional(st.sampled_from([8, 16, 32])),
    loop=optional(tiles), tg=optional(tiles), iter=optional(tiles), unroll=optional(tiles),
    slm=optional(bufferings(True)), prefetch=optional(bufferings(False)),
    pipeline=optional(st.builds(Pipeline, st.booleans(), st.booleans())),
    subtiles=optional(st.builds(Subtiles, st.integers(1, 8), st.integers(1, 8))),
    global_reduction=optional(st.booleans()), pad_slm=optional(st.booleans()),
    walk_order=optional(st.lists(st.lists(st.tuples(st.sampled_from(CONV_DIMS), st.integers(1, 64)), max_size=3)
                                 .map(tuple), min_size=3, max_size=3).map(lambda axes: WalkOrder(tuple(axes)))),
    bwd_d_optimize=optional(st.sampled_from(BWD_D_OPTIMIZE)),
    src_layout=optional(layouts), wei_layout=optional(layouts), dst_layout=optional(layouts),
    bia_layout=optional(layouts),
)

TYPES = ("f32", "f16", "bf16", "f16:f16:f32", "s8:s8:s32", "u8:s8:s32", "s8:s8:f32")


@st.composite
def conv_texts(draw):
    g = draw(st.sampled_from([1, 1, 2, 4]))
    kh = draw(st.sampled_from([1, 3, 5]))
    return (f"g{g}mb{draw(st.integers(1, 64))}ic{g * draw(st.integers(1, 256))}ih{draw(st.integers(kh, 64))}"
            f"oc{g * draw(st.integers(1, 256))}kh{kh}ph{kh // 2}")


gemm_texts = st.builds(lambda m, n, k: f"m{m}n{n}k{k}", st.integers(1, 4096), st.integers(1, 4096),
                       st.integers(1, 4096))


@st.composite
def problems(draw):
    if draw(st.booleans()):
        return problem_from_text(draw(gemm_texts), types=draw(st.sampled_from(TYPES)))
    return problem_from_text(draw(conv_texts()), prop=draw(st.sampled_from(["fwd", "bwd_d", "bwd_w"])),
                             types=draw(st.sampled_from(TYPES)))
