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


def _owned(out, line: int) -> set[int]:
    """The registers some value the listing allocates holds at 1-based ``line``."""
    rb = out["registers"]["reg_bytes"]
    return {r for a in out["registers"]["allocations"] if a["first_line"] <= line <= a["last_line"]
            for r in range(a["start"] // rb, -(-(a["start"] + a["bytes"]) // rb))}


def test_a_register_no_value_owns_is_found():
    out = copy.deepcopy(_listing())
    i = next(i for i, ln in enumerate(out["lines"]) if " dpas." in ln["text"])
    free = min(set(range(out["registers"]["budget"])) - _owned(out, i + 1))  # holds nothing there
    text = out["lines"][i]["text"].split()
    text[3] = f"r{free}:" + text[3].split(":")[1]
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
        if not (text.startswith("(W) load.") and "t.a" in text):
            continue
        # a block load (d32xNt into k registers) filling the value live there up to its last register
        first, k = (int(x) for x in text.split()[3][1:].split(":"))
        dwords = text.split(".")[2]
        if any((a["start"] + a["bytes"]) // rb == first + k and a["first_line"] <= i + 1 <= a["last_line"]
               for a in allocs):
            break
    else:
        raise AssertionError("no block load into the last registers of a value")
    n = int(dwords[len("d32x"):-1])
    out["lines"][i]["text"] = text.replace(f"{dwords}.", f"d32x{2 * n}t.").replace(f":{k} [", f":{2 * k} [")
    assert any(f"line {i + 1}:" in p for p in verify(out))
