"""``extends``: inheritance key by key, cycles and missing files reported on the extends value."""
from pathlib import Path

from kdd.core.spec.document import Position, Range, parse_document
from kdd.core.spec.extends import load_chain
from kdd.core.spec.lint import lint_document

FIXTURES = Path(__file__).parent / "fixtures"


def files(mapping):
    """A ``read_text`` over in-memory files keyed by absolute path under /cfg."""
    def read_text(path):
        if path not in mapping:
            raise FileNotFoundError(2, "No such file or directory", path)
        return mapping[path]
    return read_text


def test_child_keys_override_parent_keys_per_table():
    child = (FIXTURES / "variant.kernel.toml").read_text()
    chain, diagnostics = load_chain(parse_document(child), str(FIXTURES / "variant.kernel.toml"),
                                    lint=lint_document)
    assert diagnostics == []
    assert [layer.path for layer in chain.layers] == [str(FIXTURES / "variant.kernel.toml"),
                                                       str(FIXTURES / "base.kernel.toml")]
    slm = chain.get(("config", "slm"))
    assert slm.entry.value.value == {"bufs": 3} and not slm.inherited
    assert chain.get(("config", "slm", "bufs")).entry.value.value == 3
    simd = chain.get(("config", "simd"))
    assert simd.inherited and simd.path == str(FIXTURES / "base.kernel.toml") and simd.entry.value.value == 8
    assert chain.get(("problem", "op")).entry.value.value == "conv"
    assert chain.get(("problem", "post_ops")).entry.value.value == ("relu",)
    assert chain.get(("extends",)) is None


def test_a_dotted_child_key_replaces_the_whole_parent_key():
    read = files({"/cfg/base.kernel.toml": "[config]\nslm = { bufs = 2, gmem = 1 }\n"})
    doc = parse_document('extends = "base.kernel.toml"\n[config]\nslm.bufs = 3\n')
    chain, _ = load_chain(doc, "/cfg/child.kernel.toml", read)
    assert chain.get(("config", "slm", "gmem")) is None
    assert chain.get(("config", "slm", "bufs")).entry.value.value == 3


def test_a_cycle_is_reported_on_the_extends_value_with_its_files():
    read = files({"/cfg/b.kernel.toml": 'extends = "sub/c.kernel.toml"\n',
                  "/cfg/sub/c.kernel.toml": 'extends = "../a.kernel.toml"\n'})
    doc = parse_document('# a\nextends = "b.kernel.toml"\n')
    chain, diagnostics = load_chain(doc, "/cfg/a.kernel.toml", read)
    assert len(diagnostics) == 1
    cycle = diagnostics[0]
    assert cycle.range == Range(Position(1, 10), Position(1, 25))
    assert cycle.message == ("extends cycle: a.kernel.toml -> b.kernel.toml -> sub/c.kernel.toml "
                             "-> a.kernel.toml")
    assert cycle.related[0].path == "/cfg/sub/c.kernel.toml"
    assert len(chain.layers) == 3


def test_a_missing_file_and_a_missing_grandparent_are_reported_on_the_extends_value():
    doc = parse_document('extends = "nope.kernel.toml"\n')
    _, diagnostics = load_chain(doc, "/cfg/a.kernel.toml", files({}))
    assert [d.message for d in diagnostics] == ["cannot read 'nope.kernel.toml': No such file or directory"]
    assert diagnostics[0].range == Range(Position(0, 10), Position(0, 28))
    read = files({"/cfg/b.kernel.toml": 'extends = "gone.kernel.toml"\n'})
    _, diagnostics = load_chain(parse_document('extends = "b.kernel.toml"\n'), "/cfg/a.kernel.toml", read)
    assert diagnostics[0].message == ("'b.kernel.toml' extends 'gone.kernel.toml', which cannot be read: "
                                      "No such file or directory")


def test_problems_inside_a_parent_are_summarized_on_the_extends_value():
    read = files({"/cfg/base.kernel.toml": "[config]\nsimdd = 8\nx = \n"})
    doc = parse_document('extends = "base.kernel.toml"\n')
    _, diagnostics = load_chain(doc, "/cfg/a.kernel.toml", read, lint=lint_document)
    assert len(diagnostics) == 1
    summary = diagnostics[0]
    assert summary.range == Range(Position(0, 10), Position(0, 28))
    assert summary.message.startswith("base.kernel.toml:2:1: unknown key 'simdd'")
    assert summary.message.endswith("(and 1 more)")
    assert {(r.path, r.range.start.line) for r in summary.related} == {("/cfg/base.kernel.toml", 1),
                                                                      ("/cfg/base.kernel.toml", 2)}


def test_unsaved_buffers_are_served_by_the_injected_reader():
    read = files({"/cfg/base.kernel.toml": '[target]\nhw = "sm_90"\n'})
    chain, diagnostics = load_chain(parse_document('extends = "base.kernel.toml"\n'), "/cfg/x.kernel.toml", read)
    assert diagnostics == [] and chain.get(("target", "hw")).entry.value.value == "sm_90"
