"""The register inlay hint: the floor (C, A, B), labelled ``floor``, until a compile of the text exists;
then the compile's figure (the allocation), its source and the built IR's register model."""
from pathlib import Path

from lsprotocol import types as lsp

from kdd.core.engine import Engine, Source
from kdd.server.lsp.features import inlay_hints

EXAMPLE = Path(__file__).parents[2] / "examples" / "resnet50_3x3.kernel.toml"
WHOLE = lsp.Range(lsp.Position(0, 0), lsp.Position(100, 0))


def _regs_hints(hints):
    return [h for h in hints if h.label.startswith("  regs ")]


def test_before_a_compile_the_hint_is_the_labelled_floor():
    engine = Engine()
    parsed = engine.parse(Source(EXAMPLE.read_text(), str(EXAMPLE)))
    [hint] = _regs_hints(inlay_hints(parsed, WHOLE))
    registers = engine.compile(Source(EXAMPLE.read_text(), str(EXAMPLE)), "stats")["stats"]["registers"]
    floor, budget = registers["floor"], registers["budget"]
    parts = " + ".join(f"{k} {v}" for k, v in floor.items())
    assert hint.label == f"  regs floor {parts} = {sum(floor.values())}/{budget} GRFs (32 B) per thread"
    line = EXAMPLE.read_text().splitlines()[hint.position.line]
    assert line.startswith("iter =")


def test_with_a_compile_the_hint_is_the_allocation():
    engine = Engine()
    source = Source(EXAMPLE.read_text(), str(EXAMPLE))
    registers = engine.compile(source, "stats")["stats"]["registers"]
    [hint] = _regs_hints(inlay_hints(engine.parse(source), WHOLE, registers))
    assert hint.label == f"  regs {registers['allocated']}/{registers['budget']} by the allocator (IR model {registers['ir']})"
