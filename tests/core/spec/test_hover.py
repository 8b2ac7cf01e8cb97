"""Hover of the problem side of kernel configs: layouts, shapes, types, post-ops, targets, positions."""
from pathlib import Path

from hypothesis import assume, given, settings, strategies as st

import kdd.core.spec.hover as hover_module
from kdd.core.problem import ProblemError, parse_conv_shape
from kdd.core.spec.hover import hover
from kdd.core.spec.positions import utf16_len

EXAMPLES = Path(__file__).parents[3] / "examples"


def example(name):
    path = EXAMPLES / name
    return path.read_text(), str(path)


def at(text, needle, offset=1):
    """LSP position ``offset`` UTF-16 units into the first occurrence of ``needle``."""
    index = text.index(needle)
    line = text.count("\n", 0, index)
    start = text.rfind("\n", 0, index) + 1
    return line, utf16_len(text[start:index]) + offset


def hover_at(text, needle, offset=1, path=None):
    return hover(text, *at(text, needle, offset), path=path)


def table_rows(markdown, header):
    """First cell -> the other cells, of each row of the markdown table whose header starts with ``header``."""
    rows, inside = {}, False
    for line in markdown.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if cells is None:
            inside = False
        elif not inside and cells[0] == header:
            inside = True
        elif inside and not set(line) <= set("|-"):
            rows[cells[0]] = cells[1:]
    return rows


# -- layouts --------------------------------------------------------------------------------

def test_a_layout_tag_shows_canonical_form_blocks_strides_cute_form_size_and_offsets():
    text, path = example("resnet50_3x3.kernel.toml")
    md = hover_at(text, '"axb"', path=path)
    assert md.startswith("**src layout** `axb`: source, GEMM operand A, f16, dims mb32 ic64 ih56 iw56")
    assert "**nhwc** f16 32x64x56x56" in md
    assert "`(32,64,56,56):(200704,1,3584,64)`" in md
    assert f"size: {32 * 64 * 56 * 56 * 2} bytes, dense" in md
    # channels innermost: one row of the offset table walks iw in steps of 64 channels
    assert "| 1 | 64 | 65 | 66 |" in md
    blocks = table_rows(md, "block")
    assert blocks == {"0": ["mb", "32", "200704", "401408"], "1": ["ih", "56", "3584", "7168"],
                      "2": ["iw", "56", "64", "128"], "3": ["ic", "64", "1", "2"]}


