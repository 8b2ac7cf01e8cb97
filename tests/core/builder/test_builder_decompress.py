"""Weight decompression in the builder (seed 002): every mode checks against the float64 reference in the
interpreter, for weights stored N-contiguous (``ab``) and K-contiguous (``ba``, attention keys); the modes
that round more say so and are measurably less accurate; what cannot be generated names its knob."""
from __future__ import annotations

import pytest

from kdd.core.builder import BuildError, build_kernel
from kdd.core.config.line import parse_config_line
from kdd.core.interp.check import CAVEATS, check_kernel
from kdd.core.problem import Problem, parse_data_types, parse_shape
from kdd.core.problem.decompression import parse_decompression

SHAPE = "m16n32k64"


def _problem(wei="u8", zp="u8", tag="ab", group=32, shape=SHAPE):
    d = parse_decompression(f"wei:per_ocic:f16:{group}x1", f"wei:per_ocic:{zp}:{group}x1" if zp else None,
                            "f16:true")
    return Problem("gemm", "fwd", parse_shape(shape, "gemm"), parse_data_types(f"f16:{wei}:f16"),
                   tags={"wei": tag}, decompression=d)


def _kernel(problem, line, target="xe2"):
    dims = [n for r in "bmnk" for n, _ in getattr(problem.gemm_dims(), r)]
    return build_kernel(problem, parse_config_line(line, dims), target)


@pytest.mark.parametrize("mode", ["cvt.16", "cvt.32", "mad.32", "denorm.32", "denorm_sub.32"])
@pytest.mark.parametrize("tag", ["ab", "ba"])
def test_every_mode_checks_in_the_interpreter(mode, tag):
    kernel = _kernel(_problem(tag=tag), f"fma=dpas simd=16 i=m16n32k32 decompress={mode}")
    result = check_kernel(kernel)
    assert result.ok, result
    assert (result.tol_reason is not None) == (mode.split(".")[0] in CAVEATS)


@pytest.mark.parametrize("wei,zp,mode", [("s8", "s8", "cvt"), ("s8", None, "mad"), ("u8", None, "denorm_sub")])
def test_signed_weights_and_no_zero_points(wei, zp, mode):
    kernel = _kernel(_problem(wei=wei, zp=zp), f"fma=dpas simd=16 i=m16n32k32 decompress={mode}")
    assert check_kernel(kernel).ok


@pytest.mark.parametrize("wei,zp,tag,mode", [
    ("u4", "u4", "ab", "cvt.32"), ("u4", "u8", "ba", "mad.32"), ("u4", "u4", "ba", "denorm.32"),
    ("u4", None, "ab", "denorm_sub.16"), ("s4", "s4", "ba", "cvt.16"), ("s4", "s8", "ab", "mad.32"),
])
def test_4_bit_weights_unpack_in_registers_and_check(wei, zp, tag, mode):
    """u4/s4 weights (and zero points) load as their bytes - half the raw registers of 8-bit ones - and
    unpack into B with shifts and masks; the interpreter's result matches the float64 reference, which
    reads the logical values the check packed (tests/core/interp/test_interp_packed.py)."""
    kernel = _kernel(_problem(wei=wei, zp=zp, tag=tag), f"fma=dpas simd=16 i=m16n32k32 decompress={mode}")
    assert check_kernel(kernel).ok
    byte_kernel = _kernel(_problem(wei=wei.replace("4", "8"), zp=zp, tag=tag), f"fma=dpas simd=16 i=m16n32k32 "
                          f"decompress={mode}")
    assert _alloc_bytes(kernel, "b_raw") * 2 == _alloc_bytes(byte_kernel, "b_raw")


def _alloc_bytes(kernel_or_ir, name: str) -> int:
    from kdd.core.ir.stmt import Alloc
    from kdd.core.ir.visitor import post_order
    ir = getattr(kernel_or_ir, "body", kernel_or_ir)
    return next(n.size for n in post_order(ir) if isinstance(n, Alloc) and n.buf.name == name)


