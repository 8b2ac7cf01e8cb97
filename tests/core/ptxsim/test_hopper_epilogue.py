"""epilogue=tma (CUTLASS's TMA epilogue): each warp's rows of C through swizzled SLM buffers and tensor
stores. The IR in the interpreter and the PTX in the PTX simulator agree with float64, across tiles of a
persistent group and with an M tail; the simulator reads a store's SLM as late as the PTX allows, so a
buffer rewritten before its store is waited for shows as a wrong result."""
import re
from dataclasses import replace

import pytest

from kdd.core.builder import build_kernel
from kdd.core.builder.errors import BuildError
from kdd.core.codegen.ptx import generate_ptx
from kdd.core.config.line import parse_config_line as parse_line
from kdd.core.interp.check import check_kernel
from kdd.core.passes.kernel_pipeline import run_pipeline
from kdd.core.problem import problem_from_text
from kdd.core.ptxsim.check import check_ptx
from kdd.core.targets import get_target

SM90 = get_target("sm_90")
TWO_SMS = replace(SM90, devices=(replace(SM90.device, cores=2),))     # several tiles per group


def _listing(kernel, target=SM90):
    return generate_ptx(kernel, run_pipeline(kernel).final, target, check=False).to_dict()


@pytest.mark.parametrize("types, tile", [("f16:f16:f16", "m64n128k64"),      # 2 chunks of 64: two buffers
                                         ("f16:f16:f16", "m128n64k64"),      # 1 chunk: one buffer, waited for
                                         ("f16:f16:f32", "m64n64k64 swizzle=2")])   # 2 chunks of 32 f32 columns
def test_the_persistent_kernel_stores_c_by_tma(types, tile):
    """M = 200 leaves a tail TMA must not write; 2 groups walk 4-8 tiles each, so every buffer is
    written again after its store, in the next tile; relu runs on the accumulators first."""
    problem = problem_from_text("m200n256k128", types=types, post_ops="relu")
    kernel = build_kernel(problem, parse_line(f"schedule=tma_ws_cooperative tile={tile} stages=2 epilogue=tma"),
                          TWO_SMS)
    listing = _listing(kernel, TWO_SMS)
    asm = listing["asm"]
    assert "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group" in asm
    assert "cp.async.bulk.wait_group.read 0" in asm         # none pending when the consumers end
    assert "st.global" not in asm
    store_map = listing["launch"]["tensor_maps"][-1]
    assert (store_map["buffer"], store_map["dims"]) == ("dst", [256, 200])
    result = check_ptx(kernel, listing)
    assert result["ok"], result


def test_a_buffer_rewritten_before_its_store_is_waited_for_is_wrong():
    """Without the wait for the store that read a buffer, the simulator's store reads the next chunk."""
    problem = problem_from_text("m128n256k128", types="f16:f16:f16")
    kernel = build_kernel(problem, parse_line("schedule=tma_ws_cooperative tile=m64n128k64 stages=2 epilogue=tma"),
                          TWO_SMS)
    listing = _listing(kernel, TWO_SMS)
    asm, n = re.subn(r"cp\.async\.bulk\.wait_group\.read 1;", "cp.async.bulk.wait_group.read 2;", listing["asm"])
    assert n > 0
    assert check_ptx(kernel, listing)["ok"]
    result = check_ptx(kernel, dict(listing, asm=asm))
    assert not result["ok"] and result["rel_err"] > 1e-2, result


@pytest.mark.parametrize("types", ["f16:f16:f16", "bf16:bf16:f32"])
def test_the_interpreter_and_the_simulator_agree_on_the_tma_schedule(types):
    problem = problem_from_text("m100n128k128", types=types)
    kernel = build_kernel(problem, parse_line("schedule=tma tile=m64n128k64 stages=2 epilogue=tma"), SM90)
    assert check_kernel(kernel).ok
    result = check_ptx(kernel, _listing(kernel))
    assert result["ok"], result


def test_a_convolution_of_pixel_runs_stores_by_tma():
    problem = problem_from_text("mb3ic128ih7oc64oh7kh1ph0", op="conv", types="f16:f16:f16",
                                tags={"src": "axb", "wei": "axcb", "dst": "axb"}, post_ops="relu")
    kernel = build_kernel(problem, parse_line("schedule=tma_ws_cooperative tile=m128n64k64 stages=2 epilogue=tma"),
                          SM90)
    result = check_ptx(kernel, _listing(kernel))
    assert result["ok"], result


def test_boxes_of_pixels_name_the_knob():
    problem = problem_from_text("mb2ic64ih8oc64oh8kh3ph1", op="conv", types="f16:f16:f16",
                                tags={"src": "axb", "wei": "axcb", "dst": "axb"})
    with pytest.raises(BuildError) as exc:
        build_kernel(problem, parse_line("schedule=tma tile=m128n64k64 stages=2 epilogue=tma"), SM90)
    assert exc.value.knob == "epilogue"


def test_the_knob_round_trips_and_is_optional():
    config = parse_line("schedule=tma_ws_cooperative tile=m128n256k64 stages=4 epilogue=tma")
    assert config.epilogue == "tma" and parse_line(config.line()) == config
    assert "epilogue" not in parse_line("schedule=tma stages=4").line()


def test_a_swizzle_that_does_not_divide_the_m_tiles_names_the_knob():
    problem = problem_from_text("m256n256k128", types="f16:f16:f16")
    with pytest.raises(BuildError) as exc:      # 4 M tiles of 64
        build_kernel(problem, parse_line("schedule=tma_ws_cooperative tile=m64n64k64 stages=2 swizzle=3"), SM90)
    assert exc.value.knob == "swizzle"
