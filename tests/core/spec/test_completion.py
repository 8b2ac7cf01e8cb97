"""Completion proposes what the schema allows where the cursor is, on half-typed text."""
import pytest

from kdd.core.passes.kernel_pipeline import KERNEL_PIPELINE
from kdd.core.spec import load_spec
from kdd.core.spec.completion import LAYOUT_TAGS, complete
from kdd.core.spec.schema import SCHEMA


def labels(text: str, line: int, character: int) -> list[str]:
    return [c.label for c in complete(text, line, character)]


def test_table_names_after_a_bracket():
    assert labels("[", 0, 1) == [t.name for t in SCHEMA if t.name]


def test_keys_of_the_current_table_not_yet_written():
    text = '[problem]\nop = "conv"\n\n[config]\nfma = "dpas"\nsi'
    got = labels(text, 5, 2)
    assert "simd" in got and "fma" not in got and "op" not in got
    assert "op" not in labels(text, 2, 0) and "shape" in labels(text, 2, 0)


@pytest.mark.parametrize("line, expected", [
    ('hw = "', ["xehpg", "xehpc", "xe2", "sm_90"]),
    ('fma = "', ["mad", "dp4a", "dpas", "dpasw", "fma", "mma"]),
    ('src = "a', list(LAYOUT_TAGS["src"])),
    ('post_ops = ["relu", "', None),
    ('stage = "', ["final", "asm", "build", *KERNEL_PIPELINE.names()]),
])
def test_values_of_enums_layout_tags_post_ops_and_pass_names(line, expected):
    table = {"hw": "target", "fma": "config", "src": "problem", "post_ops": "problem", "stage": "check"}
    key = line.split(" ")[0]
    text = f"[{table[key]}]\n{line}"
    got = labels(text, 1, len(line))
    if expected is None:
        assert "gelu_erf" in got and "sum" in got
    else:
        assert got == expected


def test_utf16_positions_and_out_of_range_lines():
    assert labels('[target]\n# é\U0001f600\nhw = "', 2, 6) == ["xehpg", "xehpc", "xe2", "sm_90"]
    assert labels("[target]\n", 9, 0) == []


def test_a_check_stage_is_read_and_a_misspelled_one_is_an_error():
    base = '[problem]\nop = "gemm"\nshape = "m16n16k16"\n[target]\nhw = "xehpg"\n[check]\n'
    spec, _ = load_spec(base + 'stage = "hoist"\n')
    assert spec.check_stage == "hoist"
    spec, diagnostics = load_spec(base + 'stage = "hoisst"\n')
    assert spec is None and any("did you mean 'hoist'" in d.message for d in diagnostics)
    assert load_spec(base)[0].check_stage is None   # no stage: the check runs the code
