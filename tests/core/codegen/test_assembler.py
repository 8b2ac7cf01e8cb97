"""The assembler runner: a missing tool is a report, not a crash; errors come back as messages."""
from __future__ import annotations

import os
import shutil

import pytest

from kdd.core.codegen import assemble
from kdd.core.codegen.assembler import Assembly

IGA = ("iga64", "-a", "-p=12p71", "-Xauto-deps", "-Wall")


def test_missing_tool_is_reported():
    r = assemble("(W) mov (1|M0) r1.0<1>:d 0:d\n", ("kdd-no-such-assembler", "-a"), "-p=12p71")
    assert r.ok is False and "not installed" in r.messages[0] and r.binary_bytes is None


@pytest.mark.skipif(shutil.which("iga64") is None, reason="iga64 (Debian libigc-tools) is not installed")
def test_errors_and_round_trip():
    good = assemble("(W) mov (8|M0) r10.0<1>:ud r0.0<1;1,0>:ud\n"
                    "(W) send.gtwy (8|M0) null r10 null:0 0x0 0x02000010 {EOT}\n", IGA, "-p=12p71")
    assert good.ok and good.round_trip and good.binary_bytes == 32 and good.version
    bad = assemble("(W) mov (8|M0) r15.0<1>:bf 0x3F80:bf\n", IGA, "-p=12p71")
    assert not bad.ok and any("BF" in m for m in bad.messages)


@pytest.mark.skipif(shutil.which("iga64") is None, reason="iga64 (Debian libigc-tools) is not installed")
def test_started_assembly_reports_once_and_leaves_no_scratch():
    """An ``Assembly`` runs the tool while its caller goes on: figures only (no round trip, no version) give
    the binary's size; the report is one object however often asked, and the scratch folder is gone."""
    text = "(W) mov (8|M0) r10.0<1>:ud r0.0<1;1,0>:ud\n(W) send.gtwy (8|M0) null r10 null:0 0x0 0x02000010 {EOT}\n"
    running = Assembly(text, IGA, "-p=12p71", round_trip=False, versioned=False)
    scratch = running._tmp.name
    report = running.report()
    assert report.ok and report.binary_bytes == 32 and report.round_trip is None and report.version is None
    assert running.report() is report and not os.path.exists(scratch)
    bad = Assembly("(W) mov (8|M0) r15.0<1>:bf 0x3F80:bf\n", IGA, "-p=12p71", round_trip=False, versioned=False)
    assert not bad.report().ok and bad.report().binary_bytes is None
