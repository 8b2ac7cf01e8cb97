"""The instruction table behind the assembly hover: every instruction the shipped examples compile to
(Xe assembly, PTX, and the SASS ptxas makes of it) has an entry, and the hover of a line puts the right
entry, the live buffers largest first, and a PTX line's SASS together."""
from pathlib import Path

import pytest

from kdd.core.codegen.line_hover import line_hover, live_by_size
from kdd.core.engine import Engine, Source
from kdd.core.targets.instructions import DOCS, SOURCES, lookup, mnemonic

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
CLASSIC_CONV = Path(__file__).resolve().parents[2] / "data" / "sm90_conv_classic.kernel.toml"   # mma.sync


@pytest.fixture(scope="module")
def listings():
    engine = Engine()
    out = {}
    for name, path in [*((n, EXAMPLES / f"{n}.kernel.toml") for n in ("resnet50_3x3", "gemm_f16", "int8", "bwd_w")),
                       ("sm90_conv_classic", CLASSIC_CONV)]:
        result = engine.compile(Source(path.read_text(), str(path)), "asm")
        assert result["ok"], result
        out[name] = result["asm"]
    return out


@pytest.mark.slow
def test_every_emitted_mnemonic_has_an_entry(listings):
    for name, listing in listings.items():
        isa = "ptx" if listing["target"] == "sm_90" else "xe"
        missing = {mnemonic(isa, l["text"]) for l in listing["lines"]
                   if mnemonic(isa, l["text"]) and lookup(isa, l["text"]) is None}
        missing |= {mnemonic("sass", s["text"]) for s in listing.get("sass") or [] if lookup("sass", s["text"]) is None}
        assert not missing, (name, missing)


def test_entries_are_complete_and_sourced():
    for isa, table in DOCS.items():
        assert SOURCES[isa]
        for doc in table.values():
            assert doc.summary and doc.operands is not None and doc.pipe, doc


@pytest.mark.parametrize("text, isa, key", [
    ("(W) mul (1|M0) acc0.0<1>:d r5.3<0;1,0>:d 9363:uw", "xe", "mul"),
    ("(W&f0.0) jmpi LOOP_1", "xe", "jmpi"),
    ("(W) math.exp (8|M0) r10.0<1>:f r10.0<1;1,0>:f", "xe", "math.exp"),
    ("(W) load.ugm.d32x8.a64 (1|M0) r20:1 [r4:1]", "xe", "load"),
    ("(W) sync.bar null", "xe", "sync.bar"),
    ("\t@%p34 cp.async.cg.shared.global [%r1], [%rd2], 16;", "ptx", "cp.async"),
    ("\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1}, {%r1}, {%r2}, {%f1};", "ptx", "mma.sync"),
    ("@!P0 IMAD.WIDE R4, R2, 0x2, R4 ;", "sass", "IMAD"),
])
def test_lookup_takes_the_opcode_past_predicates_and_suffixes(text, isa, key):
    assert lookup(isa, text).mnemonic == key


@pytest.mark.parametrize("text", ["// kernel {", "LOOP_1:", "\t.loc 1 26 0", "{", "$L_loop_1:"])
def test_comments_labels_and_directives_are_no_instruction(text):
    assert lookup("ptx", text) is None and lookup("xe", text) is None


def test_the_hover_of_a_line(listings):
    xe = listings["resnet50_3x3"]
    index = next(i for i, l in enumerate(xe["lines"]) if "dpas" in l["text"])
    hover = line_hover(xe, index)
    assert hover["doc"]["mnemonic"] == "dpas" and hover["doc"]["pipe"] == "xmx"
    # the oracle: bytes per label summed straight from the allocations live on that line
    rb = xe["registers"]["reg_bytes"]
    sizes = {}
    for a in xe["registers"]["allocations"]:
        if a["first_line"] <= index <= a["last_line"]:
            sizes[a["label"]] = sizes.get(a["label"], 0) + a["bytes"] / rb
    assert {b["label"]: b["regs"] for b in hover["live"]} == pytest.approx(sizes, abs=1e-3)
    assert [b["regs"] for b in hover["live"]] == sorted(sizes.values(), reverse=True)
    assert line_hover(xe, len(xe["lines"])) is None

    ptx = listings["sm90_conv_classic"]
    index = next(i for i, l in enumerate(ptx["lines"]) if "mma.sync" in l["text"])
    hover = line_hover(ptx, index)
    assert hover["doc"]["mnemonic"] == "mma.sync"
    assert hover["sass"] and all(s["ptx_line"] == index for s in hover["sass"])
    assert any(s["doc"]["mnemonic"] == "HMMA" and s["doc"]["pipe"] == "tensor" for s in hover["sass"])
    sizes = [b["regs"] for b in live_by_size(ptx, index)]
    assert sizes and sizes == sorted(sizes, reverse=True) and hover["live"][0]["label"] == "c_acc"
