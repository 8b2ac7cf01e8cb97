"""``kdd.core`` is a pure library: it never imports the server, the LSP or file-watching packages."""
import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "core"
FORBIDDEN = ("kdd.server", "pygls", "lsprotocol", "watchdog")


def test_core_imports_no_adapter_package():
    found = []
    for path in CORE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            found += [f"{path.relative_to(CORE)}: {n}" for n in names if n.startswith(FORBIDDEN)]
    assert found == []


@pytest.mark.parametrize("simulator", ["xesim", "ptxsim"])
def test_the_simulators_import_nothing_from_the_code_generator_they_check(simulator):
    found = []
    for path in (CORE / simulator).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            found += [f"{path.name}: {n}" for n in names if n.startswith("kdd.core.codegen")]
    assert found == []
    assert (CORE / simulator / "machine.py").exists()
