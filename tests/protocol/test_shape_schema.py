"""``protocol/shape.schema.json`` describes the shape of every op: conv and GEMM outputs validate, and only them."""
import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.problem import OPS, parse_shape
from kdd.server.cli import main

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "protocol" / "shape.schema.json").read_text())
jsonschema.Draft202012Validator.check_schema(SCHEMA)
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)

DESCRIPTORS = {
    "conv": ["mb2ic64ih8oc64oh8kh3ph1", 'ic3oc16_iw5ow5kw3pw1_n"1d"', "g2ic4oc4id5kd3"],
    "gemm": ["m512n512k256", "b12m384n384k64", "2x3x128x64:2x3x64x32", '1024x512:512x256_n"fc"'],
}


def test_every_op_has_descriptors_here():
    assert set(DESCRIPTORS) == set(OPS)


@pytest.mark.parametrize("op, desc", [(op, d) for op, ds in DESCRIPTORS.items() for d in ds])
def test_kdd_shape_json_output_validates_for_every_op(capsys, op, desc):
    assert main(["shape", desc]) == 0
    out = json.loads(capsys.readouterr().out)
    VALIDATOR.validate(out)
    assert out == parse_shape(desc, op).to_dict()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 9), max_size=3), st.integers(1, 10**6), st.integers(1, 10**6), st.integers(1, 10**6))
def test_any_gemm_shape_validates(batch, m, n, k):
    prefix = "x".join(map(str, batch)) + "x" if batch else ""
    VALIDATOR.validate(parse_shape(f"{prefix}{m}x{k}:{prefix}{k}x{n}").to_dict())


@pytest.mark.parametrize("bad", [
    {"batch": [], "m": 1, "n": 1, "k": 0, "name": None, "canonical": "1x0:0x1"},
    {"batch": [], "m": 1, "n": 1, "k": 1, "name": None},
    {**parse_shape("m8n8k8").to_dict(), "g": 1},
    {**parse_shape("mb2ic3oc3ih5kh3").to_dict(), "m": 1},
])
def test_the_schema_rejects_malformed_or_mixed_shapes(bad):
    with pytest.raises(jsonschema.ValidationError):
        VALIDATOR.validate(bad)
