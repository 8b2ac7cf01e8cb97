"""Hover of ``[config]``: knobs, ``line``, the header's defaults, budgets, grids and sm_90 lane pictures."""
import re
from math import prod
from pathlib import Path

from kdd.core.config import KernelConfig, config_from_mapping, estimate_budget, resolve_config
from kdd.core.problem import problem_from_text
from kdd.core.spec.document import parse_document
from kdd.core.spec.hover import hover
from kdd.core.targets import get_target

EXAMPLES = Path(__file__).parents[3] / "examples"
# The design brief's config, with a thread group that fits the 64 output channels.
DESIGN = """[problem]
op = "conv"
prop = "fwd"
shape = "mb32ic64ih56oc64oh56kh3ph1"
types = "f16:f16:f16"
src = "axb"
wei = "axcb"
dst = "axb"
post_ops = ["relu"]

[target]
hw = "xehpg"

[config]
fma = "dpas"
simd = 8
iter = "mb32oc32ic16"
tg = "oc2ow4"
loop = "kh3kw3ic4"
slm = { bufs = 3 }
"""
WRITTEN = {"fma": "dpas", "simd": 8, "iter": "mb32oc32ic16", "tg": "oc2ow4", "loop": "kh3kw3ic4", "slm": {"bufs": 3}}


def hover_on(text, needle, offset=1, path=None, read_text=None):
    """Hover ``offset`` characters into the first ``needle`` of ``text``."""
    pos = parse_document(text).lines.position(text.index(needle) + offset)
    extra = {"read_text": read_text} if read_text else {}
    return hover(text, pos.line, pos.character, path=path, **extra)


def fenced(markdown, after):
    """Lines of the first fenced block after the text ``after``."""
    return markdown.split(after, 1)[1].split("```text\n", 1)[1].split("\n```", 1)[0].splitlines()


def cells(rows):
    return [list(map(int, row.strip("[]").split())) for row in rows]


def test_tg_shows_the_knob_doc_the_thread_group_grid_and_the_register_breakdown():
    md = hover_on(DESIGN, "tg =")
    assert md.startswith("**`tg`** (oneDNN `T=`): Thread-group blocks")
    assert "In effect: `T=oc2ow4`, written." in md
    # tg = oc2ow4: N dims (oc) are X, M dims (ow) are Y
    assert "thread-group grid X x Y x Z = 2 x 4 x 1 = 8 threads (X: N dims oc2; Y: M dims ow4)" in md
    assert "```text\n[0 1]\n[2 3]\n[4 5]\n[6 7]\n```" in md
    # per group: M = mb32 * ow4 = 128, N = oc32 * 2 = 64; groups: M 100352/128, N 64/64
    assert "per thread group: C 128x64 (M x N)" in md
    assert f"= {32 * 56 * 56 // 128} thread groups" in md
    # the register lines, each with its formula: C = 32x32 f32 accumulators in 32-byte GRFs
    assert "| `c` | C accumulators | `32*32*4/32 = 128` | 128 |" in md
    assert "| `a` | A buffer | `32*16*2/32 = 32` | 32 |" in md
    problem = problem_from_text("mb32ic64ih56oc64oh56kh3ph1", types="f16:f16:f16")
    target = get_target("xehpg")
    written = config_from_mapping(WRITTEN)
    budget = estimate_budget(problem, resolve_config(problem, target, written), target)
    for line in budget.regs:  # the floor's lines with their formulas; the others are not the built kernel's
        assert (f"`{line.formula}`" in md) == (line.label in ("c", "a", "b"))
    # the estimate (262) is over 128, so the written iter takes large-GRF mode, as oneDNN's retry does;
    # before a compile the hover shows the floor only
    assert budget.reg_capacity == 256 and f"**Floor: {budget.reg_floor} of 256** GRFs (32 B) per thread" in md
    assert "**Total" not in md
    assert "**SLM total: 18,432 of 65,536** bytes per thread group (fits)" in md


def test_the_config_header_lists_the_defaults_in_effect():
    md = hover_on(DESIGN, "[config]", offset=2)
    section = md.split("**Defaults in effect**")[1].split("\n\n")[1]
    defaults = re.findall(r"^- `(\w+)`", section, flags=re.M)
    assert defaults == ["regs", "vec", "unroll", "prefetch", "pipeline", "subtiles", "global_reduction", "walk_order",
                        "pad_slm", "bwd_d_optimize", "schedule", "tile", "stages", "cluster", "src_layout",
                        "wei_layout", "dst_layout", "bia_layout"]  # the knobs not written
    assert "| `tg` | `T=oc2ow4` | written |" in md
    assert "| `regs` | `regs=256` | default |" in md
    # the floor (c 128 + a 32 + b 32) fits 256: no register error before the build
    assert "register budget overflow" not in md


