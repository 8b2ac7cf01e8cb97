"""Verdicts that mean what they say: what ``kdd check`` ran, ok / wrong / not-checkable with their exit
statuses, and code-generation failures that are errors whatever ``kdd compile`` emits."""
import json
from pathlib import Path

import pytest

from kdd.core.toolchain import find_tool
from kdd.server.cli import main
from protocol_schemas import validator

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# As written (regs = 128, no sub-tiles) kdd's allocator runs out of registers at the iter knob.
OUT_OF_REGISTERS = ('[problem]\nop = "conv"\nprop = "fwd"\nshape = "mb32ic64ih56oc64oh56kh3ph1"\ntypes = "f16"\n\n'
                    '[target]\nhw = "xehpg"\n\n[config]\n'
                    'line = "simd=8 l=kh3kw3ic4 T=oc2ow2 i=ic16oc32ow16 bufs=3 S=a1b1"\nregs = 128\n')


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """Each test its own on-disk cache: these tests patch the simulators and the code generator, and a verdict
    cached under a patched run must not answer another test."""
    monkeypatch.setenv("KDD_CACHE_DIR", str(tmp_path / "cache"))


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def out_of_registers(tmp_path):
    path = tmp_path / "oor.kernel.toml"
    path.write_text(OUT_OF_REGISTERS)
    return path


@pytest.mark.parametrize("emit", ["stats", "ir", "asm", "passes"])
def test_a_code_generation_failure_is_an_error_on_every_emit_printed_once_at_its_knob(out_of_registers, capsys,
                                                                                     emit):
    code, out, err = run(capsys, "compile", out_of_registers, "--emit", emit)
    assert code == 2
    errors = [line for line in err.splitlines() if ": error: " in line]
    assert len(errors) == 1 and "out of registers at" in errors[0]
    assert errors[0].startswith(f"{out_of_registers}:11:")          # the line = "..." knob (iter inside it)
    if emit in ("ir", "passes"):
        assert "kernel {" in out                                      # what was asked for, then why it fails
    code, out, _ = run(capsys, "compile", out_of_registers, "--emit", emit, "--json")
    result = json.loads(out)
    assert code == 2 and result["ok"] is False and result["failure"]["code"] == "out-of-registers"
    assert result["failure"]["knob"] == "iter"
    validator("compile.schema.json").validate(result)


def test_a_knob_the_target_override_lacks_is_named_with_the_targets_values(tmp_path, capsys):
    path = tmp_path / "mad.kernel.toml"
    path.write_text('[problem]\nop = "conv"\nshape = "mb2ic16ih8oc16oh8kh3ph1"\ntypes = "s8:s8:s32"\n\n'
                    '[target]\nhw = "xehpg"\n\n[config]\nfma = "mad"\n')
    code, _, err = run(capsys, "compile", path, "--target", "sm_90", "--emit", "asm")
    assert code == 2
    assert err.strip().splitlines() == [f"{path}:10:7: error: fma: sm_90 has no 'mad' instruction (has: mma, fma) "
                                        f"(with --target sm_90) [bad-knob]"]


def test_an_sm90_spill_is_a_warning_naming_the_knobs_that_remove_it(tmp_path, capsys):
    path = tmp_path / "spill.kernel.toml"       # the classic schedule (mma.sync), whose tiles a spill names
    path.write_text('[problem]\nop = "gemm"\nshape = "m4096n4096k4096"\ntypes = "f16:f16:f32"\n\n'
                    '[target]\nhw = "sm_90"\n\n[check]\nshape = "m64n64k64"\n\n[config]\nregs = 64\n')
    code, out, err = run(capsys, "compile", path, "--emit", "asm")
    assert code == 0 and "FAILED" not in out and "ok with warnings" in out
    warning = [line for line in err.splitlines() if "[spill]" in line]
    assert len(warning) == 1 and ": warning: ptxas spilled" in warning[0]
    assert all(knob in warning[0] for knob in ("iter", "s=", "regs="))
    code, out, _ = run(capsys, "compile", path, "--emit", "stats", "--json")
    assert code == 0 and json.loads(out)["ok"] is True


