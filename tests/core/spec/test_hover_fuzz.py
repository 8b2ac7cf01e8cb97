"""Hover never raises: any position of any example, and of arbitrarily edited examples."""
from pathlib import Path

from edits import edited, reader
from hypothesis import given, settings, strategies as st

from kdd.core.spec.document import parse_document
from kdd.core.spec.hover import INTERNAL_ERROR, hover

EXAMPLES_DIR = Path(__file__).parents[3] / "examples"
EXAMPLES = {p.name: p.read_text() for p in sorted(EXAMPLES_DIR.glob("*.kernel.toml"))}

read_example = reader(EXAMPLES)


@st.composite
def positions(draw, text):
    """Anywhere (even off the text), or, half the time, on a key or value so that topics run."""
    entries = parse_document(text).entries
    if entries and draw(st.booleans()):
        entry = draw(st.sampled_from(entries))
        start = draw(st.sampled_from([entry.key_range.start, entry.value.range.start]))
        return start.line, start.character + draw(st.integers(0, 12))
    lines = text.split("\n")
    line = draw(st.integers(-1, len(lines)))
    width = len(lines[line]) if 0 <= line < len(lines) else 4
    return line, draw(st.integers(-1, width + 2))


def check(name, text, line, character):
    result = hover(text, line, character, path=str(EXAMPLES_DIR / name), read_text=read_example)
    assert result is None or (isinstance(result, str) and result.strip())
    assert result is None or INTERNAL_ERROR not in result, result


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(EXAMPLES)), st.data())
def test_any_position_of_any_example_hovers_text_or_nothing(name, data):
    text = EXAMPLES[name]
    check(name, text, *data.draw(positions(text)))


@settings(max_examples=300, deadline=None)
@given(edited(EXAMPLES), st.data())
def test_any_position_of_an_edited_example_hovers_text_or_nothing(case, data):
    name, text = case
    check(name, text, *data.draw(positions(text)))
