"""schedule=tma (TMA, transaction barriers, wgmma): the IR in the interpreter and the PTX in the PTX
simulator agree with float64; wrong descriptors, a missing copy and a wait nothing completes are caught;
the verifier and the builder refuse what the hardware cannot run."""
import re
from dataclasses import replace

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kdd.core.builder import build_kernel
from kdd.core.builder.errors import BuildError
from kdd.core.builder.hopper import tma_tile
from kdd.core.codegen.errors import CodegenUnsupported
from kdd.core.codegen.ptx import generate_ptx
from kdd.core.config.kernel_config import KernelConfig
from kdd.core.config.line import parse_config_line as parse_line
from kdd.core.config.tiles import Tile
from kdd.core.interp.check import check_kernel
from kdd.core.interp.errors import InterpError
from kdd.core.ir.expr import Broadcast, Ramp, const, var
from kdd.core.ir.funcs import MbarrierInit, MbarrierWait, Send, SendKind, SendOp, TensorLoad
from kdd.core.ir.stmt import Alloc, FuncCall, MemKind, Store, seq
from kdd.core.ir.types import f16, u16, u32, u64
from kdd.core.passes.kernel_pipeline import run_pipeline, with_body
from kdd.core.passes.verify import verify_kernel
from kdd.core.problem import problem_from_text
from kdd.core.ptxsim.check import check_ptx
from kdd.core.ptxsim.machine import Machine
from kdd.core.ptxsim.program import Program
from kdd.core.targets import get_target
from kdd.core.xesim.errors import Fault

SM90 = get_target("sm_90")
# 4 K blocks over 2 stages: every stage refilled, both barrier phases waited on; two groups in N
TMA = KernelConfig(schedule="tma", tile=Tile.of({"m": 64, "n": 64, "k": 64}), stages=2)


def _kernel(shape="m64n128k256", types="f16:f16:f32", config=TMA):
    problem = problem_from_text(shape, types=types)
    return build_kernel(problem, config, SM90)


def _listing(kernel):
    return generate_ptx(kernel, run_pipeline(kernel).final, SM90, check=False).to_dict()


@pytest.mark.parametrize("types", ["f16:f16:f32", "bf16:bf16:bf16"])
def test_the_ir_and_the_ptx_agree_with_float64(types):
    kernel = _kernel(types=types)
    assert check_kernel(kernel).ok
    listing = _listing(kernel)
    result = check_ptx(kernel, listing)
    assert result["ok"], result
    assert ".target sm_90a" in listing["asm"]
    assert "wgmma.mma_async.sync.aligned.m64n64k16" in listing["asm"]
    assert "cp.async.bulk.tensor.2d" in listing["asm"]
    assert [m["box"] for m in listing["launch"]["tensor_maps"]] == [[64, 64], [64, 64]]
    assert [m["strides"] for m in listing["launch"]["tensor_maps"]] == [[512], [256]]


def test_the_k_loop_stays_a_loop():
    """One MMA block in the PTX whatever K is: the loop is not unrolled over K."""
    short, long = (_listing(_kernel(shape=s))["asm"] for s in ("m64n128k256", "m64n128k4096"))
    assert short.count("wgmma.mma_async") == long.count("wgmma.mma_async") == 4


A_DESC = (1 << 62) | (64 << 32) | (1 << 16)     # 128-byte swizzle, 1024-byte 8-row groups, A's unused lead


@pytest.mark.parametrize("pattern, replacement", [
    (r"(wgmma\.mma_async[^\n]*), 1;", r"\1, 0;"),                       # B read K-major: wrong element order
    (rf"\b{A_DESC}\b", str((1 << 62) | (32 << 32) | (1 << 16))),        # A's 8-row groups 512 bytes apart
])
def test_the_simulator_reads_through_the_descriptors(pattern, replacement):
    kernel = _kernel()
    listing = _listing(kernel)
    asm, n = re.subn(pattern, replacement, listing["asm"])
    assert n > 0
    result = check_ptx(kernel, dict(listing, asm=asm))
    wrong = result["rel_err"] is not None and result["rel_err"] > 1e-3
    fault = "ptx" in result and result["ptx"].get("gap") is False       # read outside shared memory
    assert not result["ok"] and (wrong or fault), result


