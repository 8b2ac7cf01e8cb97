"""Split K across the grid into a destination atomics cannot finish (``kdd.core.builder.split_k``).

oneDNN's bwd_w lines with f16/bf16 diff_weights, and split K under post-ops:
the partial C tiles go into a zeroed f32 scratch buffer, each thread counts
its arrival, and the last part to arrive converts the sum and applies the
post-ops. Each case reads without errors, builds, and computes the float64
reference's result after the build and after every pass (``kdd check
--bisect``); Xe cases also run their assembly in the simulator.
"""
from __future__ import annotations

import shutil
from math import prod

import numpy as np
import pytest

from kdd.core.builder import build_kernel
from kdd.core.builder import split_k
from kdd.core.config.tiling import derive_tiling
from kdd.core.engine import Engine
from kdd.core.engine.engine import Source
from kdd.core.interp.check import check_buffers, check_kernel, verdict
from kdd.core.interp.grid import Launch
from kdd.core.interp.program import run_ir
from kdd.core.spec import Severity, load_spec
from test_builder_onednn_forms import _checked, _document


def _spec(text):
    """The document's spec; its ``loop`` diagnostics say that the last group finishes the sums."""
    spec, diagnostics = load_spec(text)
    assert any("scratch buffer" in d.message and d.severity == Severity.INFORMATION for d in diagnostics)
    return spec


CASES = [
    # bwd_w into f16 / bf16 diff_weights, the reduced forms of oneDNN's xehpc and xehpg lines
    ("bwd_w", "mb16ic32ih6oc32oh6kh3ph1", "f16", "xehpc", "fma=dpas simd=16 l=oh2 T=oc2 i=ic16mb16oc16 bufs=0", ()),
    ("bwd_w", "mb16ic32ih6oc32oh6kh3ph1", "bf16", "xehpc", "fma=dpas simd=16 l=oh3 T=ic2 i=ic16mb16oc16 bufs=3", ()),
    ("bwd_w", "mb1ic3ih24oc16oh6kh4sh4ph0", "f16", "xehpg", "fma=dpas simd=8 l=oh2 T=oc2 i=ic4kw4oc8ow16 bufs=0", ()),
    # with the bias gradient into a bf16 bias: its sums are finished the same way (an oc tail too)
    ("bwd_w", "ic32ih6oc17oh6kh3ph1", "bf16", "xehpg", "fma=mad simd=16 i=ic8kw3oc16ow2 l=oh3ow3", ("bias:bf16",)),
    # fwd with post-ops (relu, then sum reading the destination), f16 and an f32 destination
    ("fwd", "ic32ih6oc16oh6kh3ph1", "f16", "xehpc", "fma=dpas simd=16 i=ow8oc16ic16 l=ic1kh3kw3", ("relu", "sum")),
    ("fwd", "ic32ih6oc24oh6kh3ph1", "f32", "xehpg", "fma=mad simd=8 i=ow4oc8ic8 l=ic2kh3kw3", ("tanh",)),
    # K sliced in the group and split across the grid: slice 0 counts and finishes
    ("fwd", "mb8ic64ih4oc32oh4kh3ph1", "f16", "xehpg", "fma=dpas simd=8 l=kh3kw3 T=ic2oc2 i=mb8oc8ic16 bufs=2",
     ("relu",)),
    # bwd_d into bf16 on sm_90 (a warp counts once)
    ("bwd_d", "mb2ic16ih6oc32oh6kh3ph1", "bf16", "sm_90", "fma=mma i=mb2iw8ic16oc16 l=kh3kw3", ()),
]


@pytest.mark.slow
@pytest.mark.parametrize("prop,shape,types,hw,line,post_ops", CASES)
def test_split_k_into_a_narrow_destination_or_under_post_ops_checks(prop, shape, types, hw, line, post_ops):
    text = _document(prop, shape, types, hw, line, post_ops)
    _spec(text)
    kernel = _checked(text)
    scratch = {a.name: a for a in kernel.args if a.role == "scratch"}
    assert {"arrivals"} < set(scratch) and all(a.zero_init for a in scratch.values())
    assert all(not a.zero_init for a in kernel.outputs)      # the finisher stores them whole


@pytest.mark.skipif(shutil.which("iga64") is None, reason="iga64 (Debian libigc-tools) is not installed")
@pytest.mark.parametrize("case", [c for c in CASES if c[3] != "sm_90" and "bias:bf16" not in c[5]][:3])
def test_split_k_finish_runs_in_the_xe_simulator(case):
    prop, shape, types, hw, line, post_ops = case
    out = Engine().check(Source(_document(prop, shape, types, hw, line, post_ops)), asm=True)
    assert out["ok"], out


