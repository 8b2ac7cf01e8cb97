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


@pytest.mark.parametrize("schedule, shape, tile", [
    ("tma", "mb3ic64ih7oc64oh7kh3ph1", "m128n64k64"),          # 8 x 8 x 2 boxes: a warp's 16 rows, 2 lines
    ("tma_ws_cooperative", "mb16ic64ih1iw7oc64oh1ow7kh3kw3ph1pw1", "m128n64k64"),  # 8 x 1 x 16: 2 images
    ("tma_ws_cooperative", "mb2ic64ih12oc64oh12kh3ph1", "m128n64k64"),  # 16 x 4 x 2 boxes: 1 line; tails
    ("tma_ws_cooperative", "mb2ic128ih14oc128oh7kh1sh2ph0", "m128n128k64")])   # stride 2
def test_boxes_of_pixels_store_by_tma(schedule, shape, tile):
    """A warp's 16 rows of a box of output pixels are a box of the output tensor (a line, lines, or
    images, in the tile's row order); the tensor store writes none of the pixels outside the output."""
    problem = problem_from_text(shape, op="conv", types="f16:f16:f16",
                                tags={"src": "axb", "wei": "axcb", "dst": "axb"}, post_ops="relu")
    kernel = build_kernel(problem, parse_line(f"schedule={schedule} tile={tile} stages=2 epilogue=tma"), SM90)
    if schedule == "tma":
        assert check_kernel(kernel).ok
    listing = _listing(kernel)
    assert "cp.async.bulk.tensor.4d.global.shared::cta" in listing["asm"]
    result = check_ptx(kernel, listing)
    assert result["ok"], result


def test_the_knob_round_trips_and_is_optional():
    config = parse_line("schedule=tma_ws_cooperative tile=m128n256k64 stages=4 epilogue=tma")
    assert config.epilogue == "tma" and parse_line(config.line()) == config
    assert "epilogue" not in parse_line("schedule=tma stages=4").line()


def test_a_swizzle_that_does_not_divide_the_m_tiles_names_the_knob():
    problem = problem_from_text("m256n256k128", types="f16:f16:f16")
    with pytest.raises(BuildError) as exc:      # 4 M tiles of 64
        build_kernel(problem, parse_line("schedule=tma_ws_cooperative tile=m64n64k64 stages=2 swizzle=3"), SM90)
    assert exc.value.knob == "swizzle"


@pytest.mark.parametrize("problem_text, line", [
    ("m72n64k128", "tile=m64n64k64 stages=2 splits=2 epilogue=tma"),       # an M tail; 4 units on 2 SMs
    ("m64n64k192", "tile=m64n64k64 stages=2 splits=3"),                    # direct stores; f32 out
])
def test_split_k_units_finish_and_reset_themselves(problem_text, line):
    """Split K's parts are units of the persistent walk: the last part of each warp's slab adds up the
    f32 scratch, runs the epilogue (relu) and leaves scratch and counters zero, so a second launch on
    the same buffers, unreset, computes the same C."""
    import numpy as np

    from kdd.core.interp.check import check_buffers
    from kdd.core.ptxsim.run import run_ptx

    types = "f16:f16:f32" if "splits=3" in line else "f16:f16:f16"
    problem = problem_from_text(problem_text, types=types, post_ops="relu")
    kernel = build_kernel(problem, parse_line(f"schedule=tma_ws_cooperative {line}"), TWO_SMS)
    assert [a.name for a in kernel.args if a.role == "scratch"] == ["dst_partial", "arrivals"]
    listing = _listing(kernel, TWO_SMS)
    result = check_ptx(kernel, listing)
    assert result["ok"], result
    buffers, _ = check_buffers(kernel, 0)
    args = [buffers[a.name] for a in kernel.args]
    results = []
    for _ in range(2):
        buffers["dst"][:] = 0xFF
        run_ptx(listing["asm"], listing["launch"], args)
        assert not buffers["dst_partial"].any() and not buffers["arrivals"].any()
        results.append(buffers["dst"].copy())
    assert np.array_equal(*results)


def test_split_k_that_does_not_divide_the_k_blocks_names_the_knob():
    problem = problem_from_text("m128n64k192", types="f16:f16:f16")
    with pytest.raises(BuildError) as exc:
        build_kernel(problem, parse_line("schedule=tma_ws_cooperative tile=m128n64k64 stages=2 splits=2"), SM90)
    assert exc.value.knob == "splits"
