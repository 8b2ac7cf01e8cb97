"""Validators of the schemas in protocol/, with the cross-file references between them resolved."""
import json
from functools import lru_cache
from pathlib import Path

import jsonschema
from referencing import Registry, Resource

PROTOCOL = Path(__file__).resolve().parents[1] / "protocol"


@lru_cache(maxsize=None)
def _registry() -> Registry:
    resources = []
    for path in PROTOCOL.glob("*.schema.json"):
        schema = json.loads(path.read_text())
        jsonschema.Draft202012Validator.check_schema(schema)
        resources.append((schema["$id"], Resource.from_contents(schema)))
    return Registry().with_resources(resources)


def validator(name: str, definition: str | None = None) -> jsonschema.Draft202012Validator:
    """The validator of ``protocol/NAME`` (or of its ``$defs/DEFINITION``)."""
    schema = json.loads((PROTOCOL / name).read_text())
    if definition is not None:
        schema = {"$ref": f"{schema['$id']}#/$defs/{definition}"}
    return jsonschema.Draft202012Validator(schema, registry=_registry())
