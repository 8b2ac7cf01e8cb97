"""The register verifier finds broken listings (it is not a rubber stamp)."""
from __future__ import annotations

import copy

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


def test_a_message_reading_past_its_value_is_found():
    out = copy.deepcopy(_listing())
    rb = out["registers"]["reg_bytes"]
    allocs = [a for a in out["registers"]["allocations"] if a["bytes"] >= rb]
    for i, ln in enumerate(out["lines"]):
        text = ln["text"]
        # a one-register block load into the last register of the value live there
        if text.startswith("(W) load.") and ".d32x8t." in text and any(
                (a["start"] + a["bytes"]) // rb - 1 == int(text.split()[3][1:].split(":")[0])
                and a["first_line"] <= i + 1 <= a["last_line"] for a in allocs):
            break
    else:
        raise AssertionError("no block load into the last register of a value")
    out["lines"][i]["text"] = text.replace("d32x8t", "d32x16t").replace(":1 [", ":2 [")
    assert any(f"line {i + 1}:" in p for p in verify(out))
