"""The assembly's main loop per reduction iteration (``asm_loop`` of ``kdd compile --emit stats``): counted
from the listing's lines, scaled by the IR's multiplies per iteration; and the A64 addresses of the main
loop's global messages, which take the offset's carry only (an accessed element is in bounds)."""
from __future__ import annotations

import re

import pytest
from protocol_schemas import validator
from xe_kernels import EXAMPLES, final

from kdd.core.codegen import generate_asm
from kdd.core.codegen.xe.emitter import Line
from kdd.core.codegen.xe.stats import instruction_mix
from kdd.core.engine import Engine, Source
from kdd.core.engine.artifacts import asm_loop_figures

LOOP = [{"label": "k", "trips": 4, "parent": -1, "weight": 4}]


def line(text: str, pipe: str, loop: int = 0) -> Line:
    return Line(text, pipe, 0, None, 4 if loop == 0 else 1, loop)


def test_hand_made_listing_per_reduction_iteration():
    """One trip: 4 dpas, 2 sends, an add, a mov, a float mul; outside the loop a mov that does not count.
    The IR runs 2 dpas per reduction iteration, so a trip is 2 iterations."""
    lines = [line("(W) mov (1|M0) r3.0<1>:d 0:d", "int", loop=-1),
             *[line(f"(W) dpas.8x8 (8|M0) r{6 + 8 * i}:f r6:f r81:hf r72:hf", "xmx") for i in range(4)],
             line("(W) load.ugm.d32x8.a64 (8|M0) r74:8 [r117:2]", "send"),
             line("(W) load.slm.d32x64t.a32 (1|M0) r122:8 [r94:1]", "send"),
             line("(W) add (1|M0) r3.0<1>:d r3.0<0;1,0>:d 1:d", "int"),
             line("(W) mov (8|M0) r68.0<1>:d r64.0<1;1,0>:d", "int"),
             line("(W) mul (8|M0) r70.0<1>:f r70.0<1;1,0>:f r71.0<1;1,0>:f", "float"),
             line("(W&f0.0) jmpi LOOP_1", "control")]
    main = instruction_mix(lines, LOOP)["main_loop"]
    assert (main["fma"], main["moves"], main["int_ops"], main["float_ops"]) == (4, 1, 1, 1)
    ir = {"dpas": 2, "min_sends": 1}
    out = asm_loop_figures(main, ir)
    assert out == {"source": "assembly", "var": "k", "trips": 4, "iterations_per_trip": 2.0, "dpas": 2.0,
                   "sends": 1.0, "min_sends": 1, "int_ops": 0.5, "float_ops": 0.5, "moves": 0.5,
                   "alu_per_dpas": 0.75}
    assert asm_loop_figures(None, ir) is None and asm_loop_figures(main, None) is None


def test_a_reduction_unrolled_whole_is_counted_in_its_group():
    """No loop left around the multiplies: the ``k_loop`` group's lines stand for the main loop, once
    (the IR's loop figures do the same); the epilogue after it does not count."""
    lines = [line("// k_loop {", None, loop=-1), line("SKIP_1:", None, loop=-1),
             *[line("(W) dpas.8x8 (8|M0) r6:f r6:f r81:hf r72:hf", "xmx", loop=-1) for _ in range(6)],
             line("(W) add (1|M0) r3.0<1>:d r3.0<0;1,0>:d 64:d", "int", loop=-1),
             line("// } k_loop", None, loop=-1),
             line("(W) mov (8|M0) r68.0<1>:d r64.0<1;1,0>:d", "int", loop=-1)]
    main = instruction_mix(lines, [])["main_loop"]
    assert (main["var"], main["trips"], main["fma"], main["int_ops"], main["moves"]) == ("k_loop", 1, 6, 1, 0)
    assert asm_loop_figures(main, {"dpas": 2, "min_sends": 1})["iterations_per_trip"] == 3


def test_vector_multiplies_are_not_alu_work():
    """A mad kernel's ``mad`` instructions are its multiplies, not float operations."""
    lines = [line("(W) mad (8|M0) r6.0<1>:f r6.0<1;0>:f r8.0<1;0>:f r9.0<0;0>:f", "float") for _ in range(8)]
    lines.append(line("(W) add (1|M0) r3.0<1>:d r3.0<0;1,0>:d 1:d", "int"))
    main = instruction_mix(lines, LOOP)["main_loop"]
    assert (main["fma"], main["float_ops"], main["int_ops"]) == (8, 0, 1)
    assert asm_loop_figures(main, {"dpas": 8, "min_sends": 1})["alu_per_dpas"] == 0.12


