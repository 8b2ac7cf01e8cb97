"""LSP positions: UTF-16 characters, all three line breaks, byte offsets from tree-sitter."""
from hypothesis import given, settings, strategies as st

from kdd.core.spec.positions import LineIndex, Position, Range

# Characters of 1, 2, 3 and 4 UTF-8 bytes (the last needs two UTF-16 units) and every line break.
ALPHABET = st.sampled_from(["a", "=", " ", "é", "€", "𝔘", "😀", "\n", "\r", "\r\n"])
TEXTS = st.lists(ALPHABET, max_size=40).map("".join)


def oracle_position(text: str, index: int) -> Position:
    """Walk the text one character at a time, counting lines and UTF-16 units."""
    line = character = 0
    i = 0
    while i < index:
        ch = text[i]
        if ch == "\r" and i + 1 < len(text) and text[i + 1] == "\n" and i + 1 < index:
            line, character, i = line + 1, 0, i + 2
            continue
        if ch in "\r\n" and not (ch == "\r" and i + 1 < len(text) and text[i + 1] == "\n"):
            line, character = line + 1, 0
        else:
            character += 2 if ord(ch) > 0xFFFF else 1
        i += 1
    return Position(line, character)


@settings(max_examples=300, deadline=None)
@given(TEXTS, st.data())
def test_position_matches_a_character_walk(text, data):
    index = data.draw(st.integers(0, len(text)))
    assert LineIndex(text).position(index) == oracle_position(text, index)


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_byte_offsets_map_back_to_string_indices(text):
    lines = LineIndex(text)
    encoded = lines.encoded()
    for index in range(len(text) + 1):
        byte = len(text[:index].encode("utf-8"))
        assert lines.byte_starts[index] == byte
        assert lines.index_of_byte(byte) == index
    assert lines.byte_starts[-1] == len(encoded)


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_index_inverts_position_except_inside_crlf(text):
    lines = LineIndex(text)
    for index in range(len(text) + 1):
        inside_crlf = 0 < index < len(text) and text[index - 1] == "\r" and text[index] == "\n"
        if not inside_crlf:
            assert lines.index(lines.position(index)) == index


def test_astral_characters_count_two_utf16_units():
    text = 'a = "😀x"\nb'
    lines = LineIndex(text)
    assert lines.position(text.index("x")) == Position(0, 7)
    assert lines.position(text.index("b")) == Position(1, 0)
    # The bytes before 'x': 'a = "' is 5 bytes, the emoji 4.
    assert lines.index_of_byte(9) == text.index("x")


def test_position_past_line_end_clamps_to_that_line():
    lines = LineIndex("ab\ncd")
    assert lines.index(Position(0, 99)) == 2
    assert lines.index(Position(7, 0)) == 5
    assert lines.end == Position(1, 2)


def test_range_contains_its_end_and_rejects_reversed_bounds():
    rng = Range(Position(1, 2), Position(1, 5))
    assert rng.contains(Position(1, 5)) and rng.contains(Position(1, 2))
    assert not rng.contains(Position(1, 6)) and not rng.contains(Position(0, 3))
    try:
        Range(Position(1, 5), Position(1, 2))
    except ValueError as exc:
        assert "before its start" in str(exc)
    else:
        raise AssertionError("a reversed range was accepted")
