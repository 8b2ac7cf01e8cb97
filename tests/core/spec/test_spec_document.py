"""The parsed document: values, key paths and exact source ranges."""
import dataclasses
from pathlib import Path

import pytest

from kdd.core.spec.document import Position, Range, parse_document

FIXTURES = Path(__file__).parent / "fixtures"


def rng(line, start, end, end_line=None):
    return Range(Position(line, start), Position(line if end_line is None else end_line, end))


def test_the_design_example_parses_into_tables_and_python_values():
    doc = parse_document((FIXTURES / "conv_fwd.kernel.toml").read_text())
    assert [t.name for t in doc.tables] == ["", "problem", "target", "config", "check"]
    assert doc.faults == ()
    assert doc.to_python() == {
        "problem": {"op": "conv", "prop": "fwd", "shape": "mb32ic64ih56oc64oh56kh3ph1", "types": "f16:f16:f16",
                    "src": "axb", "wei": "axcb", "dst": "axb", "post_ops": ("relu",)},
        "target": {"hw": "xehpg"},
        "config": {"fma": "dpas", "simd": 8, "regs": 256, "iter": "mb16oc32ic16", "tg": "oc2ow8",
                   "loop": "kh3kw3ic4", "slm": {"bufs": 3}},
        "check": {"shape": "mb2ic64ih8oc64oh8kh3ph1"},
    }


def test_keys_and_values_carry_their_exact_ranges():
    doc = parse_document((FIXTURES / "conv_fwd.kernel.toml").read_text())
    shape = doc.get(("problem", "shape"))
    assert shape.key_range == rng(4, 0, 5)
    assert shape.value.range == rng(4, 8, 36)
    assert doc.table("problem").header_range == rng(1, 1, 8)
    bufs = doc.get(("config", "slm", "bufs"))
    assert bufs.key_range == rng(21, 8, 12) and bufs.value.range == rng(21, 15, 16)
    relu = doc.get(("problem", "post_ops")).value.items[0]
    assert relu.range == rng(9, 12, 18) and relu.value == "relu"


def test_comments_are_kept_with_ranges():
    doc = parse_document('a = 1  # one\n# two\n')
    assert [(c.text, c.range) for c in doc.comments] == [("# one", rng(0, 7, 12)), ("# two", rng(1, 0, 5))]


def test_non_ascii_text_counts_utf16_units():
    doc = parse_document('[problem]\n"ü😀" = "é😀x"\nop = 1\n')
    entry = doc.get(("problem", "ü😀"))
    # The key is quote + 1 unit + 2 units + quote; the value starts after ' = '.
    assert entry.key_range == rng(1, 0, 5)
    assert entry.value.range == rng(1, 8, 14)
    assert entry.value.sub_range(2, 3) == rng(1, 12, 13)
    assert doc.get(("problem", "op")).value.range == rng(2, 5, 6)


def test_sub_range_follows_escapes_and_multiline_strings():
    doc = parse_document('s = "a\\tb\\u00e9c"\nm = """\nxy\\\n   z"""\n')
    s = doc.get(("s",)).value
    assert s.value == "a\tbéc"
    assert s.sub_range(1, 2) == rng(0, 6, 8)  # the two characters of \t
    assert s.sub_range(3, 5) == rng(0, 9, 16)  # \u00e9 and c
    m = doc.get(("m",)).value
    assert m.value == "xyz"
    assert m.sub_range(2, 3) == rng(3, 3, 4)


def test_scalar_kinds_decode_like_toml():
    doc = parse_document("i = 0x1F\nj = 1_000\nf = 1e-3\nb = false\nd = 1979-05-27\nn = -inf\nl = 'a\\b'\n")
    values = {e.path[0]: (e.value.kind, e.value.value) for e in doc.entries}
    assert values["i"] == ("integer", 31)
    assert values["j"] == ("integer", 1000)
    assert values["f"] == ("float", 0.001)
    assert values["b"] == ("boolean", False)
    assert values["d"][0] == "datetime" and str(values["d"][1]) == "1979-05-27"
    assert values["n"] == ("float", float("-inf"))
    assert values["l"] == ("string", "a\\b")


def test_dotted_keys_give_full_paths_and_one_range_per_part():
    doc = parse_document("[config]\nslm . bufs = 3\n")
    entry = doc.get(("config", "slm", "bufs"))
    assert entry.written_path == ("slm", "bufs")
    assert entry.key_ranges == (rng(1, 0, 3), rng(1, 6, 10))
    assert entry.key_part_range(2) == rng(1, 6, 10)
    assert entry.key_range == rng(1, 0, 10)


def test_node_at_finds_headers_keys_values_and_array_items():
    doc = parse_document((FIXTURES / "conv_fwd.kernel.toml").read_text())
    assert doc.node_at(Position(1, 3)).table.name == "problem"
    key = doc.node_at(Position(16, 2))
    assert key.part == "key" and key.entry.path == ("config", "simd")
    value = doc.node_at(Position(4, 20))
    assert value.part == "value" and value.entry.path == ("problem", "shape") and value.range == rng(4, 8, 36)
    item = doc.node_at(Position(9, 14))
    assert item.value.value == "relu" and item.range == rng(9, 12, 18)
    inner = doc.node_at(Position(21, 9))
    assert inner.part == "key" and inner.entry.path == ("config", "slm", "bufs")
    assert doc.node_at(Position(0, 3)) is None  # inside a comment


def test_documents_are_immutable():
    doc = parse_document("a = [1]\n")
    with pytest.raises(dataclasses.FrozenInstanceError):
        doc.text = "b = 2"
    with pytest.raises(dataclasses.FrozenInstanceError):
        doc.entries[0].value.kind = "string"
    python = doc.to_python()
    python["a"] = 5
    assert doc.to_python() == {"a": (1,)}


def test_broken_pairs_are_faults_and_the_rest_still_parses():
    doc = parse_document('[problem]\nop = \nshape = "mb1"\n')
    assert doc.get(("problem", "op")) is None
    assert doc.get(("problem", "shape")).value.value == "mb1"
    assert len(doc.faults) == 1 and doc.faults[0].range.start == Position(1, 0)