def test_compile_stats_has_both_loops_side_by_side():
    path = EXAMPLES / "resnet50_1x1.kernel.toml"
    out = Engine().compile(Source(path.read_text(), str(path)), emit="stats")
    stats = out["stats"]
    validator("compile.schema.json", "stats").validate(stats)
    ir, asm = stats["loop"], stats["asm_loop"]
    assert ir["source"] == "IR" and asm["source"] == "assembly"
    assert asm["dpas"] == ir["dpas"] and asm["min_sends"] == ir["min_sends"]
    assert asm["alu_per_dpas"] == pytest.approx((asm["int_ops"] + asm["float_ops"] + asm["moves"]) / asm["dpas"],
                                                abs=0.01)
    main = stats["codegen"]["mix"]["main_loop"]
    assert asm["sends"] * asm["iterations_per_trip"] == pytest.approx(main["per_iteration"]["send"])


def _main_loop_text(listing) -> str:
    lines = [ln.text for ln in listing.lines]
    start = next(i for i, t in enumerate(lines) if t.startswith("LOOP_"))
    end = next(i for i, t in enumerate(lines) if i > start and "jmpi" in t)
    return "\n".join(lines[start:end])


def test_global_addresses_take_the_carry_only():
    """resnet50_1x1 (Xe-HPG, no 64-bit integer ALU): each 8-lane A64 address is the offset, ``addc`` of the
    low dwords and ``add`` of the carry to the high dwords; no sign of the offset (``asr``) is added."""
    kernel, body, target = final("resnet50_1x1.kernel.toml")
    loop = _main_loop_text(generate_asm(kernel, body, target, check=False))
    loads = re.findall(r"load\.ugm\.\S+ \(8\|M0\)", loop)
    assert loads and len(re.findall(r"\baddc \(8\|M0\)", loop)) == len(loads)
    assert " asr " not in loop


@pytest.mark.parametrize("name", ["resnet50_3x3.kernel.toml", "bwd_d.kernel.toml"])
def test_sends_under_one_mask_share_its_flag(name):
    """The padding mask of a staged global load sets its flag once per step (the ``and`` of its terms with
    a condition modifier, or a ``cmp``): the flag predicates the load, the SLM store of what it loaded and
    (negated) the store of zeros beside it; no ``cmp`` of the mask's value follows its ``and``."""
    kernel, body, target = final(name)
    loop = _main_loop_text(generate_asm(kernel, body, target, check=False)).splitlines()
    masks = [ln for ln in loop if re.search(r" (cmp|and) \(8\|M0\) \(ne\)f", ln)]
    # A mask computed in the loop sets its flag with its own ``and``; only a mask hoisted out of the loop
    # (resnet50_3x3 unrolled by kh3 x kw3: each copy's padding mask is invariant) is tested for its flag.
    anded = {m[1] for ln in loop if (m := re.search(r" and \(8\|M0\) \(ne\)f\d\.\d (r\d+)\.0", ln))}
    tested = {m[1] for ln in loop if (m := re.search(r" cmp \(8\|M0\) \(ne\)f\d\.\d null<1>:d (r\d+)\.0<1;1,0>:d 0:d", ln))}
    assert not anded & tested
    loads = [ln for ln in loop if re.match(r"\(W&f\d\.\d\) load\.ugm", ln)]
    assert masks and len(masks) == len(loads)
    for i, ln in enumerate(loop):
        negated = re.match(r"\(W&~(f\d\.\d)\) store", ln)
        if negated:
            assert loop[i - 1].startswith(f"(W&{negated[1]}) store"), loop[i - 1: i + 1]


def test_the_barrier_header_is_built_once_per_kernel():
    """resnet50_1x1 signals a barrier every step: the header (the thread count from r0) is written once,
    before any loop, into a register every barrier reads; the IR register model counts that register."""
    kernel, body, target = final("resnet50_1x1.kernel.toml")
    listing = generate_asm(kernel, body, target, check=False)
    lines = [ln.text for ln in listing.lines]
    headers = [i for i, t in enumerate(lines) if "r0.11<0;1,0>:ub" in t]
    signals = {re.search(r"null (r\d+) null:0 0x0 0x02000004", t)[1] for t in lines if "0x02000004" in t}
    assert len(headers) == 1 and headers[0] < lines.index("LOOP_1:")
    assert signals == {lines[headers[0]].split()[3].split(".")[0]}
    assert listing.to_dict()["registers"]["ir"] == listing.to_dict()["registers"]["peak"]


