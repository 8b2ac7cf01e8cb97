"""The PTX generator: lane maps, the ptxas/nvdisasm runners, and every sm_90 example's [check] kernel
through ptxas and nvdisasm on the CPU."""
from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from functools import lru_cache
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, strategies as st

from kdd.core.builder import build_kernel
from kdd.core.codegen.ptx import generate_ptx, tools
from kdd.core.codegen.ptx.lanes import LANES, affine, lane_fields, slots
from kdd.core.codegen.ptx.line_table import LineTableError, lines_at
from kdd.core.codegen.ptx.matrix import lane_addresses, matrix_rows
from kdd.core.passes.kernel_pipeline import run_pipeline
from kdd.core.spec import load_spec

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = json.loads((ROOT / "protocol" / "asm.schema.json").read_text())
HAVE_PTXAS = tools.find_tool("ptxas") is not None and tools.find_tool("nvdisasm") is not None
# The shipped sm_90 examples (TMA, wgmma) and the classic schedule (mma.sync) of the conv example before it
SM90 = [*sorted(f"examples/{p.name}" for p in (ROOT / "examples").glob("sm90_*.kernel.toml")),
        "tests/data/sm90_conv_classic.kernel.toml"]


@given(st.integers(-64, 64), st.integers(-1000, 1000), st.integers(1, (1 << LANES) - 1))
def test_affine_recovers_a_lane_line(a, c, active):
    values = [a * ln + c for ln in range(LANES)]
    fit = affine(values, active)
    assert fit is not None
    fa, fc = fit
    assert all(fa * ln + fc == values[ln] for ln in range(LANES) if active >> ln & 1)


@given(st.lists(st.integers(-40, 40), min_size=5, max_size=5), st.integers(-100, 100))
def test_lane_fields_reproduce_bit_weighted_sums(weights, c):
    values = [c + sum(w for b, w in enumerate(weights) if ln >> b & 1) for ln in range(LANES)]
    got = lane_fields(values, (1 << LANES) - 1)
    assert got is not None
    c0, parts = got
    for ln in range(LANES):
        assert c0 + sum(w * ((ln >> low) & ((1 << width) - 1)) for low, width, w in parts) == values[ln]


def test_lane_fields_refuse_what_is_not_a_sum_of_bits():
    assert lane_fields([(ln * ln) % 7 for ln in range(LANES)], (1 << LANES) - 1) is None
    assert lane_fields(list(range(LANES)), 0b110) is None        # lanes 1 and 2: no subcube


@given(st.lists(st.integers(-40, 40), min_size=5, max_size=5), st.integers(-100, 100), st.integers(0, 31),
       st.integers(0, 31), st.integers(0, 1 << 20), st.integers(0, 15))
def test_lane_fields_fit_on_subcubes_and_prefixes_of_lanes(weights, c, fixed, at, junk, short):
    """A half warp, the even lanes, the first 17..32 lanes (a round of copies): the lanes outside
    ``active`` are don't-care (any value there)."""
    if short:
        active = (1 << (LANES - short)) - 1
        fixed = 0
    else:
        active = sum(1 << ln for ln in range(LANES) if ln & fixed == at & fixed)
    values = [c + sum(w for b, w in enumerate(weights) if ln >> b & 1) if active >> ln & 1 else junk ^ ln
              for ln in range(LANES)]
    got = lane_fields(values, active)
    assert got is not None
    c0, parts = got
    assert all(low + width <= 5 and not fixed >> low & ((1 << width) - 1) for low, width, _ in parts)
    for ln in range(LANES):
        if active >> ln & 1:
            assert c0 + sum(w * ((ln >> low) & ((1 << width) - 1)) for low, width, w in parts) == values[ln]