def test_4_bit_weights_need_an_even_packed_dim():
    problem = _problem(wei="u4", zp=None, shape="m16n31k64")
    with pytest.raises(BuildError, match="pair along n"):
        _kernel(problem, "fma=dpas simd=16 i=m16n32k32")


def _conv(shape, wei="s8", zp="s8"):
    d = parse_decompression("wei:per_oc:f16", f"wei:per_oc:{zp}" if zp else None, "f16:true")
    return Problem("conv", "fwd", parse_shape(shape, "conv"), parse_data_types(f"f16:{wei}:f16"), decompression=d)


@pytest.mark.parametrize("shape,wei,zp,line", [
    ("mb2ic32ih6oc32oh6kh3ph1", "u8", "u8", "fma=dpas simd=16 i=mb1ow8oc32ic32 l=kh3kw3 decompress=mad.32"),
    ("g2mb1ic32ih5oc48oh5kh3ph1", "s8", None, "fma=dpas simd=16 i=ow8oc16ic16 l=kh3kw3 decompress=cvt"),
    ("mb1ic16ih7oc60oh7kh1ph0", "u4", "u4", "fma=dpas simd=16 i=ow8oc32ic16 decompress=denorm_sub"),
])
def test_convolution_weights_decompress_per_output_channel(shape, wei, zp, line):
    """A forward convolution's int weights with benchdnn's conv attributes (wei:per_oc scales and zero
    points, f16 fpmath): one scale row per output channel over every group (g * OC/g + oc), OC tails
    (60 against 32) and 4-bit weights included, checked in the interpreter against the float64 conv."""
    problem = _conv(shape, wei, zp)
    dims = [n for r in "bmnk" for n, _ in getattr(problem.gemm_dims(), r)]
    result = check_kernel(build_kernel(problem, parse_config_line(line, dims), "xe2"))
    assert result.ok, result


def test_other_targets_layouts_decompress_too():
    # Xe-HPG's dpas is SIMD8: B's VNNI rows hold 8 columns, the pair buffers follow its layout
    kernel = _kernel(_problem(tag="ba"), "fma=dpas simd=8 i=m16n16k32 decompress=mad", "xehpg")
    assert check_kernel(kernel).ok


def test_the_precomputed_zero_point_term_costs_accuracy():
    """The seed's TRY2.1 note: zp x scale rounded to f16 before the mad loses what the exact modes keep."""
    errs = {mode: check_kernel(_kernel(_problem(group=64, shape="m32n64k64"),
                                       f"fma=dpas simd=16 i=m16n32k32 decompress={mode}")).rel_err
            for mode in ("cvt", "denorm_sub", "mad", "denorm")}
    assert max(errs["cvt"], errs["denorm_sub"]) < min(errs["mad"], errs["denorm"]), errs


@pytest.mark.parametrize("problem,line,knob", [
    (_problem(wei="s8", zp="s8"), "decompress=denorm", "decompress"),
    (_problem(group=16), "i=m16n32k32", "iter"),
    (_problem(), "i=m16n32k32 T=m4n1 s=x1", "slm"),
])
def test_what_cannot_be_generated_names_its_knob(problem, line, knob):
    with pytest.raises(BuildError) as err:
        _kernel(problem, "fma=dpas simd=16 " + line)
    assert err.value.knob == knob


def test_sm90_refuses_decompression_naming_why():
    with pytest.raises(BuildError, match="generated for Xe targets") as err:
        _kernel(_problem(), "fma=mma", "sm_90")
    assert err.value.knob == "decompress"


