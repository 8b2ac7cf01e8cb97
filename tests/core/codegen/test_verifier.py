"""The register verifier finds broken listings (it is not a rubber stamp)."""
from __future__ import annotations

import copy
import re

from kdd.core.codegen import generate_asm
from kdd.core.codegen.xe.verify import access, verify

from xe_kernels import final


def _listing():
    kernel, body, target = final("int8.kernel.toml")
    return generate_asm(kernel, body, target, check=False).to_dict()


def test_clean_listing_passes():
    assert verify(_listing()) == []


def test_overlapping_values_are_found():
    out = copy.deepcopy(_listing())
    allocs = out["registers"]["allocations"]
    big = max(allocs, key=lambda a: a["bytes"])
    other = next(a for a in allocs if a is not big and a["first_line"] <= big["last_line"]
                 and big["first_line"] <= a["last_line"] and a["category"] != "reserved")
    other["start"] = big["start"]
    assert any("share bytes" in p for p in verify(out))


def test_a_register_no_value_owns_is_found():
    out = copy.deepcopy(_listing())
    i = next(i for i, ln in enumerate(out["lines"]) if " dpas." in ln["text"])
    assert out["lines"][i]["live_regs"] < 110       # r120 holds nothing there
    text = out["lines"][i]["text"].split()
    text[3] = "r120:" + text[3].split(":")[1]
    out["lines"][i]["text"] = " ".join(text)
    assert any(f"line {i + 1}:" in p for p in verify(out))


def test_access_of_regions_and_messages():
    rb = 32
    reads, writes, kind = access("(W) add (8|M0) r10.0<1>:d r11.0<1;1,0>:d r12.1<0;1,0>:d", rb)
    assert writes == set(range(320, 352)) and reads == set(range(352, 384)) | set(range(388, 392))
    reads, writes, kind = access("(W) load.ugm.d32x8t.a64 (1|M0) r20:1 [r2:1]", rb)
    assert kind == "load" and writes == set(range(640, 672)) and reads == set(range(64, 72))
    reads, writes, kind = access("(W&f0.0) store.slm.d32.a32 (16|M0) [r4:2] r6:2", rb)
    assert kind == "store" and reads == set(range(128, 192)) | set(range(192, 256))


def _label_at(allocs: list[dict], reg: int, line: int, rb: int) -> str | None:
    """The label of the value that owns register ``reg`` at ``line`` (None: no value)."""
    return next((a["label"] for a in allocs if a["first_line"] <= line <= a["last_line"]
                 and a["start"] <= reg * rb < a["start"] + a["bytes"]), None)


def test_a_message_reading_past_its_value_is_found():
    """A block load widened past the end of the value it fills writes a register another value (or
    none) owns there."""
    out = copy.deepcopy(_listing())
    rb, allocs = out["registers"]["reg_bytes"], out["registers"]["allocations"]
    for i, ln in enumerate(out["lines"]):
        found = re.match(r"\(W\) load\.slm\.d32x(\d+)t\.a32 \(1\|M0\) r(\d+):(\d+) ", ln["text"])
        if found:
            first, regs = int(found[2]), int(found[3])
            if _label_at(allocs, first + regs, i, rb) != _label_at(allocs, first, i, rb):
                break
    else:
        raise AssertionError("no block load into the last register of a value")
    width = int(found[1])
    out["lines"][i]["text"] = ln["text"].replace(f"d32x{width}t", f"d32x{2 * width}t").replace(
        f":{regs} [", f":{2 * regs} [")
    assert any(f"line {i + 1}:" in p for p in verify(out))
