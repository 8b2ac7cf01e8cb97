"""``kdd check --asm``: examples pass in the simulator, and deliberately wrong generator output fails."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from protocol_schemas import validator

from kdd.core.engine import Engine
from kdd.core.engine.engine import Source
from kdd.core.engine.artifacts import register_checkpoints
from kdd.core.passes.pass_bisect import render_bisect
from kdd.core.xesim.check import check_assembly, first_wrong_registers

pytestmark = pytest.mark.skipif(shutil.which("iga64") is None, reason="iga64 (Debian libigc-tools) is not installed")
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _listing(name: str, target: str):
    engine = Engine()
    parsed = engine.parse(engine.read(str(EXAMPLES / f"{name}.kernel.toml")))
    r = engine.resolve(parsed, None, target, for_check=True)
    sources = parsed.sources()
    return engine.kernel(r, sources), engine.assembly(r, sources), r


def _run(name: str, target: str, mutate=None) -> dict:
    kernel, listing, r = _listing(name, target)
    if mutate is not None:
        lines = listing["asm"].splitlines()
        mutated = mutate(lines)
        assert mutated != lines, "the mutation found nothing to change"
        listing = {**listing, "asm": "\n".join(mutated) + "\n"}
    return check_assembly(kernel, listing, r.target.assembler, r.problem)


def _first(lines, pattern: str, change) -> list[str]:
    out = list(lines)
    for i, line in enumerate(out):
        if re.search(pattern, line):
            out[i] = change(line)
            return out
    return out


def swap_dpas_operands(lines):
    """The A and B operands of the first dpas trade registers."""
    def change(line):
        head, b, a = line.rsplit(" ", 2)
        (rb, tb), (ra, ta) = b.split(":"), a.split(":")
        return f"{head} {ra.split('.')[0]}:{tb} {rb}.0:{ta}"
    return _first(lines, r"^\(W\) dpas", change)


def off_by_one_offset(lines):
    """The first constant offset added to an address is one dword short (the addresses advanced from it
    are too: one dword over would run the last of them past the buffer's end, a fault)."""
    return _first(lines, r"^\(W\) add \(1\|M0\) r\d+\.\d+<1>:d r\d+\.\d+<0;1,0>:d [1-9]\d*:d$",
                  lambda line: re.sub(r"(\d+):d$", lambda m: f"{int(m.group(1)) - 4}:d", line))


def wrong_region(lines):
    """The first conversion of the accumulators reads one element broadcast instead of a vector."""
    return _first(lines, r"^\(W\) mov \((8|16)\|M0\) r\d+\.\d+<1>:hf r\d+\.\d+<1;1,0>:f",
                  lambda line: line.replace("<1;1,0>", "<0;1,0>", 1))


def drop_barrier_waits(lines):
    return [line for line in lines if "sync.bar" not in line]


def wrong_repeat_count(lines):
    return _first(lines, r"dpas\.8x8", lambda line: line.replace("dpas.8x8", "dpas.8x4"))


XEHPG_ONLY = ("gemm_f16", "resnet50_1x1", "resnet50_3x3", "resnet50_3x3_tuned")  # simd=8 dpas: not on xehpc
# (sm90_gemm is schedule=tma_ws_cooperative, an sm_90 schedule: on Xe it is refused with the knob)
BOTH = ("blocked", "bwd_d", "bwd_w", "gemm_bert", "int8", "resnet50_conv1", "resnet50_strided", "tails")


@pytest.mark.slow
@pytest.mark.parametrize("name,target", [(n, "xehpg") for n in XEHPG_ONLY + BOTH] + [(n, "xehpc") for n in BOTH])
def test_examples_pass_in_the_simulator(name, target):
    """Every example that builds for an Xe target runs right as assembled (tails and resnet50_conv1 on
    xehpg once sent a SIMD4 A64 address payload one register short)."""
    result = _run(name, target)
    assert result["ok"], result
    assert result["asm"]["thread_instructions"] > result["asm"]["instructions"] > 0


@pytest.mark.parametrize("name,target,mutate", [
    ("int8", "xehpg", swap_dpas_operands),
    ("int8", "xehpg", off_by_one_offset),
    ("resnet50_strided", "xehpg", wrong_region),
    ("resnet50_3x3", "xehpg", drop_barrier_waits),
    ("int8", "xehpg", wrong_repeat_count),
])
def test_wrong_generator_output_fails(name, target, mutate):
    assert _run(name, target)["ok"]
    result = _run(name, target, mutate)
    assert not result["ok"]


def test_bisect_says_ir_right_assembly_wrong_and_names_the_ir_node(monkeypatch):
    engine = Engine()
    real = Engine.assembly

    def mutated(self, r, sources, tools=True):
        listing = real(self, r, sources, tools)
        return {**listing, "asm": "\n".join(off_by_one_offset(listing["asm"].splitlines())) + "\n"}
    monkeypatch.setattr(Engine, "assembly", mutated)
    text = (EXAMPLES / "int8.kernel.toml").read_text()
    out = engine.check(Source(text, str(EXAMPLES / "int8.kernel.toml")), bisect_passes=True, asm=True)
    assert out["first_bad"] == "assembly"
    validator("check.schema.json").validate(out)
    assert out["stages"][-1]["name"] == "assembly" and not out["stages"][-1]["ok"]
    assert all(stage["ok"] for stage in out["stages"][:-1])
    assembly = out["assembly"]
    assert assembly["verdict"] == "IR right, assembly wrong"
    store = assembly["first_wrong"]
    assert store["kind"] == "store"
    assert "send.ugm" in store["instruction"] and store["ir"].startswith("send.store")
    # The FMA operand loaded from the address one dword off (at the check shape the defaults read A with
    # vector gathers, whose per-lane offsets are no scalar add: B's block message) is the first register
    # buffer that disagrees with the interpreter's; the instruction that wrote it is its global load.
    registers = assembly["first_wrong_registers"]
    assert registers["kind"] == "registers" and registers["buffer"] in ("a", "b")
    assert "send.ugm" in registers["instruction"] and registers["ir"].startswith("send.load")
    assert f"first wrong registers: {registers['buffer']} in r" in render_bisect(out)


@pytest.mark.parametrize("name,target,mutate,buffer", [
    ("int8", "xehpg", swap_dpas_operands, "c_acc"),
    ("int8", "xehpg", wrong_repeat_count, "c_acc"),
    ("resnet50_strided", "xehpg", wrong_region, "c_out"),
])
def test_register_comparison_names_the_buffer_the_wrong_instruction_wrote(name, target, mutate, buffer):
    engine = Engine()
    parsed = engine.parse(engine.read(str(EXAMPLES / f"{name}.kernel.toml")))
    r = engine.resolve(parsed, None, target, for_check=True)
    kernel, listing = engine.kernel(r, parsed.sources()), engine.assembly(r, parsed.sources())
    final, checkpoints = engine.trace(kernel).final, register_checkpoints(listing)
    assert first_wrong_registers(final, kernel, listing, r.target.assembler, checkpoints) is None
    wrong = {**listing, "asm": "\n".join(mutate(listing["asm"].splitlines())) + "\n"}
    found = first_wrong_registers(final, kernel, wrong, r.target.assembler, checkpoints)
    assert found is not None and found["buffer"] == buffer


@pytest.mark.slow
@pytest.mark.parametrize("name,target", [(n, "xehpg") for n in XEHPG_ONLY + BOTH] + [(n, "xehpc") for n in BOTH])
def test_right_assembly_agrees_with_the_interpreter_at_every_register_checkpoint(name, target):
    engine = Engine()
    parsed = engine.parse(engine.read(str(EXAMPLES / f"{name}.kernel.toml")))
    r = engine.resolve(parsed, None, target, for_check=True)
    kernel, listing = engine.kernel(r, parsed.sources()), engine.assembly(r, parsed.sources())
    checkpoints = register_checkpoints(listing)
    assert len(checkpoints) >= 3 and {"c_acc", "a", "b"} & {c["name"] for c in checkpoints}
    assert first_wrong_registers(engine.trace(kernel).final, kernel, listing, r.target.assembler, checkpoints) is None


def test_check_asm_matches_the_interpreter_checks_json_shape():
    engine = Engine()
    source = Source((EXAMPLES / "gemm_bert.kernel.toml").read_text(), str(EXAMPLES / "gemm_bert.kernel.toml"))
    ir, asm = engine.check(source, stage="final"), engine.check(source, asm=True)
    assert asm["ok"] and ir["ok"]
    assert set(ir) <= set(asm) and set(asm) - set(ir) == {"asm"}
    assert asm["shape"] == ir["shape"] and asm["tol"] == ir["tol"]
    assert (ir["artifact"], asm["artifact"]) == ("ir", "asm")
    assert engine.check(source) == asm       # the assembly is what kdd check runs by default; --asm says the same
    validator("check.schema.json").validate(asm)


def test_a_fault_names_the_instruction_and_its_ir_node(monkeypatch):
    """A load from a register holding no address (the thread header) faults; the check names it."""
    real = Engine.assembly

    def mutated(self, r, sources, tools=True):
        listing = real(self, r, sources, tools)
        lines = _first(listing["asm"].splitlines(), r"load\.ugm\.d32x8t\.a64", lambda line: re.sub(r"\[r\d+:1\]", "[r0:1]", line))
        return {**listing, "asm": "\n".join(lines) + "\n"}
    monkeypatch.setattr(Engine, "assembly", mutated)
    out = Engine().check(Source((EXAMPLES / "int8.kernel.toml").read_text(), str(EXAMPLES / "int8.kernel.toml")),
                         asm=True)
    wrong = out["asm"]["first_wrong"]
    assert not out["ok"] and "outside every buffer" in out["error"]
    validator("check.schema.json").validate(out)
    assert wrong["kind"] == "fault" and "send.ugm" in wrong["instruction"]
    assert wrong["ir"].startswith("send.load.block.global")


def test_check_stage_asm_runs_the_simulator_on_every_check():
    text = (EXAMPLES / "int8.kernel.toml").read_text()
    assert text.rstrip().rsplit("\n[", 1)[-1].startswith("check]")     # the file ends in its [check] table
    text += 'stage = "asm"\n'
    out = Engine().check(Source(text, str(EXAMPLES / "int8.kernel.toml")))
    assert out["ok"] and out["artifact"] == "asm" and out["asm"]["thread_instructions"] > 0


def _benchdnn_sample():
    """Two benchdnn problems per data type (one ResNet-50 layer, one tail shape, a different pair per type),
    reduced as the tests reduce shapes, for every prop and Xe target."""
    from benchdnn_data import reduce_conv, shape_lines

    resnet, tails = shape_lines("conv/shapes_resnet_50"), shape_lines("conv/shapes_tails")
    for i, types in enumerate(("f32", "f16", "bf16", "s8")):
        for line in (resnet[3 * i + 1], tails[2 * i]):
            shape = reduce_conv(line)
            for prop in ("fwd", "bwd_d", "bwd_w"):
                for hw in ("xehpg", "xehpc"):
                    name = shape.canonical()
                    yield pytest.param(name, types, prop, hw, id=f"{prop}-{types}-{hw}-{name}")


@pytest.mark.slow
@pytest.mark.parametrize("shape,types,prop,hw", list(_benchdnn_sample()))
def test_benchdnn_sample_passes_in_the_simulator(shape, types, prop, hw):
    text = (f'[problem]\nop = "conv"\nprop = "{prop}"\nshape = "{shape}"\ntypes = "{types}"\n'
            f'[target]\nhw = "{hw}"\n')
    out = Engine().check(Source(text, "sample.kernel.toml"), asm=True)
    assert out["ok"], out.get("error") or out.get("failure")
    assert out["asm"]["thread_instructions"] > 0


@pytest.mark.parametrize("m", [1, 2, 3])
def test_a_dpas_tile_of_few_rows_reads_its_a_pieces_from_register_boundaries(m):
    """On Xe-HPC's 64-byte registers one row of tf32 A (8 dwords) is half a register: the repeat count takes
    padding rows so every dpas's src2 starts on a register (a config of M = 1 once had no code)."""
    text = (f'[problem]\nop = "gemm"\nshape = "{m}x39:39x21"\ntypes = "f32"\n[target]\nhw = "xehpc"\n'
            '[config]\nline = "fma=dpas simd=16 regs=256 l=k1 T=n1 i=n16k16 s=x0.a P=r S=a1b1"\n')
    out = Engine().check(Source(text, "few_rows.kernel.toml"))
    assert out["ok"] and out["artifact"] == "asm", out.get("error") or out.get("failure")
