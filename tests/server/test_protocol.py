"""Real command outputs validate against the schemas in protocol/."""
import json
from pathlib import Path

import jsonschema
import pytest

from kdd.server.cli import main

PROTOCOL = Path(__file__).resolve().parents[2] / "protocol"
DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "benchdnn" / "conv"


def schema(name):
    s = json.loads((PROTOCOL / name).read_text())
    jsonschema.Draft202012Validator.check_schema(s)
    return jsonschema.Draft202012Validator(s)


def run_json(capsys, *argv):
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("desc", ["mb2ic64ih8oc64oh8kh3ph1", 'ic3oc16_iw5ow5kw3pw1_n"1d"',
                                  "g2ic4oc4id5kd3", "mb50ic3ih224oc64oh112kh7sh2ph3"])
def test_shape_output_matches_schema(capsys, desc):
    schema("shape.schema.json").validate(run_json(capsys, "shape", desc))


def test_schema_rejects_a_wrong_output():
    bad = {"g": 1}
    with pytest.raises(jsonschema.ValidationError):
        schema("shape.schema.json").validate(bad)
