"""The did-you-mean quick fix on the diagnostics kdd writes for misspelt keys, values, tile dims, targets
and tables: applied, it gives back the document as it was before the typo."""
from pathlib import Path

import pytest

from kdd.core.engine import Engine, Source
from kdd.server.lsp import convert
from kdd.server.lsp.code_actions import did_you_mean_fix

BASE = (Path(__file__).resolve().parents[2] / "examples" / "resnet50_3x3.kernel.toml").read_text()


def _apply(text: str, edit) -> str:
    lines = text.split("\n")
    line = lines[edit.range.start.line]
    lines[edit.range.start.line] = line[:edit.range.start.character] + edit.new_text + line[edit.range.end.character:]
    return "\n".join(lines)


@pytest.mark.parametrize("right, typo", [
    ('fma = "dpas"', 'fmaa = "dpas"'),            # a key
    ('prop = "fwd"', 'prop = "fwdd"'),            # a value
    ('iter = "mb16oc32ic16"', 'iter = "mb16occ32ic16"'),  # a dim inside a tile
    ('hw = "xehpg"', 'hw = "xehgp"'),             # a target
    ('slm = { bufs = 3 }', 'slm = { bufz = 3 }'),  # a key of an inline table
    ("[check]", "[chek]"),                        # a table
])
def test_the_fix_undoes_the_typo(right, typo):
    text = BASE.replace(right, typo)
    found = [d for d in Engine().parse(Source(text, "x.kernel.toml")).diagnostics_json() if "did you mean" in d["message"]]
    assert found, typo
    fix = did_you_mean_fix("u", text, convert.diagnostic(found[0]))
    (edit,) = fix.edit.changes["u"]
    assert _apply(text, edit) == BASE and fix.kind == "quickfix"


def test_no_fix_without_a_suggestion():
    text = BASE.replace('fma = "dpas"', 'zzzzzz = 1')
    for d in Engine().parse(Source(text, "x.kernel.toml")).diagnostics_json():
        if "did you mean" not in d["message"]:
            assert did_you_mean_fix("u", text, convert.diagnostic(d)) is None