def test_decompress_on_plain_weights_is_a_warning():
    from kdd.core.config.validate import validate_config
    from kdd.core.config.defaults import resolve_config
    from kdd.core.targets import get_target

    plain = Problem("gemm", "fwd", parse_shape(SHAPE, "gemm"), parse_data_types("f16"))
    dims = ["m", "n", "k"]
    config = resolve_config(plain, get_target("xe2"), parse_config_line("decompress=mad", dims))
    issues = [i for i in validate_config(plain, config, get_target("xe2")) if i.knob == "decompress"]
    assert [(i.severity, "has no effect" in i.message) for i in issues] == [("warning", True)]


@pytest.mark.parametrize("tag", ["ab", "ba"])
def test_tails_and_groups_of_several_columns(tag):
    """M and N tails (20 x 40 against 16 x 32 tiles), three K groups, groups of 4 columns."""
    d = parse_decompression("wei:per_ocic:f16:32x4", "wei:per_ocic:u8:32x4", "f16:true")
    problem = Problem("gemm", "fwd", parse_shape("m20n40k96", "gemm"), parse_data_types("f16:u8:f16"),
                      tags={"wei": tag}, decompression=d)
    assert check_kernel(_kernel(problem, "fma=dpas simd=16 i=m16n32k32 decompress=mad.32")).ok


def test_tuning_space_tries_the_logs_decompression_steps():
    from kdd.core.config.search import search_space
    from kdd.core.targets import get_target

    modes = [c.decompress for c in search_space(_problem(shape="m512n512k128", group=128), get_target("xe2"))]
    assert [str(m) for m in modes if m is not None and m.lanes == 32] == \
        ["cvt.32", "mad.32", "denorm.32", "denorm_sub.32"]
    signed = search_space(_problem(wei="s8", zp="s8", shape="m512n512k128", group=128), get_target("xe2"))
    assert {c.decompress.mode for c in signed if c.decompress is not None and c.decompress.lanes} == {"cvt", "mad"}


@pytest.mark.parametrize("text,message,span", [
    ("mad.7", "lanes '7'", (4, 5)), ("madd", "unknown decompression 'madd'", (0, 4)), ("cvt.", "lanes ''", (4, 4)),
    ("cvt.x2.16", "lanes 'x2'", (4, 9)), ("mad.16.x3", "lanes 'x3'", (7, 9)),
])
def test_the_knob_rejects_bad_values_with_their_span(text, message, span):
    from kdd.core.config.decompress import Decompress
    from kdd.core.config.errors import ConfigError
    with pytest.raises(ConfigError, match=message) as err:
        Decompress.parse(text)
    assert (err.value.start, err.value.end) == span
    assert str(Decompress.parse("denorm_sub.32")) == "denorm_sub.32" and Decompress.parse("mad").lanes is None
    assert Decompress.parse("denorm_sub.32.x2") == Decompress("denorm_sub", 32, 2)
    assert str(Decompress.parse("cvt.x2")) == "cvt.x2"


@pytest.mark.parametrize("line", ["s=x0 l=k4", "s=x0 l=k4 u=k2", "T=m2n1 s=x3.a l=k4 P=u"])
def test_ping_pong_loads_each_raw_tile_an_iteration_ahead(line):
    """decompress=...x2 (seed TRY3.1): two raw tiles in registers, the next iteration's bytes loaded while
    the current ones convert - in a plain K loop, an unrolled one and SLM buffering's flat loop; the
    interpreter agrees with the reference, and the raw buffer is twice the plain one's."""
    from kdd.core.passes.kernel_pipeline import run_pipeline, with_body

    problem = _problem(tag="ba", group=128, shape="m32n32k128")
    base = f"fma=dpas simd=16 i=m16n32k32 {line} decompress=denorm_sub.32"
    plain, pp = _kernel(problem, base), _kernel(problem, base + ".x2")
    trace = run_pipeline(pp)
    assert _alloc_bytes(trace.after("buffering"), "b_raw") == \
        2 * _alloc_bytes(run_pipeline(plain).after("buffering"), "b_raw")
    assert check_kernel(with_body(pp, trace.final)).ok