def test_a_wrapping_counter_steps_by_an_add_and_a_predicated_add():
    """resnet50_3x3 double-buffered (unrolled by 6: kw folds, the kh digit wraps every 3 iterations): its
    strength-reduced offsets step by one of two constants (``k + iif(wrap, p, q)``): an ``add`` of ``q``
    and, under the wrap's flag, an ``add`` of ``p - q`` into the same register; no immediate moved into
    a register for a ``sel`` to read."""
    kernel, body, target = final("resnet50_3x3.kernel.toml", ("bufs = 3", "bufs = 2"))
    loop = _main_loop_text(generate_asm(kernel, body, target, check=False)).splitlines()
    stepped = [i for i, ln in enumerate(loop) if re.match(r"\(W&~?f\d\.\d\) add \(1\|M0\)", ln)]
    assert stepped
    for i in stepped:
        dst = loop[i].split()[4].split("<")[0]
        assert re.match(rf"\(W\) add \(1\|M0\) {re.escape(dst)}<1>:d ", loop[i - 1]), loop[i - 1: i + 1]
    for a, b in zip(loop, loop[1:]):
        moved = re.match(r"\(W\) mov \(1\|M0\) (r\d+\.\d+)<1>:d -?\d+:d", a)
        assert not (moved and " sel " in b and f"{moved[1]}<0;1,0>" in b), (a, b)


def test_a_hoisted_slm_address_vector_is_the_header_its_stores_read():
    """resnet50_3x3 stores its staged A pixels to SLM with per-lane addresses hoisted out of the loop:
    the scattered stores read the hoisted vector's register itself, which nothing in the loop writes (no
    copy into a header register per step)."""
    kernel, body, target = final("resnet50_3x3.kernel.toml")
    loop = _main_loop_text(generate_asm(kernel, body, target, check=False)).splitlines()
    headers = {m[1] for ln in loop for m in [re.search(r"store\.slm\.d32x\d+\.a32 \(8\|M0\) \[(r\d+):1\]", ln)] if m}
    written = {m[1] for ln in loop for m in [re.match(r"\(W[^)]*\) \w+ \(\d+\|M0\) (?:\([a-z]+\)f\d\.\d )?(r\d+)\.", ln)]
               if m}
    assert headers and not headers & written


def test_simd1_slm_messages_read_their_addresses_from_lets_kept_at_dword_0():
    """resnet50_3x3's SLM block messages (SIMD1: the address is dword 0 of the header register) read the
    hoisted lets of their addresses in place, the SLM base of B already added once before the loop: no
    header register is written in the main loop, and the peak equals the IR register model's."""
    kernel, body, target = final("resnet50_3x3.kernel.toml")
    listing = generate_asm(kernel, body, target, check=False)
    loop = _main_loop_text(listing).splitlines()
    headers = {m[1] for ln in loop for m in [re.search(r"\.slm\.d32x64t\.a32 \(1\|M0\) (?:r\d+:8 )?\[(r\d+):1\]", ln)]
               if m}
    # dword 0 written (other scalars may share the rest of a header's register)
    dst = r"\(W[^)]*\) \w+ \(\d+\|M0\) (?:\([a-z]+\)f\d\.\d )?(r\d+)\.0<"
    written = {m[1] for ln in loop for m in [re.match(dst, ln)] if m}
    assert len(headers) >= 15 and not headers & written
    assert listing.to_dict()["registers"]["ir"] == listing.to_dict()["registers"]["peak"]


def test_global_addresses_are_carried_across_the_back_edge_and_only_advanced():
    """resnet50_1x1's steps address global memory at the loop-carried counter plus a constant (``k + 32``
    a step later): the A and B 64-bit addresses are built once before the loop and live across its back
    edge (``passes/carried_headers``), so every step, the next trip's first included, advances each by 32
    in place (``addc`` of the low dwords, ``add`` of the carry: Xe-HPG has no 64-bit add); no 32-bit sum
    of the lanes' offsets and the counter is left in the loop, and no ``add`` of the counter either (it
    went with the sums that read it)."""
    kernel, body, target = final("resnet50_1x1.kernel.toml")
    loop = _main_loop_text(generate_asm(kernel, body, target, check=False)).splitlines()
    advance = r"\(W\) addc \(8\|M0\) (r\d+)\.0<2>:ud (r\d+)\.0<2;1,0>:ud 32:ud"
    advanced = [m for ln in loop for m in [re.match(advance, ln)] if m]
    assert len(advanced) == 6 and all(m[1] == m[2] for m in advanced)     # A and B, once per step
    assert len({m[1] for m in advanced}) == 2
    offsets = r"\(W\) add3? \(8\|M0\) r\d+\.0<1>:d r\d+\.0<1;[01],?[0-9,]*>:d r\d+\.\d<0;"
    assert not [ln for ln in loop if re.match(offsets, ln)]
    assert not [ln for ln in loop if re.match(r"\(W\) add \(1\|M0\) r\d+\.\d<1>:d r\d+\.\d<0;1,0>:d \d+:d", ln)]