def test_defaults_fill_an_empty_config_and_give_their_tiling():
    text = (EXAMPLES / "gemm_f16.kernel.toml").read_text()
    md = hover_on(text, "[config]", path=str(EXAMPLES / "gemm_f16.kernel.toml"))
    problem = problem_from_text("m4096n4096k4096", types="f16:f16:f16")
    config = resolve_config(problem, get_target("xehpg"), KernelConfig(fma="dpas", simd=8))
    assert f"As one oneDNN config line: `{config.line()}`" in md
    rows = {m.group(1): tuple(map(int, m.groups()[1:])) for m in
            re.finditer(r"^\| `(\w+)` \| \w \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|", md, flags=re.M)}
    # blocks per dim multiply back to what the config says
    for dim, (size, i, t, l) in rows.items():
        assert (i, t, l) == (config.iter.get(dim), config.tg.get(dim), config.loop.get(dim))
    groups = re.search(r"= (\d+) thread groups", md).group(1)
    assert int(groups) == prod(-(-size // (i * t * l)) for size, i, t, l in rows.values())


def test_an_inherited_knob_says_where_it_comes_from():
    child = 'extends = "base.kernel.toml"\n\n[config]\niter = "mb16oc32ic16"\n'
    files = {"/configs/base.kernel.toml": DESIGN}
    md = hover_on(child, "[config]", path="/configs/child.kernel.toml", read_text=files.__getitem__)
    assert "| `fma` | `fma=dpas` | written, inherited from base.kernel.toml |" in md
    assert "| `iter` | `i=mb16oc32ic16` | written |" in md
    assert "per thread (`iter`): C 16x32 (M x N)" in md


def test_a_bad_knob_hovers_its_error_and_the_rest_of_the_config_still_resolves():
    text = DESIGN.replace('tg = "oc2ow4"', 'tg = "oc2ow"')
    md = hover_on(text, '"oc2ow"', offset=5)
    assert md.count("'ow' needs a size") == 1
    assert "(the default is used instead)" in md
    assert "In effect: `T=" in md and "default (not written)" in md
    assert "**Tiling**" in md and "**Registers (the floor" in md


def test_a_knob_set_in_line_hovers_that_knob_from_its_token():
    text = DESIGN.replace('fma = "dpas"\nsimd = 8\niter = "mb32oc32ic16"\ntg = "oc2ow4"\nloop = "kh3kw3ic4"\n'
                          'slm = { bufs = 3 }', 'line = "simd=8 l=kh3kw3ic4 T=oc4ow4 i=mb32oc32ic16 bufs=3"')
    md = hover_on(text, "T=oc4ow4", offset=3)
    assert md.startswith("**`tg`** (oneDNN `T=`)")
    assert "Set in `line` by `T=oc4ow4`." in md and "In effect: `T=oc4ow4`, set in `line`." in md
    assert "thread-group grid X x Y x Z = 4 x 4 x 1 = 16 threads" in md
    whole = hover_on(text, "line")
    assert "Knobs set by this line: `simd`, `loop`, `tg`, `iter`, `slm`." in whole


def test_config_hovers_wait_for_a_valid_problem_and_target():
    text = DESIGN.replace('hw = "xehpg"', 'hw = "xe"')
    md = hover_on(text, "tg =")
    assert "**`tg`**" in md and "shown once [problem] and [target] are valid" in md
    assert "**Tiling**" not in md


# -- sm_90: lanes of the C tile -------------------------------------------------------------

SM90_PATH = str(EXAMPLES.parent / "tests" / "data" / "sm90_conv_classic.kernel.toml")    # mma.sync fragments
SM90 = Path(SM90_PATH).read_text()


def test_fma_on_sm90_draws_the_mma_accumulator_fragment():
    md = hover_on(SM90, "fma =", path=SM90_PATH)
    frag = fenced(md, "lane holding each element:")
    # PTX ISA m16n8k16 C fragment: lane l holds rows l/4 and l/4 + 8, columns 2*(l%4) and +1
    expected = [[(r % 8) * 4 + c // 2 for c in range(8)] for r in range(16)]
    assert cells(frag) == expected
    regs = fenced(md, "register of the lane (c0..c3):")
    assert cells(regs) == [[(r // 8) * 2 + c % 2 for c in range(8)] for r in range(16)]


def test_iter_on_sm90_draws_the_warps_c_tile_as_fragments():
    text = SM90.replace('fma = "mma"', 'fma = "mma"\niter = "mb32ow2oc32ic16"')
    md = hover_on(text, "iter =", path=SM90_PATH)
    assert "Lanes of the warp's C tile (64x32 = 4x4 `mma.sync.aligned.m16n8k16" in md
    assert "batch_tile = [4, 4], outer_tile = [2, 1], thread_tile = [8, 4]" in md
    assert f"Each lane holds {64 * 32 // 32} accumulators" in md
    grid = fenced(md, "(first 16 rows and columns):")
    assert grid[0] == "[ 0  0  1  1  2  2  3  3  0  0  1  1  2  2  3  3 …]"
    assert grid[-1] == "…"


def test_xe_fma_hovers_draw_no_lanes():
    assert "Lanes of" not in hover_on(DESIGN, "fma =")


def test_with_a_compiles_registers_the_total_is_the_allocators():
    from kdd.core.engine import Engine, Source
    path = EXAMPLES / "resnet50_3x3.kernel.toml"
    text = path.read_text()
    registers = Engine().compile(Source(text, str(path)), "stats")["stats"]["registers"]
    pos = parse_document(text).lines.position(text.index("iter =") + 1)
    md = hover(text, pos.line, pos.character, path=str(path), registers=registers)
    free = registers["budget"] - registers["estimate"]
    assert registers["estimate"] == registers["allocated"]
    total = (f"**Total by the allocator: {registers['estimate']} of {registers['budget']}** "
             f"GRFs (32 B) per thread ({free} free); the built IR's register model: {registers['ir']}")
    assert total in md
    assert abs(registers["ir"] - registers["estimate"]) <= 4  # one model: the IR's agrees with the allocation
    rest = md.replace(total, "")
    assert "**Floor: " not in rest and str(registers["config"]) not in rest  # no config-time total beside it
    # without a compile, the floor only
    floor = sum(registers["floor"].values())
    assert f"**Floor: {floor} of {registers['budget']}**" in hover(text, pos.line, pos.character, path=str(path))