def test_sm90_is_checked_on_its_ptx_in_the_ptx_simulator(capsys):
    code, out, _ = run(capsys, "check", EXAMPLES / "sm90_gemm.kernel.toml", "--json")
    result = json.loads(out)
    assert code == 0 and (result["verdict"], result["artifact"], result["stage"]) == ("ok", "ptx", "final")
    assert result["ptx"]["instructions"] > 0
    validator("check.schema.json").validate(result)
    code, out, _ = run(capsys, "check", EXAMPLES / "sm90_gemm.kernel.toml")
    assert code == 0 and out.startswith("ok 128x256:256x256 (the PTX in kdd's PTX simulator)")


def test_a_simulator_gap_is_not_checkable_never_wrong(capsys, monkeypatch):
    from kdd.core.xesim import check as xe_check
    from kdd.core.xesim.errors import SimulatorGap

    def gap(*args, **kwargs):
        raise SimulatorGap(7, "math.erf (8|M0) r10:f r12:f", "math function erf")
    monkeypatch.setattr(xe_check, "simulate", gap)
    code, out, _ = run(capsys, "check", EXAMPLES / "int8.kernel.toml", "--json")
    result = json.loads(out)
    assert code == 4 and (result["verdict"], result["code"]) == ("not-checkable", "simulator-gap")
    assert "math function erf" in result["reason"] and result["ok"] is False
    validator("check.schema.json").validate(result)
    code, out, _ = run(capsys, "check", EXAMPLES / "int8.kernel.toml")
    assert code == 4 and out.startswith("not checkable ic64ih4oc32oh4kh1ph0 (the assembled kernel in kdd's Xe "
                                        "simulator): line 7: math.erf")
    code, out, _ = run(capsys, "check", EXAMPLES / "int8.kernel.toml", "--bisect")  # every IR stage right, code gap
    assert code == 4 and "not checkable" in out.splitlines()[-1]


def test_a_shape_option_is_reduced_unless_exact_and_the_output_says_what_was_reduced(capsys):
    path = EXAMPLES / "gemm_f16.kernel.toml"
    code, out, _ = run(capsys, "check", path, "--shape", "m64n64k65536", "--stage", "final", "--json")
    result = json.loads(out)
    assert code == 0 and result["shape"] != "64x65536:65536x64"
    assert result["reduced"]["changes"][-1].startswith("k 65536 -> ")
    code, out, _ = run(capsys, "check", path, "--shape", "m64n64k65536", "--exact", "--json")
    result = json.loads(out)
    assert code == 4 and result["code"] == "check-too-large" and result["shape"] == "64x65536:65536x64"


def test_a_reduced_shape_runs_the_compiled_config_unless_its_loops_would_run_over_the_bound(tmp_path, capsys):
    """The check of a reduced problem runs the config compiled for the full one (its tiles, its loops);
    bwd_w's default config loops over the whole minibatch and output (mb32 oh28 ow7 trips): on the reduced
    shape those fixed loops would still run billions of masked multiply-adds, so the check says it runs
    the written knobs with defaults for the check shape instead."""
    text = (EXAMPLES / "bwd_w.kernel.toml").read_text()
    path = tmp_path / "bwd_w.kernel.toml"
    path.write_text(text[:text.index("[check]")])
    code, out, _ = run(capsys, "check", path, "--json")
    result = json.loads(out)
    assert code == 0 and result["verdict"] == "ok"
    assert "checked with the written knobs and defaults for the check shape" in result["reduced"]["text"]
    demo = tmp_path / "resnet50_3x3.kernel.toml"  # at an mb8 tile: the reduced mb4 pads it by 2 only
    demo.write_text((EXAMPLES / "resnet50_3x3.kernel.toml").read_text().replace('iter = "mb16', 'iter = "mb8'))
    code, out, _ = run(capsys, "check", demo, "--shape", "mb32ic64ih56oc64oh56kh3ph1", "--json")
    result = json.loads(out)
    assert code == 0 and "defaults for the check shape" not in result["reduced"]["text"]   # the compiled config
    code, out, _ = run(capsys, "check", EXAMPLES / "gemm_f16.kernel.toml", "--shape", "m256n256k4096", "--json")
    assert "the compiled config's loops would run 67108864" in json.loads(out)["reduced"]["text"]  # l=k256: 4096