def nchw32n32c_offset(n, c, h, w, C, H, W):
    """NChw32n32c from its definition: 32x32 (n, c) tiles, tiles ordered n-block, c-block, h, w."""
    tile = ((n // 32 * (C // 32) + c // 32) * H + h) * W + w
    return tile * 32 * 32 + n % 32 * 32 + c % 32


BLOCKED, BLOCKED_PATH = example("blocked.kernel.toml")
BLOCKED_STRIDES = table_rows(hover_at(BLOCKED, '"NChw32n32c"', path=BLOCKED_PATH), "block")


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 31), st.integers(0, 63), st.integers(0, 27), st.integers(0, 27))
def test_blocked_layout_strides_in_the_hover_give_the_nchw32n32c_offsets(n, c, h, w):
    # blocks outer to inner: 1n 2c 28h 28w 32n 32c; each index is split over its blocks, inner first
    digits = {"mb": [n // 32, n % 32], "ic": [c // 32, c % 32], "ih": [h], "iw": [w]}
    offset = 0
    for row in BLOCKED_STRIDES.values():
        dim, _, stride, _ = row
        offset += digits[dim].pop(0) * int(stride)
    assert offset == nchw32n32c_offset(n, c, h, w, 64, 28, 28)


def test_a_blocked_tag_of_a_dim_it_does_not_divide_shows_the_padding():
    text, path = example("tails.kernel.toml")
    text = text.replace('types = "f32:f32:f32"', 'types = "f32:f32:f32"\nsrc = "aBx16b"')
    md = hover_at(text, '"aBx16b"', path=path)
    assert "f32 2x19x13x13 (padded 2x32x13x13)" in md
    assert f"size: {2 * 32 * 13 * 13 * 4} bytes" in md


def test_a_bad_layout_tag_hovers_its_error_on_the_token_and_still_names_the_tensor():
    text, path = example("resnet50_3x3.kernel.toml")
    text = text.replace('src = "axb"', 'src = "aqb"')
    md = hover_at(text, '"aqb"', offset=2, path=path)
    assert "**src layout** `aqb`" in md
    assert "'q'" in md and "(at `q`, characters 1..2)" in md


# -- shapes ---------------------------------------------------------------------------------

def test_a_shape_hover_lists_all_22_fields_with_where_each_came_from():
    text, path = example("resnet50_3x3.kernel.toml")
    md = hover_at(text, "mb32ic64ih56", path=path)
    rows = table_rows(md, "key")
    assert len(rows) == 22
    origin = {key.strip("`"): cells[1] for key, cells in rows.items()}
    assert {k for k, v in origin.items() if v == "written"} == {"mb", "ic", "ih", "oc", "oh", "kh", "ph"}
    assert origin["iw"] == "copied from ih" and origin["pw"] == "copied from ph"
    assert origin["g"] == origin["sh"] == origin["dh"] == "default"
    assert origin["id"] == "unused (2D problem)"


def test_the_shape_hover_gives_the_gemm_sizes_of_the_propagation_kind_and_the_flops():
    text, path = example("resnet50_1x1.kernel.toml")  # mb32ic256ih56oc64oh56kh1ph0
    md = hover_at(text, "mb32ic256", path=path)
    gemm = table_rows(md, "role")
    assert gemm["M"][0] == str(32 * 56 * 56) and gemm["N"][0] == "64" and gemm["K"][0] == "256"
    assert f"{2 * 32 * 64 * 256 * 56 * 56:,} operations" in md

    text, path = example("bwd_w.kernel.toml")  # bwd_w: M = ic*kh*kw, N = oc, K = mb*oh*ow
    gemm = table_rows(hover_at(text, "mb32ic128", path=path), "role")
    assert [gemm[r][0] for r in "MNK"] == [str(128 * 9), "128", str(32 * 28 * 28)]
    assert "C[wei] += A[src] * B[dst]" in hover_at(text, "mb32ic128", path=path)


def test_the_token_under_the_cursor_is_spelled_out():
    text, path = example("resnet50_3x3.kernel.toml")
    assert "`kh3`: kernel height = 3 (written)" in hover_at(text, "kh3ph1", offset=1, path=path)


AXIS_KEYS = ["i", "o", "k", "s", "p", "d"]


@st.composite
def conv_descriptors(draw):
    """A descriptor and the keys it writes (2D, h given, w sometimes)."""
    written = {"ic": draw(st.integers(1, 64)), "oc": draw(st.integers(1, 64))}
    if draw(st.booleans()):
        written["mb"] = draw(st.integers(1, 8))
    for axis in ("h", "w") if draw(st.booleans()) else ("h",):
        written["i" + axis] = draw(st.integers(4, 40))
        written["k" + axis] = draw(st.integers(1, 4))
        for param, values in (("s", st.integers(1, 3)), ("p", st.integers(0, 2)), ("o", st.integers(1, 40))):
            if draw(st.booleans()):
                written[param + axis] = draw(values)
    keys = list(written)
    order = draw(st.permutations(keys))
    return "".join(f"{k}{written[k]}" for k in order), written


@settings(max_examples=200, deadline=None)
@given(conv_descriptors())
def test_written_fields_are_exactly_the_ones_in_the_descriptor_and_values_are_benchdnns(case):
    text, written = case
    try:
        shape = parse_conv_shape(text)
    except ProblemError:
        assume(False)
    doc = f'[problem]\nop = "conv"\nshape = "{text}"\n[target]\nhw = "xehpg"\n'
    rows = table_rows(hover(doc, 2, 10), "key")
    values = {k.strip("`"): cells for k, cells in rows.items()}
    assert {k for k, cells in values.items() if cells[1] == "written"} == set(written)
    assert all(int(cells[0]) == getattr(shape, k) for k, cells in values.items())
    for axis in "hw":
        if "i" + axis in written and "o" + axis not in written:
            assert values["o" + axis][1] == "deduced"


def test_gemm_shapes_show_batch_m_n_k():
    text, path = example("gemm_bert.kernel.toml")
    md = hover_at(text, "12x128x64", path=path)
    fields = table_rows(md, "dim")
    assert {k: v[0] for k, v in fields.items()} == {"`b0`": "12", "`m`": "128", "`n`": "128", "`k`": "64"}
    assert f"{2 * 12 * 128 * 128 * 64:,} operations" in md


def test_the_check_shape_is_compared_with_the_problem():
    text, path = example("resnet50_3x3.kernel.toml")
    md = hover_at(text, "mb2ic64ih8", path=path)
    assert md.startswith("**check problem (reduced, run on save)** `ic64ih8oc64oh8kh3ph1`")  # mb2 is the default

    def taps(size):  # 3 taps per output, padding 1: the two edge outputs lose one tap each
        return 3 * size - 2

    ratio = (2 * taps(8) ** 2) / (32 * taps(56) ** 2)  # channels and kernel are the same
    assert f"The check runs {ratio:.3%} of the problem's work." in md


def test_a_bad_shape_hovers_the_error_with_the_offending_token():
    text, path = example("resnet50_3x3.kernel.toml")
    text = text.replace("kh3ph1", "kq3ph1", 1)
    md = hover_at(text, "kq3", path=path)
    assert "**error**" in md and "(at `kq3`" in md
    assert md.count("unknown entry 'kq3'") == 1  # the diagnostic is not repeated above the topic


# -- types, post-ops, op, target ------------------------------------------------------------

def test_types_show_each_tensor_its_gemm_operand_and_the_accumulator():
    text, path = example("int8.kernel.toml")
    md = hover_at(text, '"s8:s8:s32"', path=path)
    rows = table_rows(md, "tensor")
    assert rows == {"src": ["s8", "A", "1"], "wei": ["s8", "B", "1"], "dst": ["s32", "C", "4"],
                    "acc": ["s32", "accumulator", "4"]}
    assert "dp4a" in md and "dpas" in md


def test_post_ops_say_what_each_one_computes():
    text, path = example("resnet50_3x3.kernel.toml")
    text = text.replace('post_ops = ["relu"]', 'post_ops = ["relu:0.5", "sum:2", "add:f32:per_oc", "linear:3:1"]')
    md = hover_at(text, '"sum:2"', path=path)
    rows = table_rows(md, "#")
    assert rows["0"] == ["`relu:0.5`", "x = x if x > 0 else 0.5*x"]
    assert rows["1 (here)"][1].startswith("x = x + 2*dst")
    assert rows["2"][1] == "x = add(x, src1) with src1 of type f32, one value per output channel (GEMM: per column)"
    assert rows["3"] == ["`linear:3:1`", "x = 3*x + 1"]
    assert "in the f32 accumulator" in md and "to the f16 destination" in md


def test_prop_shows_its_gemm_mapping():
    text, path = example("bwd_d.kernel.toml")
    md = hover_at(text, '"bwd_d"', path=path)
    assert "Propagation kind" in md and "C[src] += A[dst] * B[wei]" in md


def test_a_target_name_shows_registers_simd_fma_shapes_slm_and_peaks():
    text, path = example("resnet50_3x3.kernel.toml")
    md = hover_at(text, '"xehpg"', path=path)
    assert md.startswith("**xehpg**: Intel Xe-HPG")
    assert "registers per thread: 128 or 256" in md and "32 B per register per thread" in md
    assert "**SIMD widths**: 8, 16" in md
    assert "| `dpas` | f16*f16->f32 | 8x8x16 | 8 |" in md
    assert "65,536 bytes per thread group" in md
    assert "| matrix | f16 |" in md


def test_an_unknown_target_lists_the_known_ones_under_its_diagnostic():
    text, path = example("resnet50_3x3.kernel.toml")
    md = hover_at(text.replace('"xehpg"', '"sm_80"'), '"sm_80"', path=path)
    assert md.startswith("**error** (bad-value)")
    assert "Unknown target `sm_80`; known: `xehpg`, `xehpc`, `xe2`, `sm_90`." in md


# -- positions ------------------------------------------------------------------------------

def test_comments_and_blank_lines_hover_nothing():
    text, path = example("resnet50_3x3.kernel.toml")
    assert hover(text, 0, 3, path=path) is None  # the comment on the first line
    assert hover(text, text.split("\n").index(""), 0, path=path) is None
    assert hover(text, 10_000, 0, path=path) is None


def test_characters_are_utf16_code_units():
    text, path = example("resnet50_3x3.kernel.toml")
    text = text.replace('post_ops = ["relu"]', 'post_ops = ["😀", "relu"]')
    line, col = at(text, '"relu"')
    assert col == len('post_ops = ["😀", ') + 2  # the emoji is two UTF-16 units, one Python character
    assert "| 1 (here) |" in hover(text, line, col, path=path)


def test_a_key_of_the_format_without_a_topic_shows_its_schema_doc():
    text, path = example("resnet50_3x3.kernel.toml")
    text += "seed = 7\n"
    md = hover_at(text, "seed", path=path)
    assert md.startswith("**`check.seed`** (an integer): Seed of the random inputs.")


def test_a_bug_in_a_topic_is_shown_as_an_internal_error_not_raised(monkeypatch):
    def broken(*args):
        raise RuntimeError("layout picture broke")

    monkeypatch.setattr(hover_module, "layout_hover", broken)
    text, path = example("resnet50_3x3.kernel.toml")
    md = hover_at(text, '"axb"', path=path)
    assert md == "**internal error** while building this hover: RuntimeError: layout picture broke"