@pytest.mark.skipif(shutil.which("iga64") is None, reason="iga64 (Debian libigc-tools) is not installed")
def test_a_masked_block_of_partial_sums_adds_only_its_live_lanes():
    """An oc tail inside a thread's tile: the block atomics into the scratch carry the block's mask on
    every lane's add, and the simulator's result is right."""
    text = _document("bwd_w", "mb16ic24iw12oc20ow12kw1pw0", "f16", "xehpg",
                     "fma=dpas simd=8 l=ow2 T=oc2 i=ic8mb16oc8 bufs=0")
    _checked(text)
    engine = Engine()
    asm = engine.compile(Source(text), emit="asm")["asm"]["asm"]
    assert any(line.lstrip().startswith("(W&") and "atomic_fadd" in line for line in asm.splitlines())
    assert engine.check(Source(text), asm=True)["ok"]


@pytest.mark.parametrize("case", [CASES[0], CASES[3], CASES[-1]], ids=lambda c: f"{c[0]}-{c[3]}")
def test_the_last_arrival_leaves_scratch_and_counters_zeroed_for_the_next_launch(case):
    """Three launches of the final IR on the same buffers with no reset in between (as a benchmark or
    a framework reusing its workspace launches it): after each, every counter and scratch byte is zero
    again and the outputs match the float64 reference."""
    spec = _spec(_document(*case))
    kernel = build_kernel(spec.check, spec.user_config, spec.target)
    final = Engine().trace(kernel).final
    buffers, inputs = check_buffers(kernel)
    by_var = {a.var.name: buffers[a.name].copy() for a in kernel.args}
    launch = Launch(kernel.grid, kernel.tg, kernel.simd, kernel.reg_bytes)
    scratch = [a for a in kernel.args if a.role == "scratch"]
    assert any(a.name == "arrivals" for a in scratch)
    for launch_no in range(3):
        run = run_ir(final, launch, by_var)
        for arg in scratch:
            assert not by_var[arg.var.name].any(), f"launch {launch_no}: {arg.name} not reset"
        outputs = {a.name: by_var[a.var.name] for a in kernel.outputs}
        written = {a.name: run.written[a.var.name] for a in kernel.outputs if a.var.name in run.written}
        result = verdict(kernel, kernel.problem, inputs, outputs, written, None, 0.0)
        assert result.ok and not result.unwritten, (launch_no, result)


def test_a_finish_that_never_fires_fails_the_check(monkeypatch):
    """The check sees the protocol: waiting for one arrival too many leaves the destination unwritten."""
    original = split_k.SplitFinish.__init__

    def one_too_many(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.parts += 1
    monkeypatch.setattr(split_k.SplitFinish, "__init__", one_too_many)
    spec = _spec(_document(*CASES[0]))
    result = check_kernel(build_kernel(spec.check, spec.user_config, spec.target))
    assert not result.ok and result.unwritten > 0


def test_split_k_into_the_accumulator_type_keeps_plain_atomics():
    """With an f32 destination and no post-ops the partial sums go straight into the zeroed destination."""
    spec, _ = load_spec(_document("fwd", "ic32ih6oc16oh6kh3ph1", "f32", "xehpg",
                                  "fma=mad simd=16 i=ow4oc16ic8 l=ic2kh3kw3"))
    kernel = build_kernel(spec.check, spec.user_config, spec.target)
    assert [a.name for a in kernel.args if a.role == "scratch"] == [] and kernel.arg("dst").zero_init
    assert check_kernel(kernel).ok


def test_sm90_split_k_resets_compile_to_ptx_that_ptxas_accepts():
    """The last arrival's reset stores (a lone word store to the counter, whose address alignment the
    emitter cannot prove beyond 4 bytes) lower to PTX, and ptxas assembles it."""
    from kdd.core.codegen.ptx import generate_ptx
    from kdd.core.codegen.ptx.tools import find_tool

    case = next(c for c in CASES if c[3] == "sm_90")
    spec = _spec(_document(*case))
    kernel = build_kernel(spec.check, spec.user_config, spec.target)
    listing = generate_ptx(kernel, Engine().trace(kernel).final, spec.target, check=find_tool("ptxas") is not None)
    stores = [line for line in listing.asm.splitlines() if "st.global.b32" in line]
    assert stores, "no word store: the counter reset is missing"
    if find_tool("ptxas") is not None:
        assert listing.assembler["ok"], listing.assembler
