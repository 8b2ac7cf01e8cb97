"""The architecture invariants of docs/architecture.md, each checked here.

The package graph is read from the source (every ``import`` statement, those
inside functions included: a lazy import is a dependency too); a unit is a
package of ``kdd.core`` or ``kdd.server`` (``kdd.core.ir``, ``kdd.server.lsp``)
or a top-level module (``kdd.core.toolchain``)."""
import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"

# The allowed directions: each unit and the units it may import (docs/architecture.md lists them).
ALLOWED = {
    "core": {"core.generated_code"},
    "core.generated_code": set(),
    "core.ir": {"core.generated_code"},
    "core.toolchain": set(),
    "core.lazy_exports": set(),
    "core.layout": {"core.ir", "core.lazy_exports"},
    "core.problem": {"core.ir", "core.lazy_exports"},
    "core.targets": {"core.ir"},
    "core.config": {"core.ir", "core.layout", "core.problem", "core.targets", "core.lazy_exports"},
    "core.builder": {"core.ir", "core.layout", "core.problem", "core.targets", "core.config"},
    "core.passes": {"core.ir", "core.targets", "core.config"},
    "core.interp": {"core.ir", "core.problem", "core.targets", "core.config", "core.builder"},
    "core.codegen": {"core.ir", "core.targets", "core.passes", "core.interp", "core.toolchain"},
    "core.xesim": {"core.interp", "core.targets", "core.toolchain"},
    "core.ptxsim": {"core.interp", "core.xesim"},
    "core.spec": {"core.ir", "core.layout", "core.problem", "core.targets", "core.config", "core.passes",
                  "core.lazy_exports"},
    "core.engine": {"core.ir", "core.layout", "core.problem", "core.targets", "core.config", "core.builder",
                    "core.passes", "core.interp", "core.codegen", "core.xesim", "core.ptxsim", "core.spec",
                    "core.toolchain", "core.lazy_exports"},
    "server": {"core"},
    "server.version": set(),
    "server.watch": {"core.spec"},
    "server.rpc": {"core.*", "server.version"},
    "server.sweep": {"core.*", "server.rpc"},
    "server.lsp": {"core.*", "server.rpc", "server.watch", "server.version"},
    "server.view": {"core.*", "server.rpc", "server.lsp", "server.watch"},
    "server.cli": {"core.*", "server.*"},
}
ADAPTER_PACKAGES = ("kdd.server", "pygls", "lsprotocol", "watchdog")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return "kdd." + ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path):
    """``(imported module, line)`` of every import in ``path``, relative ones resolved, at any depth."""
    module = _module_name(path).split(".")
    package = module if path.name == "__init__.py" else module[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                yield ".".join(base + ([node.module] if node.module else [])), node.lineno
            else:
                yield node.module or "", node.lineno


def _unit(module: str) -> str:
    """``core.ir`` of ``kdd.core.ir.simplify.engine``."""
    return ".".join(module.split(".")[1:3])


def _sources():
    for top in ("core", "server"):
        yield from sorted((ROOT / top).rglob("*.py"))


def _graph() -> dict[tuple[str, str], list[str]]:
    """Edges between units, each with the places that make it."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in _sources():
        here = _unit(_module_name(path))
        for name, line in _imports(path):
            if name.startswith("kdd.") and _unit(name) != here:
                edges[(here, _unit(name))].append(f"{path.relative_to(ROOT)}:{line}")
    return edges


def _cycle(edges) -> list[str] | None:
    """One cycle of the graph, as its units in order, or None."""
    succ: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        succ[a].add(b)
    state: dict[str, int] = {}  # 1 on the path, 2 done
    for root in sorted(succ):
        if state.get(root):
            continue
        path, stack = [root], [iter(sorted(succ[root]))]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(succ[nxt])))
    return None


def _allowed(a: str, b: str) -> bool:
    rules = ALLOWED.get(a)
    return rules is not None and any(b == r or (r.endswith(".*") and b.startswith(r[:-1])) for r in rules)


def test_cycle_finder_finds_a_cycle_and_none_in_a_dag():
    assert _cycle({("a", "b"): [], ("b", "c"): [], ("c", "a"): []}) == ["a", "b", "c", "a"]
    assert _cycle({("a", "b"): [], ("a", "c"): [], ("b", "c"): []}) is None


def test_the_package_graph_with_imports_inside_functions_has_no_cycle():
    edges = _graph()
    cycle = _cycle(edges)
    where = [f"{a} -> {b}: {edges[(a, b)][:3]}" for a, b in zip(cycle, cycle[1:])] if cycle else []
    assert cycle is None, where


def test_every_import_goes_in_an_allowed_direction():
    edges = _graph()
    assert set(ALLOWED) >= {a for a, _ in edges}, "a unit without a rule: add it to ALLOWED and the doc"
    wrong = {f"{a} -> {b}": places[:3] for (a, b), places in edges.items() if not _allowed(a, b)}
    assert wrong == {}


def test_the_allowed_directions_are_the_documented_ones():
    # The doc's table "unit | may import" and ALLOWED say the same.
    rows = dict(re.findall(r"^\| `((?:core|server)(?:\.[\w.]+)?)` \| (.*) \|$", DOC.read_text(), re.M))
    documented = {unit: {u for u in re.findall(r"`([\w.*]+)`", deps)} for unit, deps in rows.items()}
    assert documented == ALLOWED


def test_core_imports_no_adapter_package():
    found = [f"{path.relative_to(ROOT)}:{line}: {name}" for path in (ROOT / "core").rglob("*.py")
             for name, line in _imports(path) if name.startswith(ADAPTER_PACKAGES)]
    assert found == []


@pytest.mark.parametrize("simulator", ["xesim", "ptxsim"])
def test_the_simulators_import_nothing_from_the_code_generator_they_check(simulator):
    found = [f"{path.name}:{line}: {name}" for path in (ROOT / "core" / simulator).rglob("*.py")
             for name, line in _imports(path) if name.startswith("kdd.core.codegen")]
    assert found == []
    assert (ROOT / "core" / simulator / "machine.py").exists()


def _folder_map() -> dict[str, str]:
    text = DOC.read_text().split("## Folder map", 1)[1]
    return dict(re.findall(r"^\| `([^`]+)` \| (.*) \|$", text, re.M))


def test_the_folder_map_names_every_package_and_module_that_exists():
    rows = _folder_map()
    missing = [folder for folder in rows if not (ROOT / folder).exists()]
    assert missing == []
    unnamed = []
    for top in ("core", "server"):
        for init in sorted((ROOT / top).rglob("__init__.py")):
            folder = init.parent.relative_to(ROOT).as_posix() + "/"
            if folder not in rows:
                unnamed.append(folder)
                continue
            named = set(re.findall(r"`([\w./]+)`", rows[folder]))
            unnamed += [f"{folder}{m.stem}" for m in sorted(init.parent.glob("*.py"))
                        if m.stem != "__init__" and m.stem not in named and m.name not in named]
    assert unnamed == []


# The folders whose IR walks go through the toolkit of core/ir/visitor.py (docs/architecture.md).
TOOLKIT_FOLDERS = ("core/ir", "core/passes", "core/interp", "core/builder", "core/layout", "core/config", "core/engine",
                   "core/codegen", "core/xesim", "core/ptxsim")
HAND_WALK = re.compile(r"^\s*while stack\s*:", re.M)


def _documented_hand_walks() -> dict[str, int]:
    """The table of hand-written walks under the toolkit invariant: module -> how many."""
    text = DOC.read_text().split("IR walks go through the toolkit", 1)[1].split("**Architecture invariant:**", 1)[0]
    return {path: int(n) for path, n in re.findall(r"^\| `(core/[\w/]+\.py)` \| (\d+) \|", text, re.M)}


def test_ir_walks_go_through_the_toolkit_but_where_documented():
    found = {}
    for folder in TOOLKIT_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            n = len(HAND_WALK.findall(path.read_text()))
            if n:
                found[path.relative_to(ROOT).as_posix()] = n
    documented = _documented_hand_walks()
    assert "core/ir/visitor.py" in documented  # the table was read
    assert found == documented, "a hand-written stack walk: use kdd.core.ir.visitor, or give it a row and a reason"