def test_a_missing_tensor_copy_hangs():
    """Without the copies, every phase waits for bytes that never land."""
    kernel = _kernel()
    listing = _listing(kernel)
    asm = "\n".join(ln for ln in listing["asm"].splitlines() if "cp.async.bulk.tensor" not in ln)
    result = check_ptx(kernel, dict(listing, asm=asm))
    assert not result["ok"] and "deadlock" in result["error"]


def test_the_interpreter_names_a_wait_nothing_completes():
    bar = var("bar", u64)
    body = Alloc.make(bar, 8, MemKind.SLM, seq(FuncCall.make(MbarrierInit(1), [bar, 0]),
                                               FuncCall.make(MbarrierWait(), [bar, 0, 0])))
    with pytest.raises(InterpError, match="would hang"):
        check_kernel(with_body(_kernel(), body))


def test_the_simulator_names_a_deadlock():
    ptx = (".version 8.0\n.target sm_90a\n.address_size 64\n.extern .shared .align 1024 .b8 kdd_smem[];\n"
           ".visible .entry k()\n{\n\t.reg .pred %p<2>;\n\t.reg .b32 %r<2>;\n\tmov.u32 %r0, kdd_smem;\n"
           "\tmbarrier.init.shared::cta.b64 [%r0], 1;\n$L:\n"
           "\tmbarrier.try_wait.parity.shared::cta.b64 %p0, [%r0], 0;\n\t@!%p0 bra.uni $L;\n\tret;\n}\n")
    with pytest.raises(Fault, match="deadlock"):
        Machine(Program(ptx), []).run((1, 1, 1), (64, 1, 1), 16)


def test_the_verifier_refuses_hopper_calls_elsewhere_and_misaligned_boxes():
    kernel = _kernel()
    src, slm, bar = kernel.args[0].var, var("a_s", u64), var("full", u64)
    load = FuncCall.make(TensorLoad(f16, (64, 64), (256, 64), (512,)), [src, 0, 0, 0, 0, 0, slm, 512, bar, 0])
    body = Alloc.make(slm, 16384, MemKind.SLM, Alloc.make(bar, 8, MemKind.SLM, load))
    rules = {p.rule for p in verify_kernel(with_body(kernel, body))}
    assert "align" in rules
    xe = with_body(build_kernel(problem_from_text("m64n128k256", types="f16:f16:f32"), None, "xehpg"), body)
    assert "target" in {p.rule for p in verify_kernel(xe)}
    assert not verify_kernel(kernel, run_pipeline(kernel).final)


def test_the_verifier_refuses_strides_off_16_bytes_and_coordinates_past_the_rank():
    kernel = _kernel()
    src, slm, bar = kernel.args[0].var, var("a_s", u64), var("full", u64)

    def rules(box, dims, strides, corner):
        load = FuncCall.make(TensorLoad(f16, box, dims, strides), [src, *corner, slm, 0, bar, 0])
        body = Alloc.make(slm, 16384, MemKind.SLM, Alloc.make(bar, 8, MemKind.SLM, load))
        return {(p.rule, "16 bytes" in p.message, "past" in p.message) for p in verify_kernel(with_body(kernel, body))}
    assert ("send", True, False) in rules((64, 8, 8), (64, 8, 8), (136, 1088), (0, 0, 0, 0, 0))
    assert ("types", False, True) in rules((64, 64), (64, 64), (128,), (0, 0, 1, 0, 0))
    assert not rules((64, 8, 8), (64, 8, 8), (128, 1024), (0, -1, -1, 0, 0))     # negative corners: padding


def test_a_vector_store_is_one_st_v4_per_lane_and_the_verifier_bounds_it():
    """``send.store.scattered.slm.u32x128.vec4``: lane ``l``'s 4 words are its words of 4 consecutive
    register rows, one ``st.shared.v4.b32``; sm_90 takes vectors of 2 or 4 words, and the PTX lowering
    refuses a vector load rather than guess."""
    kernel = _kernel()
    slm, reg = var("a_s", u64), var("quad", u64)
    lane = Ramp.make(const(0), 1, 32)

    def body(op, vec, t=u32):
        fill = [Store.make(reg, v * 128, Broadcast.make(const(v + 1, u32), 32)) for v in range(4)]
        send = FuncCall.make(Send(op, SendKind.SCATTERED, "slm", t, 32 * vec, vec=vec),
                             [slm, lane * (vec * t.size), reg, 0, Broadcast.make(const(True), 32)])
        regs = Alloc.make(reg, 512, MemKind.GRF, seq(*fill, send))
        return with_body(kernel, Alloc.make(slm, 4096, MemKind.SLM, regs))
    store = body(SendOp.STORE, 4)
    assert not verify_kernel(store)
    assert re.search(r"st\.shared\.v4\.b32 \[%r\d+(\+0)?\], \{(%g0_\d, ){3}%g0_\d\}",
                     generate_ptx(store, store.body, SM90, check=False).to_dict()["asm"])
    assert "vector size 3" in verify_kernel(body(SendOp.STORE, 3))[0].message
    assert "2-byte elements" in verify_kernel(body(SendOp.STORE, 4, u16))[0].message
    load = body(SendOp.LOAD, 4)
    with pytest.raises(CodegenUnsupported, match="stores 2 or 4 words"):
        generate_ptx(load, load.body, SM90, check=False)


