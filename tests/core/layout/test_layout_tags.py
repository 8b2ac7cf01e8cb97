"""oneDNN tag parsing and printing: letter, meta (x), named and explicit block forms."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.ir.types import f16, f32
from kdd.core.layout import Block, Layout, LayoutTagError, parse_layout
from kdd.core.layout.tags import POSITIONAL, format_tag
from layout_strategies import dense_layouts

ACT4 = ("mb", "ic", "ih", "iw")
DST4 = ("mb", "oc", "oh", "ow")
WEI4 = ("oc", "ic", "kh", "kw")
GWEI5 = ("g", "oc", "ic", "kh", "kw")


def blocks(tag, dims, **kw):
    """Blocks outer to inner as ``(dim, size)``, the way tags are written."""
    return [(b.dim, b.size) for b in reversed(parse_layout(tag, dims, f32, **kw).blocks)]


@pytest.mark.parametrize("tag, dims, expected", [
    ("abcd", (2, 3, 4, 5), [(0, 2), (1, 3), (2, 4), (3, 5)]),
    ("acdb", (2, 3, 4, 5), [(0, 2), (2, 4), (3, 5), (1, 3)]),
    ("aBcd16b", (2, 40, 4, 5), [(0, 2), (1, 3), (2, 4), (3, 5), (1, 16)]),
    ("ABcd16b16a", (32, 16, 3, 3), [(0, 2), (1, 1), (2, 3), (3, 3), (1, 16), (0, 16)]),
    ("ABcd8a16b2a", (32, 32, 1, 1), [(0, 2), (1, 2), (2, 1), (3, 1), (0, 8), (1, 16), (0, 2)]),
    ("ba", (3, 5), [(1, 5), (0, 3)]),
])
def test_letter_tags(tag, dims, expected):
    assert blocks(tag, dims) == expected


@pytest.mark.parametrize("tag, ndims, letters", [
    ("axb", 4, "acdb"), ("axb", 5, "acdeb"), ("axb", 3, "acb"), ("axb", 2, "ab"), ("axb", 1, "a"),
    ("abx", 4, "abcd"), ("abx", 1, "a"), ("xba", 4, "cdba"), ("xba", 2, "ba"),
    ("aBx16b", 4, "aBcd16b"), ("aBx8b", 5, "aBcde8b"), ("ABx16a16b", 3, "ABc16a16b"),
    ("x", 3, "abc"),
])
def test_meta_tags_expand_x(tag, ndims, letters):
    dims = tuple(range(17, 17 + ndims))
    assert parse_layout(tag, dims, f16).tag() == letters
    assert parse_layout(tag, dims, f16) == parse_layout(letters, dims, f16)


@pytest.mark.parametrize("tag, names, letters", [
    ("nchw", ACT4, "abcd"), ("nhwc", ACT4, "acdb"), ("nhwc", DST4, "acdb"),
    ("NChw32n32c", ACT4, "ABcd32a32b"), ("nChw16c", DST4, "aBcd16b"),
    ("oihw", WEI4, "abcd"), ("ohwi", WEI4, "acdb"), ("hwio", WEI4, "cdba"),
    ("OIhw16i16o", WEI4, "ABcd16b16a"), ("goihw", GWEI5, "abcde"), ("gOIhw16i16o", GWEI5, "aBCde16c16b"),
    ("nc", ("mb", "ic"), "ab"), ("ncw", ("mb", "ic", "iw"), "abc"), ("nwc", ("mb", "oc", "ow"), "acb"),
    ("ncdhw", ("mb", "ic", "id", "ih", "iw"), "abcde"), ("ndhwc", ("mb", "ic", "id", "ih", "iw"), "acdeb"),
    ("NCdhw16n16c", ("mb", "ic", "id", "ih", "iw"), "ABcde16a16b"),
])
def test_named_tags_by_dim_names_and_by_position(tag, names, letters):
    dims = tuple(range(33, 33 + len(names)))
    by_names = parse_layout(tag, dims, f16, dim_names=names)
    assert by_names == parse_layout(letters, dims, f16)
    assert by_names == parse_layout(tag, dims, f16)  # canonical positions agree
    assert by_names.tag() == letters
    assert by_names.tag(names) == tag


def test_named_tag_follows_dim_names_order():
    # The same tag on a tensor whose dims are stored in another logical order.
    layout = parse_layout("nhwc", (5, 6, 7, 8), f16, dim_names=("ih", "iw", "ic", "mb"))
    assert [(b.dim, b.size) for b in reversed(layout.blocks)] == [(3, 8), (0, 5), (1, 6), (2, 7)]


def test_explicit_block_form_matches_seed_tag():
    dims = (128, 64, 7, 7)
    explicit = parse_layout("4n2c7h7w32n32c", dims, f16, dim_names=ACT4)
    assert explicit == parse_layout("NChw32n32c", dims, f16, dim_names=ACT4)
    assert explicit == parse_layout("4a2b7c7d32a32b", dims, f16)
    assert explicit == parse_layout("4n2c7h7w32n32c", dims, f16)
    assert explicit.tag(ACT4) == "NChw32n32c"


def test_explicit_form_may_omit_unit_dims_and_pad():
    layout = parse_layout("2a16b", (2, 10, 1), f32)
    assert layout.padded_dims == (2, 16, 1)
    assert layout.tag() == "aBc16b"
    assert parse_layout("2a10b", (2, 10, 1), f32).tag() == "abc"


@pytest.mark.parametrize("tag, dims, names, span, words", [
    ("abcd16q", (2, 3, 4, 5), None, (4, 7), "'16q'"),
    ("abcc", (2, 3, 4, 5), None, (3, 4), "twice"),
    ("aBcd", (2, 3, 4, 5), None, (1, 2), "no inner block"),
    ("abcd16b", (2, 3, 4, 5), None, (4, 7), "lowercase"),
    ("ab", (2, 3, 4, 5), None, (0, 2), "c, d"),
    ("ab$c", (2, 3, 4), None, (2, 3), "'$'"),
    ("abe", (2, 3, 4), None, (2, 3), "dim 4"),
    ("aB16bc", (2, 32, 4), None, (5, 6), "before the inner"),
    ("aBcd16B", (2, 32, 4, 5), None, (4, 7), "lowercase"),
    ("axbx", (2, 3, 4, 5), None, (3, 4), "once"),
    ("aXb16c", (2, 3, 32), None, (1, 2), "cannot be blocked"),
    ("ab0a", (2, 3), None, (2, 4), "positive"),
    ("nchq", (2, 3, 4, 5), None, (3, 4), "'q'"),
    ("nchw", (2, 3, 4), None, (0, 4), "4 dims"),
    ("ncoi", (2, 3, 4, 5), None, (0, 4), "mixes"),
    ("nchw", (2, 3, 4, 5), ("mb", "ic", "id", "iw"), (0, 4), "'h'"),
    ("nchw", (2, 3, 4, 5, 6), ("mb", "ic", "ih", "oh", "iw"), (0, 4), "more than one"),
    ("2a3b", (2, 4), None, (0, 4), "cover 3"),
    ("2a3", (2, 3), None, (2, 3), "'3'"),
    ("2ab", (2, 3), None, (2, 3), "needs a size"),
    ("", (2,), None, (0, 0), "empty"),
])
def test_tag_errors_name_token_and_span(tag, dims, names, span, words):
    with pytest.raises(LayoutTagError) as err:
        parse_layout(tag, dims, f16, dim_names=names)
    assert (err.value.start, err.value.end) == span
    assert words in err.value.message
    assert err.value.shifted(10).start == span[0] + 10


@st.composite
def letter_tags(draw):
    """A random letter tag and logical dims: any outer order, up to 3 inner blocks on any dims."""
    ndims = draw(st.integers(1, 5))
    dims = tuple(draw(st.integers(1, 40)) for _ in range(ndims))
    outer = draw(st.permutations(range(ndims)))
    block = st.tuples(st.integers(0, ndims - 1), st.sampled_from([2, 3, 4, 8, 16]))
    inner = draw(st.lists(block, max_size=3))
    return format_tag(outer, inner, POSITIONAL), dims


@settings(max_examples=300, deadline=None)
@given(letter_tags())
def test_tag_round_trip(case):
    tag, dims = case
    layout = parse_layout(tag, dims, f16)
    assert layout.tag() == tag
    assert parse_layout(layout.blocks_str(), dims, f16) == layout
    assert layout.is_dense()
    # Coalescing loses the tag's structure; a tag for the same mapping is still found.
    found = layout.coalesce().tag()
    assert found is not None and parse_layout(found, dims, f16).is_equal(layout)


@settings(max_examples=300, deadline=None)
@given(dense_layouts())
def test_printed_tag_describes_the_layout(layout):
    # Random block orders: whenever a tag is printed it must parse back to the same mapping.
    tag = layout.tag()
    if tag is not None:
        assert parse_layout(tag, layout.dims, layout.dtype, offset=layout.offset).is_equal(layout)
    assert parse_layout(layout.blocks_str(), layout.dims, layout.dtype, offset=layout.offset) == layout


def test_tag_found_for_coalesced_and_missing_for_non_tags():
    layout = parse_layout("ABcd16b16a", (16, 32, 3, 3), f16)
    assert layout.coalesce().tag() == "ABcd16b16a"
    assert parse_layout("acdb", (2, 3, 1, 1), f16).coalesce().tag() == "abcd"
    # Over-padded (4 outer n-blocks where 3 would do): only a tag with every block inner describes it.
    assert parse_layout("4n2c7h7w32n32c", (90, 64, 7, 7), f16).tag() == "ABCD4a2b7c7d32a32b"
    rows_with_holes = Layout(f16, (4, 4), (Block(1, 4, 1), Block(0, 4, 8)))
    assert rows_with_holes.tag() is None
