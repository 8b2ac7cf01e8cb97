"""ptxas and nvdisasm: PTX to a cubin with its resource report, and SASS with live registers per line.

The tools come from the PyPI wheels ``nvidia-cuda-nvcc`` (``ptxas``) and
``nvidia-cuda-nvdisasm`` (``nvdisasm``), installed into the virtual
environment by ``tools/setup.sh``; :func:`kdd.core.toolchain.find_tool` looks in
the ``nvidia/*/bin`` folders of the running interpreter's site-packages, then
on ``PATH``. A missing tool is a report with ``ok: False`` and the reason.

:func:`ptxas` runs ``ptxas -arch=<the .target> -v -lineinfo`` and parses ``-v``
(registers, spill stores and loads, stack frame, barriers, constant bank).
:func:`sass` runs nvdisasm once on the cubin, ``--print-life-ranges
--life-range-mode count`` (the number of live general registers at every
instruction), and joins it by instruction offset with the ``.loc`` line each
instruction came from, read from the cubin's own line table
(:mod:`.line_table`: nvdisasm ignores ``--print-line-info`` together with life
ranges, and a second run cost as much as the first).
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field, replace
from functools import lru_cache

from kdd.core.toolchain import find_tool

from ..assembler import AssemblerReport, beside_version
from .line_table import LineTableError, lines_at


@lru_cache(maxsize=None)
def tool_version(path: str) -> str | None:
    try:
        run = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [ln.strip() for ln in run.stdout.splitlines() if ln.strip()]
    return lines[-1] if lines else None


@dataclass
class PtxasResult:
    """The assembler report plus the cubin and ptxas's resource figures."""

    report: AssemblerReport
    cubin: bytes | None = None
    resources: dict = field(default_factory=dict)


_USED = re.compile(r"Used (\d+) registers")
_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_BARRIERS = re.compile(r"used (\d+) barriers")


def parse_resources(text: str) -> dict:
    """ptxas ``-v`` figures: registers, stack, spill stores and loads (bytes), barriers."""
    out: dict = {}
    m = _USED.search(text)
    if m:
        out["registers"] = int(m.group(1))
    m = _SPILL.search(text)
    if m:
        out["stack"], out["spill_stores"], out["spill_loads"] = (int(g) for g in m.groups())
    m = _BARRIERS.search(text)
    if m:
        out["barriers"] = int(m.group(1))
    return out


def ptxas(text: str, arch: str | None = None, timeout: float = 300.0) -> PtxasResult:
    """Assemble PTX ``text`` for ``arch`` (by default the module's ``.target``: ``sm_90a`` where it uses
    wgmma, ``sm_90`` otherwise): ok means no error, no warning and no spill."""
    if arch is None:
        m = re.search(r"^\.target\s+(sm_\w+)", text, re.M)
        arch = m.group(1) if m else "sm_90"
    path = find_tool("ptxas")
    if path is None:
        return PtxasResult(AssemblerReport("ptxas", None, False, [
            "ptxas is not installed (PyPI nvidia-cuda-nvcc; tools/setup.sh installs it into .venv)"]))
    result, version = beside_version(lambda: tool_version(path), lambda: _ptxas(path, text, arch, timeout))
    result.report = replace(result.report, version=version)
    return result


def _ptxas(path: str, text: str, arch: str, timeout: float) -> PtxasResult:
    """:func:`ptxas` with the tool at ``path``, its report without the tool's version."""
    with tempfile.TemporaryDirectory(prefix="kdd-ptx-") as tmp:
        src, out = os.path.join(tmp, "kernel.ptx"), os.path.join(tmp, "kernel.cubin")
        with open(src, "w", encoding="utf-8") as f:
            f.write(text)
        try:
            run = subprocess.run([path, f"-arch={arch}", "-v", "-lineinfo", "--warn-on-spills", src, "-o", out],
                                 capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return PtxasResult(AssemblerReport("ptxas", None, False, [f"ptxas ran longer than {timeout:g} s"]))
        lines = [ln.strip() for ln in (run.stdout + run.stderr).splitlines() if ln.strip()]
        info = [ln for ln in lines if ln.startswith("ptxas info") or "bytes stack frame" in ln]
        messages = [ln for ln in lines if ln not in info]
        resources = parse_resources("\n".join(info))
        if run.returncode != 0 or not os.path.exists(out):
            return PtxasResult(AssemblerReport("ptxas", None, False,
                                               messages or [f"ptxas exited with {run.returncode}"]), None, resources)
        with open(out, "rb") as f:
            cubin = f.read()
    if resources.get("spill_stores") or resources.get("spill_loads"):
        messages.append(f"ptxas spilled: {resources['spill_stores']} bytes stored, {resources['spill_loads']} "
                        f"bytes loaded ({resources.get('registers')} registers allocated)")
    ok = not messages
    return PtxasResult(AssemblerReport("ptxas", None, ok, messages, len(cubin)), cubin, resources)


_LIVE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?;)\s*//\s*\|\s*(\d*)")


@dataclass
class SassLine:
    offset: int
    text: str
    live_regs: int
    ptx_line: int | None = None      # 0-based line of the PTX listing

    def to_dict(self) -> dict:
        return {"offset": self.offset, "text": self.text, "live_regs": self.live_regs, "ptx_line": self.ptx_line}


def _run(path: str, args: list[str], cubin: str, timeout: float) -> str:
    run = subprocess.run([path, *args, cubin], capture_output=True, text=True, timeout=timeout)
    if run.returncode != 0:
        raise RuntimeError(" ".join((run.stdout + run.stderr).split())[:500] or f"nvdisasm exited {run.returncode}")
    return run.stdout


def _code(text: str) -> list[str]:
    """The lines of the ``.text`` sections (the data sections have offsets too)."""
    out, inside = [], False
    for line in text.splitlines():
        if ".section" in line:
            inside = ".text." in line
        elif inside:
            out.append(line)
    return out


def parse_life_ranges(text: str) -> list[tuple[int, str, int]]:
    """(offset, instruction, live GPRs) of every SASS instruction in ``nvdisasm -plr -lrm count``."""
    out = []
    for line in _code(text):
        m = _LIVE.search(line)
        if m:
            out.append((int(m.group(1), 16), " ".join(m.group(2).split()), int(m.group(3) or 0)))
    return out


def sass(cubin: bytes, timeout: float = 300.0) -> tuple[list[SassLine], str | None]:
    """SASS lines with live registers and their PTX lines, or ``([], reason)``."""
    path = find_tool("nvdisasm")
    if path is None:
        return [], "nvdisasm is not installed (PyPI nvidia-cuda-nvdisasm; tools/setup.sh installs it into .venv)"
    with tempfile.TemporaryDirectory(prefix="kdd-sass-") as tmp:
        binary = os.path.join(tmp, "kernel.cubin")
        with open(binary, "wb") as f:
            f.write(cubin)
        try:
            live = parse_life_ranges(_run(path, ["--print-life-ranges", "--life-range-mode", "count"], binary, timeout))
        except (OSError, subprocess.TimeoutExpired, RuntimeError) as exc:
            return [], f"nvdisasm failed: {exc}"
    try:
        where = lines_at(cubin, [off for off, _, _ in live])
    except LineTableError as exc:
        return [], f"the cubin's line table cannot be read: {exc}"
    return [SassLine(off, text, n, where[off] - 1 if off in where else None) for off, text, n in live], None
