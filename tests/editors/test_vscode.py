"""The VS Code extension: strict TypeScript, node's unit tests of its logic, protocol tests that drive the
real ``kdd lsp`` through vscode-jsonrpc, and the .vsix that @vscode/vsce packages (VS Code itself cannot
run here, so the editor-API layer is kept thin and everything under it is tested)."""
import json
import os
import re
import subprocess
import zipfile

import pytest
from editor_tools import KDD, VSCODE, need

# The editor clients' own tests (node, Neovim, chromium): the whole suite's, not make test-fast's.
pytestmark = pytest.mark.slow


def _npm(*args: str, env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    need("npm")
    if not (VSCODE / "node_modules" / ".bin" / "tsc").exists():
        pytest.fail("editor-clients/vscode/node_modules is missing: run tools/setup_editors.sh (make test runs it)")
    return subprocess.run(["npm", "run", "--silent", *args], cwd=VSCODE, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def compiled():
    out = _npm("compile")
    assert out.returncode == 0, out.stdout + out.stderr  # tsc --strict: any type error fails here
    return out


def test_unit_and_protocol_tests_pass(compiled, tmp_path):
    out = subprocess.run(["node", "--test", "out/test/"], cwd=VSCODE, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "KDD_BIN": KDD, "TMPDIR": str(tmp_path)})
    counts = dict(re.findall(r"^# (tests|pass|fail) (\d+)$", out.stdout, re.M))
    assert out.returncode == 0 and counts.get("fail") == "0", out.stdout[-4000:] + out.stderr[-2000:]
    assert int(counts["pass"]) >= 12  # the unit tests and the two protocol sessions all ran


def test_vsix_carries_the_extension_its_dependencies_and_the_view_page(compiled, tmp_path):
    vsix = tmp_path / "kdd.vsix"
    out = subprocess.run([str(VSCODE / "node_modules" / ".bin" / "vsce"), "package", "--skip-license", "-o", str(vsix)],
                         cwd=VSCODE, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    with zipfile.ZipFile(vsix) as z:
        names = set(z.namelist())
        manifest = json.loads(z.read("extension/package.json"))
        z.extractall(tmp_path / "x")
    assert "extension/" + manifest["main"].removeprefix("./") in names
    for page in ("index.html", "view.js", "view.css", "model.js"):
        assert f"extension/media/{page}" in names
    assert not any(n.startswith("extension/src/") or n.startswith("extension/out/test/") for n in names)
    assert manifest["contributes"]["languages"][0]["extensions"] == [".kernel.toml"]
    # the packaged logic loads with the packaged model and finds the packaged language client
    script = ("const l = require('./extension/out/logic.js');"
              "require.resolve('vscode-languageclient/node', {paths: ['./extension/out']});"
              "console.log(l.passItems([{name: 'unroll', changed: true, ms: 1, nodes: 2, cached: false}], false)"
              ".map(i => i.pass).join(' '))")
    run = subprocess.run(["node", "-e", script], cwd=tmp_path / "x", capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == "build unroll final", run.stderr