@pytest.mark.parametrize("line, knob", [("schedule=tma cluster=m2n1", "cluster"),
                                        ("schedule=tma tile=m128n256k64", "tile"),     # does not divide n128
                                        ("schedule=tma tile=m64n64k32", "tile"),       # k is 128 bytes
                                        ("schedule=tma tile=m64n64k64 stages=40", "stages")])
def test_the_builder_names_the_knob_it_cannot_honour(line, knob):
    config = parse_line(line)
    with pytest.raises(BuildError) as exc:
        _kernel(config=config)
    assert exc.value.knob == knob


@pytest.mark.parametrize("schedule", ["tma", "tma_ws_cooperative"])
@pytest.mark.parametrize("shape, bn", [("m64n64k64", 64), ("m128n384k64", 128), ("m64n512k64", 256)])
def test_an_unset_tile_takes_the_widest_n_that_divides_the_problem(schedule, shape, bn):
    """N has no tails, so the default N (256) gives way to 128 or 64 where it does not divide N: the
    default config of a 64-wide GEMM builds and checks instead of being refused on a knob nobody wrote."""
    kernel = build_kernel(problem_from_text(shape, types="f16:f16:f32"), parse_line(f"schedule={schedule}"), SM90)
    assert tma_tile(problem_from_text(shape, types="f16"), KernelConfig(schedule=schedule, tile=Tile()))[:2] == (128, bn)
    if shape == "m64n64k64":
        result = check_ptx(kernel, generate_ptx(kernel, run_pipeline(kernel).final, SM90, check=False).to_dict())
        assert result["ok"], result


def test_the_config_line_round_trips():
    config = parse_line("schedule=tma tile=m128n128k64 stages=3 cluster=m1n1")
    assert (config.schedule, config.stages, config.tile.get("n"), config.cluster.get("m")) == ("tma", 3, 128, 1)
    assert parse_line(config.line()) == config


WS = "schedule=tma_ws_cooperative tile=m64n64k64 stages=2"


@pytest.mark.parametrize("shape, line", [("m256n256k256", WS),       # 16 tiles over 2 groups, 8 each
                                         ("m128n384k192", "schedule=tma_ws_cooperative tile=m128n64k64 stages=3")])
def test_the_warp_specialized_persistent_kernel_in_the_simulator(shape, line):
    """Producer and consumers apart, several tiles per group (a machine of 2 SMs), the stages' phases
    running on across tiles; the interpreter, lockstep, declines it."""
    two_sms = replace(SM90, devices=(replace(SM90.device, cores=2),))
    kernel = build_kernel(problem_from_text(shape, types="f16:f16:f32"), parse_line(line), two_sms)
    assert kernel.grid == (2, 1, 1)
    listing = generate_ptx(kernel, run_pipeline(kernel).final, two_sms, check=False).to_dict()
    assert "setmaxnreg.dec.sync.aligned.u32 40" in listing["asm"]
    assert re.search(r"setmaxnreg\.(inc|dec)\.sync\.aligned\.u32 232", listing["asm"])   # the consumers
    result = check_ptx(kernel, listing)
    assert result["ok"], result


def test_the_interpreter_declines_warp_specialized_kernels():
    from kdd.core.engine.interpreter_check import InterpreterCheck
    from kdd.core.engine.verdict import NotCheckable

    kernel = _kernel(config=parse_line(WS))
    with pytest.raises(NotCheckable, match="lockstep"):
        InterpreterCheck(kernel.problem).result(kernel)


NHWC = {"src": "axb", "wei": "axcb", "dst": "axb"}


