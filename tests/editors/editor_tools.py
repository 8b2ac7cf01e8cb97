"""What the editor-client tests share: the repository's paths, the tools tools/setup_editors.sh installs
(a failure names the missing one and the command that installs it), and a running ``kdd view``."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
VSCODE = ROOT / "editor-clients" / "vscode"
NEOVIM = ROOT / "editor-clients" / "neovim"
KDD = str(Path(sys.executable).parent / "kdd")
NVIM_ROOT = Path(os.environ.get("KDD_NVIM_ROOT") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                 / "kdd" / "nvim-0.10")
SCREENSHOTS = os.environ.get("KDD_SCREENSHOTS")  # a folder: the tests also leave screenshots there


def need(path_or_cmd: str) -> str:
    """A tool the setup installs: its path, or a failure that says how to get it."""
    found = shutil.which(path_or_cmd) or (path_or_cmd if os.path.exists(path_or_cmd) else None)
    if not found:
        pytest.fail(f"{path_or_cmd} is missing: run tools/setup_editors.sh (make test runs it)")
    return found


def nvim_cmd() -> list[str]:
    """Debian trixie's Neovim 0.10, run through its own loader (../shared/reference/neovim-0.10.md)."""
    need(str(NVIM_ROOT / "usr" / "bin" / "nvim"))
    lib = NVIM_ROOT / "usr" / "lib" / "x86_64-linux-gnu"
    return [str(lib / "ld-linux-x86-64.so.2"), "--library-path", str(lib), str(NVIM_ROOT / "usr" / "bin" / "nvim")]


def nvim_parsers() -> list[str]:
    """Arguments that put the unpacked Neovim's tree-sitter parsers (markdown for hover windows) on its
    runtime path, where an installed Neovim finds them by itself."""
    return ["--cmd", f"set rtp+={NVIM_ROOT / 'usr' / 'lib' / 'nvim'}"]


def nvim_env() -> dict:
    return {**os.environ, "VIMRUNTIME": str(NVIM_ROOT / "usr" / "share" / "nvim" / "runtime")}


class View:
    """``kdd view FILE --no-browser`` as a subprocess; ``rpc`` asks it what the page asks."""

    def __init__(self, path: Path, cache: Path):
        self.proc = subprocess.Popen([KDD, "view", str(path), "--no-browser", "--cache-dir", str(cache)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("kdd view: http://"):
            self.close()
            raise AssertionError(f"kdd view did not start: {line!r} {self.proc.stderr.read()}")
        self.url = line.split()[2]

    def rpc(self, method: str, params: dict | None = None) -> dict:
        request = urllib.request.Request(self.url + "rpc", json.dumps({"method": method, "params": params or {}}).encode(),
                                         {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as reply:
            return json.loads(reply.read())

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
