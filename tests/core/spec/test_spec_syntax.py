"""TOML syntax errors: a human message on the exact characters at fault."""
import pytest

from kdd.core.spec.diagnostics import Severity
from kdd.core.spec.document import Position, Range, parse_document
from kdd.core.spec.syntax import syntax_diagnostics


def rng(line, start, end, end_line=None):
    return Range(Position(line, start), Position(line if end_line is None else end_line, end))


def only(text):
    found = syntax_diagnostics(parse_document(text))
    assert len(found) == 1, found
    assert found[0].severity == Severity.ERROR and found[0].code == "syntax"
    return found[0]


@pytest.mark.parametrize("text, where, message", [
    ('[problem]\nop = \nshape = "mb1"\n', rng(1, 3, 4), "expected a value after '='"),
    ('[problem]\nop = "conv\nshape = "x"\n', rng(1, 5, 10), "unterminated string"),
    ('a = """never closed\n', rng(0, 4, 7), "unterminated multi-line string"),
    ('[problem\nop = "conv"\n', rng(0, 0, 8), "expected ']' to close the table header"),
    ('post_ops = ["relu", "sum"\nop = 1\n', rng(0, 11, 12), "unclosed '['"),
    ('slm = { bufs = 3\n', rng(0, 6, 7), "unclosed '{'"),
    ('slm = { bufs = 3, }\n', rng(0, 16, 17), "trailing comma is not allowed"),
    ('op = conv\n', rng(0, 5, 9), "strings need quotes"),
    ('flag = True\n', rng(0, 7, 11), "booleans are lowercase"),
    ('simd = 017\n', rng(0, 7, 10), "invalid number '017'"),
    ('op  "conv"\n', rng(0, 4, 10), "expected '=' after key 'op'"),
    ('a = 1 b = 2\n', rng(0, 6, 7), "put each key on its own line"),
    ('s = "a\\qb"\n', rng(0, 6, 8), "invalid escape sequence"),
    ('a = [1 2]\n', rng(0, 7, 8), "expected ',' or ']'"),
    ('d = 2023-02-30\n', rng(0, 4, 14), "invalid value '2023-02-30'"),
    ('s = "\\uD800"\n', rng(0, 5, 11), "is not a Unicode scalar value"),
])
def test_each_syntax_error_is_explained_at_its_characters(text, where, message):
    diagnostic = only(text)
    assert diagnostic.range == where
    assert message in diagnostic.message


def test_non_ascii_before_an_error_shifts_the_range_in_utf16_units():
    diagnostic = only('name = "😀é" x\n')
    # '"😀é"' is 1 + 2 + 1 + 1 units: the stray token starts at column 13.
    assert diagnostic.range == rng(0, 13, 14)


def test_errors_in_several_statements_are_all_reported_once():
    found = syntax_diagnostics(parse_document('a = \n[problem]\nop = "conv\nok = 1\nb = [1,,2]\n'))
    assert [(d.range, d.message.split(":")[0]) for d in found] == [
        (rng(0, 2, 3), "expected a value after '='"),
        (rng(2, 5, 10), "unterminated string"),
        (rng(4, 7, 8), "expected a value before ','"),
    ]


def test_valid_documents_have_no_syntax_diagnostics():
    text = '# c\nextends = "b.kernel.toml"\n[problem]\nop = "conv" # x\npost_ops = [\n  "relu", # r\n  "sum",\n]\n' \
           '[config]\nslm = { bufs = 3 }\nslm2.bufs = 0x10\nm = """\nab\\\n  c"""\n'
    doc = parse_document(text)
    assert doc.faults == ()
    assert syntax_diagnostics(doc) == []
