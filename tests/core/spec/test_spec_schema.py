"""Schema checks: unknown names with did-you-mean, wrong types, allowed values, duplicates, required keys."""
from pathlib import Path

from kdd.core.config import KNOBS
from kdd.core.spec.document import Position, Range, parse_document
from kdd.core.spec.duplicates import duplicate_diagnostics
from kdd.core.spec.kernel_spec import load_spec
from kdd.core.spec.lint import lint_document
from kdd.core.spec.schema import SCHEMA
from kdd.core.spec.schema_check import required_diagnostics, schema_diagnostics

ROOT = Path(__file__).parents[3]


def rng(line, start, end):
    return Range(Position(line, start), Position(line, end))


def one(text, check=schema_diagnostics):
    found = check(parse_document(text))
    assert len(found) == 1, found
    return found[0]


def test_a_misspelled_knob_points_at_the_key_and_suggests_the_knob():
    d = one("[config]\nsimdd = 8\n")
    assert d.range == rng(1, 0, 5)
    assert "did you mean 'simd'" in d.message and d.code == "unknown-key"


def test_onednn_short_names_suggest_the_config_key():
    assert "did you mean 'loop'" in one('[config]\nl = "kh3"\n').message
    assert "did you mean 'tg'" in one('[config]\nT = "oc4"\n').message


def test_an_unknown_table_points_at_its_name():
    d = one("[probem]\nop = 1\n")
    assert d.range == rng(0, 1, 7) and "did you mean 'problem'" in d.message


def test_a_wrong_type_points_at_the_value():
    d = one('[config]\nsimd = "8"\n')
    assert d.range == rng(1, 7, 10)
    assert d.message == "`simd` must be an integer, got string"


def test_values_outside_the_allowed_set_suggest_the_closest():
    d = one('[problem]\nop = "cnov"\n')
    assert d.range == rng(1, 5, 11)
    assert "conv, gemm" in d.message and "did you mean 'conv'" in d.message
    assert "did you mean 'xehpg'" in one('[target]\nhw = "xehgp"\n').message


def test_inline_table_keys_and_array_items_are_checked():
    d = one("[config]\nslm = { bufz = 3 }\n")
    assert d.range == rng(1, 8, 12) and "did you mean 'bufs'" in d.message
    d = one('[problem]\npost_ops = ["relu", 3]\n')
    assert d.range == rng(1, 20, 21) and d.message == "`post_ops` items must be a string, got integer"
    d = one('[config]\niter = { mb = "32" }\n')
    assert d.range == rng(1, 14, 18) and "`iter.mb` must be an integer" in d.message


def test_every_knob_is_a_config_key_and_valid_examples_pass():
    config = next(t for t in SCHEMA if t.name == "config")
    assert {k.key for k in KNOBS} | {"line", "portblas"} == {k.name for k in config.keys}
    text = "[config]\n" + "".join(f"{k.name} = {k.example}\n" for k in config.keys)
    assert schema_diagnostics(parse_document(text)) == []


def test_duplicate_keys_point_at_the_second_definition():
    d = one('[problem]\nop = "conv"\nop = "gemm"\n', duplicate_diagnostics)
    assert d.range == rng(2, 0, 2)
    assert "duplicate key 'problem.op'" in d.message and d.related[0].range == rng(1, 0, 2)
    d = one("[config]\nslm = { bufs = 3 }\nslm.gmem = 1\n", duplicate_diagnostics)
    assert d.range == rng(2, 0, 8) and "'config.slm' is already a value" in d.message
    assert "duplicate table [config]" in one("[config]\n[config]\n", duplicate_diagnostics).message
    d = one("[config]\nslm.bufs = 3\nslm = 2\n", duplicate_diagnostics)
    assert d.range == rng(2, 0, 3) and "'config.slm' is already a table (made by 'config.slm.bufs')" in d.message


def test_a_knob_redefined_whole_after_dotted_keys_is_only_a_duplicate():
    text = ('[problem]\nop = "conv"\nshape = "mb2ic16ih8oc16oh8kh3ph1"\n[target]\nhw = "xehpg"\n'
            '[config]\nslm.bufs = 3\nslm = { bufs = 2 }\n')
    _, diagnostics = load_spec(text, "k.kernel.toml")
    codes = [d.code for d in diagnostics]
    assert codes and set(codes) == {"duplicate-key"}  # no internal error from reading the knob


def test_arrays_of_tables_repeat_but_do_not_clash_with_tables():
    assert duplicate_diagnostics(parse_document("[[x]]\na = 1\n[[x]]\na = 2\n")) == []
    d = one("[x]\n[[x]]\n", duplicate_diagnostics)
    assert d.range == rng(1, 2, 3) and "already defined as a table" in d.message


def test_required_keys_are_reported_on_the_table_header_or_the_document_start():
    doc = parse_document('[problem]\nop = "conv"\n')
    present = {e.path[:n] for e in doc.entries for n in range(1, len(e.path) + 1)}
    found = {d.message: d.range for d in required_diagnostics(present, doc)}
    assert found == {
        "[problem] is missing required key 'shape'": rng(0, 1, 8),
        "missing table [target] (it needs 'hw')": rng(0, 0, 0),
    }


def test_lint_combines_every_check_in_position_order():
    found = lint_document(parse_document('[config]\nsimd = \nsimdd = 1\n[config]\n'))
    assert [(d.code, d.range.start.line) for d in found] == [("syntax", 1), ("unknown-key", 2),
                                                             ("duplicate-key", 3)]


def test_docs_describe_every_table_and_key():
    docs = (ROOT / "docs" / "config.md").read_text()
    for table in SCHEMA:
        if table.name:
            assert f"[{table.name}]" in docs
        for key in table.keys:
            assert f"`{key.name}`" in docs, f"docs/config.md does not describe {table.name}.{key.name}"
