"""Arbitrary edits of real configs: diagnostics always come back, inside the document, and agree with tomllib."""
import tomllib
from pathlib import Path

from edits import edited, reader
from hypothesis import given, settings

from kdd.core.spec.document import Position, parse_document
from kdd.core.spec.duplicates import duplicate_diagnostics
from kdd.core.spec.kernel_spec import load_spec
from kdd.core.spec.syntax import syntax_diagnostics

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).parents[3]
# The test fixtures and the repository's examples, by file name (the names are distinct).
FILES = {p.name: p for p in sorted([*FIXTURES.glob("*.kernel.toml"), *(ROOT / "examples").glob("*.kernel.toml")])}
EXAMPLES = {name: path.read_text() for name, path in FILES.items()}

read_sibling = reader(EXAMPLES)


@settings(max_examples=400, deadline=None)
@given(edited(EXAMPLES))
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
@given(edited(EXAMPLES))
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
