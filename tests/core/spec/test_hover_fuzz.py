"""Hover never raises: any position of any example, and of arbitrarily edited examples."""
from pathlib import Path

from hypothesis import given, settings, strategies as st

from kdd.core.spec.document import parse_document
from kdd.core.spec.hover import INTERNAL_ERROR, hover

EXAMPLES_DIR = Path(__file__).parents[3] / "examples"
EXAMPLES = {p.name: p.read_text() for p in sorted(EXAMPLES_DIR.glob("*.kernel.toml"))}

# Characters that matter to TOML and to the values kdd reads, and fragments that build or break structure.
PIECES = st.one_of(
    st.characters(),
    st.sampled_from(list("\"'[]{}=,.#\\\n\r\t :+-_0123456789xabcnhwkmo")),
    st.sampled_from(['"""', "😀", "\r\n", "\n[config]\n", "\n[target]\nhw = ", "x = ", "a.b = 1\n", "true",
                     '"mb1ic1"', "{ bufs = 3 }", "[1, 2]", "simd = 8\n", 'tg = "oc8"\n', 'iter = "m16n8k16"\n',
                     'line = "T=oc2 i=mb8"\n', '"sm_90"', '"xehpc"', '"aBx16b"', '"NChw32n32c"', '"relu:2"',
                     "ic0", "kh9", "g3", "mb", "sh2", 'extends = "resnet50_3x3.kernel.toml"\n',
                     "\n[config.unroll]\n", "\n[config.slm]\nbufs = 2\n", "\n[problem.src]\n", "ih99999999999",
                     'tg = "oc99999ow99999"\n', 'iter = "mb9999999oc99999"\n']),
)


def read_example(path):
    """The examples, served from memory (an edited ``extends`` may name any file)."""
    name = Path(path).name
    if name not in EXAMPLES:
        raise FileNotFoundError(2, "No such file or directory", path)
    return EXAMPLES[name]


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


@st.composite
def edited(draw):
    name = draw(st.sampled_from(sorted(EXAMPLES)))
    text = EXAMPLES[name]
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete", "replace"]))
        if op == "insert":
            text = text[:i] + draw(PIECES) + text[i:]
        elif op == "delete":
            text = text[:i] + text[i + draw(st.integers(1, 8)):]
        else:
            text = text[:i] + draw(PIECES) + text[i + 1:]
    return name, text


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
@given(edited(), st.data())
def test_any_position_of_an_edited_example_hovers_text_or_nothing(case, data):
    name, text = case
    check(name, text, *data.draw(positions(text)))