@pytest.mark.parametrize("schedule, shape, tags", [
    ("tma", "mb2ic128ih8oc64oh8kh1ph0", NHWC),
    ("tma_ws_cooperative", "mb2ic128ih8oc64oh8kh1ph0", NHWC),
    ("tma", "mb3ic128ih7oc64oh7kh1ph0", NHWC),                                  # 7 x 7 pixels: tails in ow, mb
    ("tma", "mb2ic64ih8oc64oh8kh3ph1", NHWC),                                   # 3x3, padding: zero fill
    ("tma_ws_cooperative", "mb3ic64ih7oc64oh7kh3ph1", NHWC),                    # ... with tails
    ("tma", "mb1ic64ih6iw10oc64oh6ow10kh3kw5ph1pw2", NHWC),                     # OWHI weights (axcb)
    ("tma", "mb1ic64ih6iw10oc64oh6ow10kh3kw5ph1pw2", {**NHWC, "wei": "acdb"}),  # OHWI
    ("tma_ws_cooperative", "mb2ic128ih14oc64oh7kh1sh2ph0", NHWC),               # stride 2: a strided view
    ("tma", "mb1ic64ih9iw16oc64oh3ow8kh1kw1sh3sw2ph0pw0", NHWC)])               # strides 3 and 2, ih not 3 oh
def test_a_convolution_is_an_implicit_gemm(schedule, shape, tags):
    """NHWC pixels are A's rows (1x1 stride 1: a run of them; otherwise a box of them per tap, shifted
    by the tap: TMA's zero fill is the padding, a stride the input's strided view), the weights a
    K-major B; relu runs on the
    accumulators; the pixels of a box outside the output are read as zeros and not stored."""
    problem = problem_from_text(shape, op="conv", types="f16:f16:f16", tags=tags, post_ops="relu")
    kernel = build_kernel(problem, parse_line(f"schedule={schedule} tile=m128n64k64 stages=2"), SM90)
    if schedule == "tma":
        assert check_kernel(kernel).ok
    listing = _listing(kernel)
    assert re.search(r"wgmma\.mma_async[^\n]*, 0;", listing["asm"])      # B K-major: no transpose
    s = problem.shape
    dense = (s.kh, s.kw, s.sh, s.sw, s.ph, s.pw) == (1, 1, 1, 1, 0, 0)      # A's rows are the pixels as they lie
    assert f"cp.async.bulk.tensor.{2 if dense else 4}d" in listing["asm"]
    result = check_ptx(kernel, listing)
    assert result["ok"], result


@st.composite
def _convolutions(draw):
    """Small forward convolutions the TMA schedules take: stride 1 with any kernel and padding up to it, or
    a strided 1x1 without padding; images of a few pixels so that boxes leave tails in every dim."""
    mb, ih, iw = draw(st.integers(1, 3)), draw(st.integers(1, 9)), draw(st.integers(1, 9))
    if draw(st.booleans()):
        kh, kw = draw(st.integers(1, min(3, ih + 2))), draw(st.integers(1, min(3, iw + 2)))
        ph, pw = draw(st.integers(0, kh - 1)), draw(st.integers(0, kw - 1))
        assume(ih + 2 * ph >= kh and iw + 2 * pw >= kw)
        return f"mb{mb}ic64ih{ih}iw{iw}oc64oh{ih + 2 * ph - kh + 1}ow{iw + 2 * pw - kw + 1}kh{kh}kw{kw}ph{ph}pw{pw}"
    sh, sw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    return (f"mb{mb}ic64ih{ih}iw{iw}oc64oh{(ih - 1) // sh + 1}ow{(iw - 1) // sw + 1}kh1kw1sh{sh}sw{sw}ph0pw0")


@settings(max_examples=12, deadline=None)
@given(shape=_convolutions(), m=st.sampled_from((64, 128)), wei=st.sampled_from(("axcb", "acdb")))
def test_any_convolution_the_schedule_takes_matches_float64_in_the_interpreter(shape, m, wei):
    """The pixel boxes (their corner per tile, the tap's shift, the strided view, the tails) against the
    float64 reference, whatever the image, kernel, padding, stride and tile."""
    problem = problem_from_text(shape, op="conv", types="f16:f16:f16", tags={**NHWC, "wei": wei}, post_ops="relu")
    kernel = build_kernel(problem, parse_line(f"schedule=tma tile=m{m}n64k64 stages=2"), SM90)
    result = check_kernel(kernel)
    assert result.ok, (shape, result)


