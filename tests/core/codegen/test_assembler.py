"""The assembler runner: a missing tool is a report, not a crash; errors come back as messages."""
from __future__ import annotations

import shutil

import pytest

from kdd.core.codegen import assemble

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
