"""Running a target's assembler on generated text: the assembler report.

``assemble(text, target)`` runs the command in ``target.assembler`` (``iga64
-a -p=12p71 -Xauto-deps -Wall`` on Xe-HPG), then disassembles the binary and
assembles the disassembly again: a listing *round-trips* when both binaries
are equal. When the tool is not installed the report says so (``ok: False``
with the reason) instead of raising.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Callable, Generic, TypeVar

from kdd.core.toolchain import find_tool

R = TypeVar("R")

INSTALL_HINT = {
    "iga64": "on Debian: apt-get install libigc-tools; tools/setup.sh does it",
    "iga64-xe2": "Debian sid's libigc2-tools unpacked into .venv/bin/iga64-xe2 by tools/setup.sh",
}


@dataclass(frozen=True)
class AssemblerReport:
    """What the assembler said: ``ok`` means no error and no warning; ``round_trip`` that
    disassembling and reassembling gives the same bytes (None when not tried)."""

    tool: str
    version: str | None
    ok: bool
    messages: list[str] = field(default_factory=list)
    binary_bytes: int | None = None
    round_trip: bool | None = None

    def to_dict(self) -> dict:
        return {"tool": self.tool, "version": self.version, "ok": self.ok, "messages": list(self.messages),
                "binary_bytes": self.binary_bytes, "round_trip": self.round_trip}


@lru_cache(maxsize=None)
def tool_version(tool: str) -> str | None:
    """The tool's version line (``iga64`` prints it when run without arguments), or None."""
    path = find_tool(tool)
    if path is None:
        return None
    try:
        run = subprocess.run([path], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in (run.stdout + run.stderr).splitlines():
        if "Assembler" in line or "version" in line.lower():
            return line.strip()
    return None


def _messages(stdout: str, stderr: str) -> list[str]:
    return [line.strip() for line in (stdout + stderr).splitlines() if line.strip()]


def assemble(text: str, command: tuple[str, ...], platform_flag: str, round_trip: bool = True,
             timeout: float = 120.0, versioned: bool = True) -> AssemblerReport:
    """Assemble ``text`` with ``command`` (the target's assembler command line; the input and
    ``-o`` output are appended). ``platform_flag`` (``-p=12p71``) is reused to disassemble.
    ``versioned=False`` spares the process that asks the tool its version (the report's ``version``
    is then None) where no one reads the report."""
    return Assembly(text, command, platform_flag, round_trip, timeout, versioned).report()


class Assembly:
    """:func:`assemble` started: the tool's first run is a process from the moment this is made, and
    :meth:`report` waits for it (and for the round trip's runs, which follow it in a thread).

    The caller goes on with Python work meanwhile. The first run is started here rather than in a
    thread because a thread's every step (making the scratch folder, writing the text, starting the
    process) waits for the interpreter lock while the caller computes, up to the switch interval
    (5 ms) each: on a loaded machine a figures-only Xe compile waited 10-60 ms for one iga64 run of
    about 5 ms."""

    def __init__(self, text: str, command: tuple[str, ...], platform_flag: str, round_trip: bool = True,
                 timeout: float = 120.0, versioned: bool = True):
        self.tool = tool = command[0]
        self._done: AssemblerReport | None = None
        path = find_tool(tool)
        if path is None:
            self._done = AssemblerReport(tool, None, False,
                                         [f"{tool} is not installed ({INSTALL_HINT.get(tool, '')})"])
            return
        self._version = Background(tool_version, tool) if versioned else None
        self._path, self._platform, self._timeout = path, platform_flag, timeout
        self._tmp = tempfile.TemporaryDirectory(prefix="kdd-asm-")
        src = os.path.join(self._tmp.name, "kernel.asm")
        self._binary = os.path.join(self._tmp.name, "kernel.bin")
        try:
            with open(src, "w", encoding="utf-8") as f:
                f.write(text)
            self._proc = subprocess.Popen([path, *command[1:], src, "-o", self._binary], stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True)
        except BaseException:
            self._tmp.cleanup()
            raise
        self._rest = Background(self._finish, round_trip) if round_trip else None

    def report(self) -> AssemblerReport:
        """The assembler's report, once its runs ended (the same object when asked again)."""
        if self._done is None:
            try:
                report = self._rest.result() if self._rest is not None else self._finish(False)
            finally:
                self._tmp.cleanup()
            if self._version is not None:
                report = replace(report, version=self._version.result())
            self._done = report
        return self._done

    def _finish(self, round_trip: bool) -> AssemblerReport:
        """The first run's outcome and, with ``round_trip``, the disassembly's and the second assembly's."""
        tool, proc, binary = self.tool, self._proc, self._binary
        try:
            out, err = proc.communicate(timeout=self._timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            return AssemblerReport(tool, None, False, [f"{tool} ran longer than {self._timeout:g} s"])
        messages = _messages(out, err)
        if proc.returncode != 0 or not os.path.exists(binary):
            return AssemblerReport(tool, None, False, messages or [f"{tool} exited with {proc.returncode}"])
        size = os.path.getsize(binary)
        same = None
        if round_trip:
            same = _round_trip(self._path, self._platform, binary, self._tmp.name, self._timeout, messages)
        return AssemblerReport(tool, None, not messages and same is not False, messages, size, same)


class Background(Generic[R]):
    """``fn(*args)`` started in a thread of its own while the caller goes on (an external tool waited for
    beside Python work); :meth:`result` waits for it and returns its value or raises its exception.

    It stands in for a one-worker :class:`concurrent.futures.ThreadPoolExecutor`, whose import (with
    :mod:`logging`) cost a fresh ``kdd compile`` process about 7 ms of CPU.
    """

    def __init__(self, fn: Callable[..., R], *args: object):
        self._value: R | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fn, args), name="kdd-background")
        self._thread.start()

    def _run(self, fn: Callable[..., R], args: tuple) -> None:
        try:
            self._value = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller of result(), as a future does
            self._error = exc

    def result(self) -> R:
        """The call's value once it returned (re-raising what it raised)."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


def beside_version(version: Callable[[], str | None], run: Callable[[], R]) -> tuple[R, str | None]:
    """``run()`` and the tool's ``version()`` at once: asking a tool its version is a process of its own
    (once per kdd process, then remembered), which a compile need not wait for before running the tool."""
    asked = Background(version)
    return run(), asked.result()


def _round_trip(path: str, platform_flag: str, binary: str, tmp: str, timeout: float,
                messages: list[str]) -> bool:
    dis, again = os.path.join(tmp, "kernel.dis"), os.path.join(tmp, "again.bin")
    run = subprocess.run([path, "-d", platform_flag, binary], capture_output=True, text=True, timeout=timeout)
    if run.returncode != 0:
        messages.append(f"disassembly failed: {' '.join(_messages(run.stdout, run.stderr))}")
        return False
    with open(dis, "w", encoding="utf-8") as f:
        f.write(run.stdout)
    run = subprocess.run([path, "-a", platform_flag, dis, "-o", again], capture_output=True, text=True,
                         timeout=timeout)
    if run.returncode != 0:
        messages.append(f"reassembling the disassembly failed: {' '.join(_messages(run.stdout, run.stderr))}")
        return False
    with open(binary, "rb") as a, open(again, "rb") as b:
        if a.read() != b.read():
            messages.append("the disassembly does not reassemble to the same binary")
            return False
    return True
