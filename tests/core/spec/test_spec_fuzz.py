"""Arbitrary edits of real configs: diagnostics always come back, inside the document, and agree with tomllib."""
import tomllib
from pathlib import Path

from hypothesis import given, settings, strategies as st

from kdd.core.spec.document import Position, parse_document
from kdd.core.spec.duplicates import duplicate_diagnostics
from kdd.core.spec.kernel_spec import load_spec
from kdd.core.spec.syntax import syntax_diagnostics

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).parents[3]
# The test fixtures and the repository's examples, by file name (the names are distinct).
FILES = {p.name: p for p in sorted([*FIXTURES.glob("*.kernel.toml"), *(ROOT / "examples").glob("*.kernel.toml")])}
EXAMPLES = {name: path.read_text() for name, path in FILES.items()}

# Single characters that matter to TOML, non-ASCII ones, and fragments that build or break structure.
PIECES = st.one_of(
    st.characters(),
    st.sampled_from(list("\"'[]{}=,.#\\\n\r\t :+-_0123456789")),
    st.sampled_from(['"""', "'''", "é", "😀", "\r\n", "\n[config]\n", "\n[[x]]\n", "x = ", "a.b = 1\n",
                     "true", "1e3", "1979-05-27", '"mb1ic1"', "{ bufs = 3 }", "[1, 2]", "simd = 8\n"]),
)


@st.composite
def mutated(draw):
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


def read_sibling(path):
    """The fixtures, served from memory (a mutated ``extends`` may name any file)."""
    name = Path(path).name
    if name not in EXAMPLES:
        raise FileNotFoundError(2, "No such file or directory", path)
    return EXAMPLES[name]


@settings(max_examples=400, deadline=None)
@given(mutated())
def test_any_edit_gives_diagnostics_inside_the_document(case):
    name, text = case
    spec, diagnostics = load_spec(text, str(FILES[name]), read_text=read_sibling)
    assert isinstance(diagnostics, list)
    end = parse_document(text).lines.end
    for d in diagnostics:
        assert Position(0, 0) <= d.range.start <= d.range.end <= end, d
        assert d.message
        assert d.code != "internal", d  # an internal diagnostic is a caught crash
    if spec is None:
        assert any(d.severity == 1 for d in diagnostics)


@settings(max_examples=400, deadline=None)
@given(mutated())
def test_toml_errors_are_reported_exactly_when_tomllib_rejects_the_text(case):
    _, text = case
    doc = parse_document(text)
    ours = syntax_diagnostics(doc) + duplicate_diagnostics(doc)
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        assert ours, f"tomllib rejects ({exc}) but no diagnostic:\n{text}"
    else:
        assert not ours, f"tomllib accepts but: {ours}\n{text}"
