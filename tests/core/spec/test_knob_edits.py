"""Knob changes as text edits: the edited document, read again, sets the knob to the value (where the
document writes it, in ``line``, or nowhere yet), and writing the defaults out leaves the same config."""
from pathlib import Path

import pytest

from kdd.core.config.values import Buffering, Subtiles
from kdd.core.spec import load_spec, parse_document
from kdd.core.spec.knob_edits import explicit_defaults, repair_settings, set_knob

EXAMPLES = sorted((Path(__file__).resolve().parents[3] / "examples").glob("*.kernel.toml"))
LINE = ('[problem]\nop = "conv"\nprop = "fwd"\nshape = "mb32ic64ih56oc64oh56kh3ph1"\ntypes = "f16:f16:f16"\n\n'
        '[target]\nhw = "xehpg"\n\n[config]\nline = "simd=8 l=kh3kw3ic4 T=oc2ow2 i=ic16oc32ow16 bufs=3 S=a1b1"\n'
        'regs = 128\n')


def _apply(text: str, edit) -> str:
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    a = offsets[edit.range.start.line] + edit.range.start.character
    b = offsets[edit.range.end.line] + edit.range.end.character
    return text[:a] + edit.new_text + text[b:]


def _spec(text: str, path=None):
    spec, diagnostics = load_spec(text, path)
    assert spec is not None, [d.message for d in diagnostics]
    return spec


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name.split(".")[0])
def test_explicit_defaults_keep_the_config_and_set_every_knob(path):
    text = path.read_text()
    spec = _spec(text, str(path))
    edit = explicit_defaults(parse_document(text), spec)
    if edit is None:
        return
    after = _spec(_apply(text, edit), str(path))
    assert after.config == spec.config
    assert set(after.user_knobs) > set(spec.user_knobs)
    assert explicit_defaults(parse_document(_apply(text, edit)), after) is None  # nothing left to write out


@pytest.mark.parametrize("knob, value", [
    ("regs", 256),                      # a TOML key
    ("subtiles", Subtiles(a=2)),        # a token of line
    ("iter", None),                     # a token of line, halved
    ("prefetch", Buffering(2)),         # not written: added to [config]
])
def test_set_knob_where_it_is_written_or_adds_it(knob, value):
    spec = _spec(LINE)
    if value is None:
        (_, value), = repair_settings(spec, {"knob": knob})
    after = _spec(_apply(LINE, set_knob(parse_document(LINE), spec, knob, value)))
    assert getattr(after.config, knob) == value
    others = [k for k in spec.user_knobs if k != knob]
    assert all(getattr(after.config, k) == getattr(spec.config, k) for k in others)


def test_repairs_name_values_the_config_can_take():
    spec = _spec(LINE)
    settings = {r: repair_settings(spec, {"knob": r}) for r in ("regs", "subtiles", "pipeline", "slm", "prefetch", "iter")}
    assert settings["regs"] == [("regs", 256)]
    assert [v for _, v in settings["subtiles"]] == [Subtiles(a=2), Subtiles(b=2)]
    assert settings["pipeline"][0][1].reuse_headers and settings["slm"][0][1].bufs == 2
    assert settings["prefetch"] == []  # it prefetches nothing already
    assert str(settings["iter"][0][1]) == "ic16oc16ow16"