def test_a_header_stored_again_with_a_larger_constant_steps_its_address_in_place():
    """bwd_d's weight tiles are block loads at the counter plus a constant that grows by the tile's bytes
    from step to step (``passes/header_steps``): after a trip's first load each 64-bit address steps in
    place (``addc`` of the step to its own low dword, ``add`` of the carry to its high dword) instead of
    being summed again from the counter; the loop's counter counts to zero and its ``add`` sets the
    loop's flag (no ``cmp``)."""
    kernel, body, target = final("bwd_d.kernel.toml")
    listing = generate_asm(kernel, body, target, check=False)
    lines = [ln.text for ln in listing.lines]
    loop = _main_loop_text(listing).splitlines()
    headers = [m[1] for ln in loop for m in [re.search(r"load\.ugm\.d32x64t\.a64 \(1\|M0\) r\d+:8 \[(r\d+):1\]", ln)]
               if m]
    stepped = [ln for ln in loop
               if re.match(r"\(W\) addc \(1\|M0\) (r\d+)\.0<1>:ud \1\.0<0;1,0>:ud \d+:ud", ln)]
    assert len(headers) == 9 and len(stepped) >= 6
    end = lines.index(next(t for t in lines if t.startswith("(W&") and "jmpi LOOP_1" in t))
    assert re.match(r"\(W\) add \(1\|M0\) \(lt\)f\d\.\d r\d+\.\d<1>:d r\d+\.\d<0;1,0>:d 9:d", lines[end - 1])
    assert " cmp " not in lines[end - 2]


LINE_TILE_COLUMNS = """[problem]
op = "conv"
prop = "fwd"
shape = "mb1ic640ih32oc640oh32kh3ph1"
types = "f16"
[target]
hw = "xehpg"
[config]
line = "fma=dpas simd=8 l=ic40kh3kw3 T=oc8 i=ic16oc32ow16"
"""


def test_a_tiles_aligned_messages_share_one_bound_and_step_their_addresses_under_it():
    """oneDNN's xehpg line ``mb1 ic640ih32 ... T=oc8 i=ic16oc32ow16``: a thread's B tile is four 256-byte
    block loads at ``oc0``, ``oc0 + 8``, ``oc0 + 16``, ``oc0 + 24`` with ``oc0`` a multiple of 32, so
    their bounds ``oc0 + 8*j < 640`` are the one condition ``oc0 < 640``: one flag, set again only where
    the flag register served other masks in between (a few times a trip, not once per load).
    Each later load's 64-bit address is a held one plus a constant (``addc`` + ``add``, where the 32-bit
    sum and the address were three): the held address is exact in the lanes the shared mask enables, the
    only ones the next load reads."""
    out = Engine().compile(Source(LINE_TILE_COLUMNS, "line.kernel.toml"), emit="asm")
    lines = out["asm"]["asm"].splitlines()
    start = next(i for i, t in enumerate(lines) if t.startswith("LOOP_"))
    end = next(i for i, t in enumerate(lines) if i > start and "jmpi" in t)
    loop = [t.split("//")[0].strip() for t in lines[start:end]]
    loads = [t for t in loop if "load.ugm.d32x64t.a64" in t]
    assert len(loads) == 36 and all(t.startswith("(W&f") for t in loads)
    assert len([t for t in loop if t.startswith("(W) cmp (1|M0)")]) <= 4   # was one per load
    stepped = [t for t in loop if re.match(r"\(W\) addc \(1\|M0\) r\d+\.0<1>:ud r\d+\.0<0;1,0>:ud \d+:ud", t)]
    assert len(stepped) >= 34     # of the 36 (was 0): a held address plus a constant
    # nor is the let of the step's base plus the column's offset (``c = b + oc``), which only the headers
    # sum, computed on its own: 217 integer instructions a trip before, 141 now
    assert out["asm"]["mix"]["main_loop"]["per_iteration"]["int"] <= 145