def test_a_strided_convolution_reads_a_strided_view():
    """The stride is in the tensor map (W and H strides of two pixels and two rows), not in addresses."""
    problem = problem_from_text("mb2ic128ih14oc64oh7kh1sh2ph0", op="conv", types="f16:f16:f16", tags=NHWC)
    kernel = build_kernel(problem, parse_line("schedule=tma tile=m128n64k64 stages=2"), SM90)
    a_map = _listing(kernel)["launch"]["tensor_maps"][0]
    assert (a_map["dims"], a_map["strides"], a_map["box"]) == ([128, 7, 7, 2], [512, 14 * 512, 196 * 256], [64, 8, 8, 2])


@pytest.mark.parametrize("shape, tags", [("mb2ic64ih8oc64oh4kh3sh2ph1", NHWC),           # strided 3x3 not yet
                                         ("mb2ic64ih8oc64oh6kh3dh1ph1", NHWC),           # dilation
                                         ("mb2ic64ih8oc64oh8kh1ph0", {**NHWC, "src": "abx"})])   # NCHW
def test_other_convolutions_are_refused_with_the_knob(shape, tags):
    problem = problem_from_text(shape, op="conv", types="f16:f16:f16", tags=tags)
    with pytest.raises(BuildError) as exc:
        build_kernel(problem, parse_line("schedule=tma tile=m128n64k64"), SM90)
    assert exc.value.knob in ("schedule", "src_layout")


@pytest.mark.parametrize("shape, tags, tile", [
    ("mb1ic3ih24oc64oh12kh7sh2ph3", NHWC, "m128"),               # conv1's kernel: 3 K blocks, an M tail
    ("mb1ic3ih24oc64oh12kh7sh2ph3", NHWC, "m64"),                # half the producer threads' rows
    ("mb2ic5ih9iw10oc64oh5ow5kh3kw3sh2sw2ph1pw1", {**NHWC, "wei": "acdb"}, "m128"),  # OHWI; runs of 15, 4 a block
    ("mb2ic6ih6iw7oc64oh6ow7kh3kw3ph1pw1", NHWC, "m128")])       # runs starting on even elements
def test_a_convolution_of_narrow_pixels_is_gathered(shape, tags, tile):
    """Pixels that are no 16-byte TMA row (3, 5 or 6 f16 channels) are gathered by the producer warps:
    each thread loads the 32-bit words of its A row's kernel rows (masked: zeros outside the input),
    shifts them into place in registers and stores the row as 16-byte chunks (``st.shared.v4``) into
    the swizzle, made visible to wgmma by ``fence.proxy.async`` before each warp arrives; the weights
    staged once. The registers the consumers take are those the producer gives back."""
    problem = problem_from_text(shape, op="conv", types="f16:f16:f16", tags=tags, post_ops="relu")
    kernel = build_kernel(problem, parse_line(f"schedule=tma_ws_cooperative tile={tile}n64k64 stages=2"), SM90)
    asm = _listing(kernel)["asm"]
    assert "cp.async.bulk.tensor" not in asm and "fence.proxy.async.shared::cta" in asm
    assert "mbarrier.init.shared::cta.b64" in asm and "ld.global.b32" in asm
    assert asm.count("st.shared.v4.b32") == 8           # a row's 8 chunks, once in the fill loop
    producer, consumer = (int(n) for n in re.findall(r"setmaxnreg\.(?:inc|dec)\.sync\.aligned\.u32 (\d+)", asm))
    threads = 128 * (1 + int(tile[1:]) // 64)
    assert 128 * producer + (threads - 128) * consumer <= threads * (min(255, 65536 // threads) & ~7)
    result = check_ptx(kernel, _listing(kernel))
    assert result["ok"], result


@pytest.mark.parametrize("shape, line", [
    ("mb1ic3ih24oc64oh12kh7sh2ph3", "schedule=tma tile=m128n64k64 stages=3"),
    ("mb2ic5ih6iw7oc64oh6ow7kh3kw3ph1pw1", "schedule=tma_ws_cooperative tile=m128n64k64 stages=2")])
def test_a_gathered_convolution_names_the_knob_it_cannot_honour(shape, line):
    """Only the warp-specialized schedule has producer warps to gather, and they read input rows as
    32-bit words: pixels of an odd count of 16-bit elements one step apart (ic5, sw1) are refused."""
    problem = problem_from_text(shape, op="conv", types="f16:f16:f16", tags=NHWC)
    with pytest.raises(BuildError) as exc:
        build_kernel(problem, parse_line(line), SM90)
    assert exc.value.knob == "schedule"