@given(st.integers(0, 255).map(lambda x: x * 4), st.sampled_from([1, 2, 4]), st.integers(1, 96))
def test_slots_cover_every_element_once_in_its_lane(start, size, n):
    first = [start + i * size for i in range(n)]
    seen = {}
    for s in slots(first):
        for ln, i in enumerate(s.index):
            if i >= 0:
                b = first[i]
                assert (b // 128, (b % 128) // 4, b % 4) == (s.row, ln, s.byte)
                seen[i] = seen.get(i, 0) + 1
    assert seen == {i: 1 for i in range(n)}


@given(st.lists(st.integers(0, 255), min_size=8, max_size=8), st.booleans())
def test_matrix_rows_recover_ldmatrix_rows(rows16, trans):
    """Per-lane half addresses made by ldmatrix's fragment rule (the PTX manual's, written out here)
    give back the matrix's row addresses and whether it is transposed."""
    rows = [16 * r for r in rows16]
    lane = range(LANES)
    if trans:
        low = [rows[2 * (ln % 4)] + 2 * (ln // 4) for ln in lane]
        high = [rows[2 * (ln % 4) + 1] + 2 * (ln // 4) for ln in lane]
    else:
        low = [rows[ln // 4] + 4 * (ln % 4) for ln in lane]
        high = [x + 2 for x in low]
    found = matrix_rows(low, high)
    assert found is not None
    got_trans, got = found
    if got_trans == trans:
        assert got == rows
    else:       # a matrix can read both ways only when the two rules agree on every lane
        assert matrix_rows(low, high) == found
    assert lane_addresses([got])[:8] == got and lane_addresses([got, rows])[8:16] == rows


def test_matrix_rows_refuse_unaligned_or_scattered_words():
    low = [64 * (ln // 4) + 4 * (ln % 4) for ln in range(LANES)]
    assert matrix_rows(low, [x + 2 for x in low]) == (False, [64 * i for i in range(8)])
    assert matrix_rows([x + 4 for x in low], [x + 6 for x in low]) is None      # rows not 16-byte aligned
    assert matrix_rows(low, [x + 4 for x in low]) is None                       # halves not adjacent
    low[5] += 16
    assert matrix_rows(low, [x + 2 for x in low]) is None                       # lanes of one row disagree


def test_missing_ptxas_is_a_report(monkeypatch):
    monkeypatch.setattr(tools, "find_tool", lambda name: None)
    r = tools.ptxas(".version 8.0\n")
    assert r.report.ok is False and "not installed" in r.report.messages[0] and r.cubin is None
    lines, why = tools.sass(b"")
    assert lines == [] and "nvdisasm is not installed" in why


def test_resources_parse_ptxas_verbose_output():
    text = ("ptxas info    : Function properties for k\n"
            "    8 bytes stack frame, 12 bytes spill stores, 16 bytes spill loads\n"
            "ptxas info    : Used 168 registers, used 1 barriers, 8 bytes cumulative stack size\n")
    assert tools.parse_resources(text) == {"registers": 168, "stack": 8, "spill_stores": 12, "spill_loads": 16,
                                           "barriers": 1}


@pytest.mark.skipif(not HAVE_PTXAS, reason="ptxas/nvdisasm (PyPI nvidia-cuda-nvcc/-nvdisasm) not installed")
def test_ptxas_errors_come_back_as_messages():
    r = tools.ptxas(".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n\tbogus.op;\n}\n")
    assert not r.report.ok and r.cubin is None and any("bogus" in m for m in r.report.messages)


@lru_cache(maxsize=None)
def _listing(name: str, check: bool = True):
    path = ROOT / name
    spec, _ = load_spec(path.read_text(), str(path))
    kernel = build_kernel(spec.check, spec.config, spec.target)
    return kernel, generate_ptx(kernel, run_pipeline(kernel).final, spec.target, check=check)


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_PTXAS, reason="ptxas/nvdisasm (PyPI nvidia-cuda-nvcc/-nvdisasm) not installed")
@pytest.mark.parametrize("name", SM90)
def test_sm90_example_assembles_with_register_figures_per_line(name):
    kernel, listing = _listing(name)
    d = listing.to_dict()
    jsonschema.validate(d, SCHEMA)
    a = d["assembler"]
    errors = [m for m in a["messages"] if "spill" not in m]
    assert errors == [] and a["binary_bytes"] > 0 and listing.cubin, a
    regs = d["registers"]
    assert 0 < regs["allocated"] <= 255
    spilled = regs["spill_stores"] or regs["spill_loads"]
    assert a["ok"] is (not spilled)             # a spill is reported, never hidden
    if spilled:
        assert any("spilled" in m for m in a["messages"])
    sass = d["sass"]
    # setmaxnreg.inc lets consumer warpgroups hold more than ptxas's figure (the count at entry)
    raised = [int(m) for m in re.findall(r"setmaxnreg\.inc\.sync\.aligned\.u32 (\d+)", d["asm"])]
    assert sass and regs["peak"] == max(s["live_regs"] for s in sass) <= max([regs["allocated"], *raised])
    mapped = [s for s in sass if s["ptx_line"] is not None]
    assert len(mapped) >= 0.9 * len(sass)
    for s in mapped:                            # the .loc of a SASS line names a PTX instruction line
        text = d["lines"][s["ptx_line"]]["text"].strip()
        assert text and not text.startswith((".loc", "$L")), text
        assert d["lines"][s["ptx_line"]]["live_regs"] >= s["live_regs"]
    with_ir = [s for s in mapped if "ir_node" in s]
    assert len(with_ir) >= 0.9 * len(mapped)
    if kernel.config.schedule != "classic":     # tensor copies into swizzled stages, warpgroup MMAs from them
        assert ".target sm_90a" in d["asm"] and "cp.async.bulk.tensor.2d" in d["asm"]
        assert "mbarrier.try_wait.parity" in d["asm"] and "wgmma.mma_async.sync.aligned.m64n" in d["asm"]
        assert any(s["text"].startswith("HGMMA.64x") for s in sass)
        stored = re.search(r"cp\.async\.bulk\.tensor\.\dd\.global\.shared::cta", d["asm"]) is not None  # epilogue=tma
        assert stored == (kernel.config.epilogue == "tma")
        assert {m["buffer"] for m in d["launch"]["tensor_maps"]} == {"src", "wei", *(["dst"] if stored else [])}
    else:
        assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in d["asm"]
        # fragments from shared memory by ldmatrix (B transposed), global -> shared copies 16 bytes per lane
        assert "ldmatrix.sync.aligned.m8n8.x4" in d["asm"]
        assert "cp.async.cg.shared.global" in d["asm"] and ", 16, " in d["asm"]
    assert d["launch"]["block"] == [32 * kernel.tg[0], kernel.tg[1], kernel.tg[2]]
    assert d["launch"]["grid"] == list(kernel.grid) and d["launch"]["params"] == [x.name for x in kernel.args]
    assert listing.render().count("\n") == len(d["lines"]) + len(listing.header())


def _nvdisasm_lines(cubin: bytes, tmp_path) -> dict[int, int]:
    """The oracle: instruction offset -> line as ``nvdisasm --print-line-info`` prints it (a
    ``//## File "...", line N`` comment before the instructions of that line)."""
    path = tmp_path / "kernel.cubin"
    path.write_bytes(cubin)
    run = subprocess.run([tools.find_tool("nvdisasm"), "--print-line-info", str(path)], capture_output=True,
                         text=True, check=True)
    out, current, inside = {}, None, False
    for line in run.stdout.splitlines():
        if ".section" in line:
            inside = ".text." in line
            continue
        found = re.search(r'//## File "[^"]*", line (\d+)', line)
        if found:
            current = int(found.group(1))
        elif inside and current is not None and (at := re.search(r"/\*([0-9a-f]{4,})\*/\s+\S", line)):
            out[int(at.group(1), 16)] = current
    return out


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_PTXAS, reason="ptxas/nvdisasm (PyPI nvidia-cuda-nvcc/-nvdisasm) not installed")
@pytest.mark.parametrize("name", SM90)
def test_the_cubins_line_table_is_what_nvdisasm_prints(name, tmp_path):
    _, listing = _listing(name)
    sass = listing.to_dict()["sass"]
    oracle = _nvdisasm_lines(listing.cubin, tmp_path)
    ours = lines_at(listing.cubin, [s["offset"] for s in sass])
    assert len(ours) >= 0.9 * len(sass)
    assert ours == {s["offset"]: oracle[s["offset"]] for s in sass if s["offset"] in oracle}
    assert [s["ptx_line"] for s in sass] == [ours[s["offset"]] - 1 if s["offset"] in ours else None for s in sass]


def test_a_damaged_cubin_has_no_line_table():
    for junk in (b"", b"\x7fELF", b"\x7fELF\x02\x01" + bytes(58), b"\x7fELF\x02\x01" + bytes(58) + b"\xff" * 200):
        with pytest.raises(LineTableError):
            lines_at(junk, [0])


IMM = r"(?:-?\d+|0[fd][0-9A-F]+)"


@pytest.mark.parametrize("name", SM90)
def test_sm90_lane_maps_are_computed_once_and_constants_fold(name):
    """After the last mma (the epilogue, straight-line code) every operation on the lane id is distinct
    (a lane map's fields are computed once, not per store), every global store adds only an immediate
    to one address register, and nowhere is a predicate compared from two constants or the lane id
    copied by an identity ``mad``."""
    kernel, listing = _listing(name, False)
    ops = [ln.split("//")[0].strip() for ln in listing.asm.splitlines()]
    ops = [op for op in ops if op.endswith(";") and not op.startswith(".")]
    lane = next(m.group(1) for op in ops if (m := re.fullmatch(r"and\.b32 (%r\d+), \1, 31;", op)))
    last = max(i for i, op in enumerate(ops) if op.startswith(("mma.sync", "wgmma.wait_group")))
    epilogue = ops[last + 1:]
    on_lane = Counter(re.sub(r" %\w+,", "", op, count=1) for op in epilogue if re.search(rf"{lane}\b", op))
    assert on_lane and max(on_lane.values()) == 1, on_lane.most_common(3)
    stores = [re.search(r"st\.global\.[\w.]+ \[(%rd\d+)(\+-?\d+)?\]", op) for op in epilogue]
    if kernel.config.epilogue == "tma":
        # C leaves through shared memory by TMA stores (a GEMM's 2D tile, a conv's 4D box of pixels)
        assert not [m for m in stores if m] and any("cp.async.bulk.tensor" in op for op in epilogue)
    elif "wgmma.wait_group" in listing.asm and kernel.problem.op == "gemm":
        # schedule=tma, f32 out: 8 bytes per lane and store, one address register each
        assert all(op.startswith("st.global.v2.b32") for op in epilogue if op.startswith("st.global"))
        assert len({m.group(1) for m in stores if m}) == len([m for m in stores if m])
    elif "wgmma.wait_group" in listing.asm:
        # the conv's f16 pixels: a pair of halves per lane and store, predicated at the image's edge
        assert all(re.match(r"@%p\d+ st\.global\.b32 ", op) for op in epilogue if "st.global" in op)
        assert len({m.group(1) for m in stores if m}) == 1
    else:
        assert len({m.group(1) for m in stores if m}) == 1
    # wgmma's scale-d operand is a predicate with no immediate form: the one constant predicate allowed
    scale = {m.group(1) for op in ops if (m := re.search(r"^wgmma\.mma_async\S* \{[^}]*\}, %rd\d+, %rd\d+, (%p\d+)", op))}
    assert not [op for op in ops if (m := re.fullmatch(rf"setp\.[\w.]+ (%p\d+), {IMM}, {IMM};", op))
                and m.group(1) not in scale]
    assert not [op for op in ops if re.fullmatch(rf"mad\.lo\.s32 %r\d+, {lane}, 1, 0;", op)]


def test_an_f16_epilogue_computes_its_row_address_once():
    """The row address of a 16-bit C is a vector let (lanes plus a function of the tile index, with
    divisions); its warp-uniform part is computed once, not for each of the tile's stores: every store
    adds an immediate to one address register, and the epilogue divides at most as often as it has
    divisions in that address (three)."""
    from kdd.core.config.line import parse_config_line
    from kdd.core.problem import problem_from_text
    from kdd.core.targets import get_target

    sm90 = get_target("sm_90")
    kernel = build_kernel(problem_from_text("m512n512k128", types="f16:f16:f16"),
                          parse_config_line("schedule=tma_ws_cooperative tile=m128n256k64 stages=2"), sm90)
    ops = [ln.split("//")[0].strip() for ln in generate_ptx(kernel, run_pipeline(kernel).final, sm90,
                                                            check=False).asm.splitlines()]
    epilogue = ops[max(i for i, op in enumerate(ops) if op.startswith("wgmma.wait_group")) + 1:]
    stores = [m.group(1) for op in epilogue if (m := re.search(r"st\.global\.b32 \[(%rd\d+)(\+\d+)?\]", op))]
    assert len(stores) == 64 and len(set(stores)) == 1
    assert sum(op.startswith(("div.", "rem.")) for op in epilogue) <= 3


# Shapes for the simulator: the [check] shapes (the conv's taps and padding as shifted boxes with tails), a
# longer K for the GEMM (its TMA stages refilled, both barrier phases waited on; C stored by TMA, epilogue=tma).
# The classic schedule's conv runs in the simulator in test_ptx_eltwise.py.
SIM_SHAPES = [("sm90_conv.kernel.toml", None), ("sm90_gemm.kernel.toml", None),
              ("sm90_gemm.kernel.toml", "m128n256k640")]   # 10 K blocks over 4 stages
VECTOR_STORES = {"m128n128k128"}


@pytest.mark.slow
@pytest.mark.parametrize("name, shape", SIM_SHAPES)
def test_sm90_example_computes_the_reference_in_a_ptx_simulator(name, shape):
    """The generated PTX, run by kdd's PTX simulator (``kdd.core.ptxsim``, independent of the generator),
    matches the float64 reference under the check protocol (no GPU needed), every output element written."""
    from dataclasses import replace

    from kdd.core.codegen.ptx.device import device_buffers
    from kdd.core.interp.check import compare, default_tol, unpack, written_elements
    from kdd.core.interp.reference import reference
    from kdd.core.problem.problem import parse_shape
    from kdd.core.ptxsim import run_ptx

    path = ROOT / "examples" / name
    spec, _ = load_spec(path.read_text(), str(path))
    problem = spec.check
    if shape:
        problem = replace(problem, shape=parse_shape(shape, problem.op))
    kernel = build_kernel(problem, spec.config, spec.target)
    listing = generate_ptx(kernel, run_pipeline(kernel).final, spec.target, check=False)
    # both examples store C by TMA from shared memory (epilogue=tma: the GEMM's 2D tiles, the conv's 4D
    # boxes of pixels); no global store from registers is left
    tma_store = re.search(r"cp\.async\.bulk\.tensor\.\dd\.global\.shared::cta", listing.asm) is not None
    assert tma_store == (spec.config.epilogue == "tma") and ("st.global" in listing.asm) != tma_store
    assert ("st.global.v2.b32" in listing.asm) == (shape in VECTOR_STORES)
    host, inputs = device_buffers(kernel, seed=3)
    run = run_ptx(listing.asm, listing.launch, [host[a.name] for a in kernel.args])
    refs = reference(problem, inputs)
    for arg in kernel.outputs:
        dims = tuple(size for _, size in arg.dims)
        out = unpack(host[arg.name], arg.dtype, arg.layout, dims)
        written = written_elements(run.written[arg.name], arg.dtype, arg.layout, dims)
        r = compare(arg.name, out, refs[arg.name], written, default_tol(problem, arg.dtype))
        assert r.ok and r.unwritten == 0, r


def test_device_runner_without_cupy_says_why(monkeypatch):
    import sys

    from kdd.core.codegen.ptx import device

    monkeypatch.setitem(sys.modules, "cupy", None)     # import cupy raises ImportError
    kernel, listing = _listing("examples/sm90_conv.kernel.toml") if HAVE_PTXAS else (None, None)
    with pytest.raises(device.DeviceUnavailable, match="CuPy is not installed"):
        device.check_on_device(listing, kernel)
    with pytest.raises(device.DeviceUnavailable, match="CuPy is not installed"):
        device.time_on_device(listing, kernel)


def test_device_buffers_follow_the_check_protocol():
    from kdd.core.codegen.ptx.device import device_buffers

    path = ROOT / "examples" / "sm90_gemm.kernel.toml"
    spec, _ = load_spec(path.read_text(), str(path))
    kernel = build_kernel(spec.check, spec.config, spec.target)
    host, inputs = device_buffers(kernel, seed=1)
    assert set(inputs) == {"src", "wei"} and set(host) == {"src", "wei", "dst"}
    assert (host["dst"] == 0xFF).all()                 # outputs poisoned, as the interpreter check does
    for arg in kernel.args:
        assert host[arg.name].nbytes == arg.layout.size_bytes()
    assert all((v != 0).all() for v in inputs.values())
