"""Divisions by constants of values known never negative (``codegen/xe/ranges.py``): the ranges come from the
launch, loop counters and lets, a value that may wrap or go negative keeps the signed sequence, and the
unsigned sequences compute what the IR does (the examples' assembly checked in kdd's simulator)."""
from __future__ import annotations

import re
import shutil

import pytest
from xe_kernels import EXAMPLES, final

from kdd.core.codegen.xe.ranges import ValueRanges
from kdd.core.engine import Engine, Source
from kdd.core.ir import operators
from kdd.core.ir.expr import IntImm, Ramp, var
from kdd.core.ir.types import s32


def test_launch_ids_loop_counters_and_lets_bound_the_dividends():
    kernel, _, _ = final("tails.kernel.toml")
    ranges = ValueRanges(kernel)
    tid = var("thread_id0")
    x, y, z, i = (var(n) for n in ("x", "y", "z", "i"))
    assert ranges.nonnegative(tid) and ranges.nonnegative(Ramp.make(operators.mul(tid, 16), 2, 8))
    assert not ranges.nonnegative(x)                              # unbound: its type's range
    ranges.bind("x", operators.add(operators.mul(tid, 16), 3))
    ranges.bind("y", operators.add(x, -20))      # may go negative
    ranges.bind("z", operators.mul(x, 1 << 29))                   # may wrap
    ranges.bind_loop("i", IntImm.make(s32, 0), IntImm.make(s32, 8))
    assert ranges.nonnegative(x) and ranges.nonnegative(i) and ranges.nonnegative(operators.add(x, i))
    assert not ranges.nonnegative(y) and not ranges.nonnegative(z)
    ranges.bind("x", operators.add(tid, -1))      # bound again (another scope): -1 possible
    assert not ranges.nonnegative(x)


@pytest.mark.skipif(not shutil.which("iga64"), reason="iga64 assembles the checked code")
def test_the_tails_examples_index_divisions_are_unsigned_and_check():
    # tails divides its per-lane coordinates (ramps of the thread's start) by the tile extents: 261 asr
    # of the signed sequence before (its sign taken with `asr ... 31`), none now (a single shift: the
    # peephole's `x >> k` of a non-negative signed value is one `asr`), and the assembly still computes
    # the convolution
    text = (EXAMPLES / "tails.kernel.toml").read_text()
    engine = Engine()
    asm = engine.compile(Source(text), "asm")["asm"]["asm"]
    assert not re.search(r" asr \(\d+\|M0\) \S+ \S+ 31:d", asm) and " shr " in asm
    out = engine.check(Source(text))
    assert (out["artifact"], out["verdict"]) == ("asm", "ok"), out