def test_check_help_documents_the_verdicts_and_their_exit_statuses(capsys):
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "0 ok" in text and "1 wrong" in text and "4 not checkable" in text and "--asm is accepted" not in text
    assert "``--asm`` is accepted and means the default" in text


def test_a_simulator_that_breaks_is_a_failure_inside_kdd_exit_3_never_a_verdict(capsys, monkeypatch):
    from kdd.core.xesim import check as xe_check

    def broken(*args, **kwargs):
        raise ValueError("operands could not be broadcast together")
    monkeypatch.setattr(xe_check, "simulate", broken)
    code, _, err = run(capsys, "check", EXAMPLES / "int8.kernel.toml")
    assert code == 3 and "the asm simulator raised ValueError: operands could not be broadcast" in err


def test_a_code_generator_that_breaks_is_a_failure_inside_kdd_exit_3(capsys, monkeypatch):
    from kdd.core.codegen.xe import lower
    from kdd.core.ir.funcs import Dpas

    def broken(*args, **kwargs):
        raise StopIteration
    monkeypatch.setitem(lower._CALLS, Dpas, broken)
    code, _, err = run(capsys, "compile", EXAMPLES / "resnet50_3x3.kernel.toml", "--emit", "asm")
    assert code == 3 and "xehpg code generation raised StopIteration" in err


def _device_patched(monkeypatch, ok: bool) -> list:
    """kdd's CuPy runner replaced (no GPU here): the full-shape check answers ``ok``; the timer records that
    it ran. Returns the calls made, in order."""
    from kdd.core.codegen.ptx import device

    calls = []

    def check(listing, kernel, problem=None, **options):
        calls.append(("check", problem.shape.canonical(), options["launches"], options["rounding"]))
        return {"ok": ok, "rel_err": 1e-4 if ok else 0.5, "tol": 0.01, "first_bad_index": None if ok else [0, 3],
                "tensor": "dst", "shape": problem.shape.canonical(), "ms": 1.0, "launches": options["launches"],
                "inputs": "rounding", "device": "Fake H100", "loaded_from": "cubin"}

    def time(listing, kernel, **options):
        calls.append(("time",))
        return {"median_us": 10.0, "min_us": 9.0, "runs": options["runs"], "reps": 5, "method": "cuda-graph",
                "rotations": 4, "loaded_from": "cubin", "zeroed_per_launch": [], "device": "Fake H100",
                "tflops": 1.0}

    monkeypatch.setattr(device, "check_on_device", check)
    monkeypatch.setattr(device, "time_on_device", time)
    return calls


@pytest.mark.skipif(find_tool("ptxas") is None, reason="needs ptxas (PyPI nvidia-cuda-nvcc)")
@pytest.mark.parametrize("ok", [True, False])
def test_bench_times_only_a_kernel_checked_at_the_shape_it_times(monkeypatch, capsys, ok):
    calls = _device_patched(monkeypatch, ok)
    code, out, err = run(capsys, "bench", EXAMPLES / "sm90_gemm.kernel.toml", "--shape", "m128n256k128", "--runs", "7")
    assert calls[0] == ("check", "128x128:128x256", 3, True)       # the timed shape itself, 3 launches, rounding
    if ok:
        assert code == 0 and calls[1:] == [("time",)]
        assert "checked at this shape over 3 launches" in out
    else:
        assert code == 1 and calls[1:] == []
        assert out.startswith("WRONG 128x128:128x256 on Fake H100") and "not timed" in out
    code, out, _ = run(capsys, "bench", EXAMPLES / "sm90_gemm.kernel.toml", "--shape", "m128n256k128", "--json")
    reply = json.loads(out)
    assert code == (0 if ok else 1) and reply["ok"] is ok
    assert (reply["check"]["launches"] == 3) if ok else (reply["verdict"] == "wrong" and reply["timed"] is False)
