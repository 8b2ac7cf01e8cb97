"""Tiles: parsing, printing, meaning, and errors with spans."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.config import ConfigError, Tile
from kdd_config_strategies import tiles


def test_parse_keeps_order_and_sizes():
    t = Tile.parse("mb32oc32ic16")
    assert t.items == (("mb", 32), ("oc", 32), ("ic", 16))
    assert str(t) == "mb32oc32ic16" and t.get("oc") == 32 and t.get("ow") == 1
    assert t.product() == 32 * 32 * 16 and t.product(["mb", "ow"]) == 32
    assert list(t) == ["mb", "oc", "ic"] and "ic" in t and "ow" not in t and len(t) == 3


def test_equality_ignores_order_and_unit_sizes():
    assert Tile.parse("oc4ow4") == Tile.parse("ow4oc4") == Tile.parse("ow4mb1oc4")
    assert hash(Tile.parse("oc4ow4")) == hash(Tile.parse("ow4oc4"))
    assert Tile.parse("oc4") != Tile.parse("oc8") and Tile.parse("") == Tile()


def test_digit_names_need_the_dims_vocabulary():
    assert Tile.parse("b04m32", dims=("b0", "b1", "m")).items == (("b0", 4), ("m", 32))
    assert Tile.parse("b04m32").items == (("b", 4), ("m", 32))


@settings(max_examples=300, deadline=None)
@given(tiles)
def test_print_parse_round_trip(tile):
    again = Tile.parse(str(tile))
    assert again == tile and again.items == tile.items
    assert Tile.of(tile.as_dict()) == tile


@pytest.mark.parametrize("text,span,words", [
    ("mb32Oc16", (4, 5), "'O'"),
    ("32mb", (0, 2), "'32'"),
    ("mb32oc", (4, 6), "'oc' needs a size"),
    ("mb0", (0, 3), "at least 1"),
    ("mb2ic4mb8", (6, 9), "'mb' appears twice"),
    ("mb 2", (0, 2), "'mb' needs a size"),
    ("mb2 ", (3, 4), "' '"),
])
def test_errors_name_the_token_and_its_span(text, span, words):
    with pytest.raises(ConfigError) as err:
        Tile.parse(text)
    assert (err.value.start, err.value.end) == span
    assert words in err.value.message


@settings(max_examples=300, deadline=None)
@given(tiles, st.data())
def test_a_bad_character_is_located(tile, data):
    text = str(tile)
    pos = data.draw(st.integers(0, len(text)))
    bad = data.draw(st.sampled_from("XZ-_.:/"))
    corrupted = text[:pos] + bad + text[pos:]
    with pytest.raises(ConfigError) as err:
        Tile.parse(corrupted)
    # The error is at the inserted character or at the name it cut short (which then lacks a size).
    assert err.value.start <= pos < err.value.end or corrupted[err.value.start:err.value.end].isalpha()


def test_constructor_rejects_bad_entries():
    with pytest.raises(ValueError, match="appears twice"):
        Tile((("mb", 2), ("mb", 4)))
    with pytest.raises(ValueError, match="sizes >= 1"):
        Tile((("mb", 0),))
