"""Useful multiply lanes measured on the built kernel: the IR's count (kdd.core.passes.lane_use) is the
config's figure (kdd.core.config.lanes), `kdd compile --emit stats` reports it, and the depthwise defaults
that keep half their lanes useful pass `kdd check` on their assembly in the simulator."""
from __future__ import annotations

from math import prod

import pytest
from builder_cases import conv_shapes, gemm_shapes, problem

from kdd.core.builder import build_kernel
from kdd.core.config import KernelConfig, parse_config_line, resolve_config
from kdd.core.config.lanes import lane_use
from kdd.core.engine import Engine, Source
from kdd.core.passes.lane_use import issued_macs
from kdd.core.problem import problem_from_text
from kdd.core.targets import TARGETS


def _issued_by_the_ir(p, config, hw):
    kernel = build_kernel(p, config, hw)
    return issued_macs(kernel.body) * prod(kernel.grid) * prod(kernel.tg)


def _sample():
    conv, gemm = conv_shapes(), gemm_shapes()
    cases = [(conv[i * 7 % len(conv)], prop, types, hw, fma)
             for i, (prop, types, hw, fma) in enumerate([
                 ("fwd", "f16", "xehpg", None), ("fwd", "f32", "xehpc", None), ("bwd_d", "f16", "xehpg", None),
                 ("bwd_w", "f32", "xehpg", None), ("fwd", "s8", "xehpg", None), ("fwd", "f16", "sm_90", None),
                 ("fwd", "f16", "xehpg", "mad"), ("fwd", "f32", "sm_90", "fma")])]
    cases += [(gemm[i * 5 % len(gemm)], "fwd", types, hw, None)
              for i, (types, hw) in enumerate([("f16", "xehpg"), ("f32", "xehpc"), ("bf16", "sm_90")])]
    dw = problem_from_text("mb2g32ic32oc32ih6oh6kh3ph1").shape
    cases += [(dw, "fwd", "f16", "xehpg", None), (dw, "fwd", "f16", "xehpg", "dpas"), (dw, "fwd", "f32", "xehpc", None)]
    return [pytest.param(*c, id=f"{c[1]}-{c[2]}-{c[3]}-{c[4]}-{c[0].canonical()}") for c in cases]


@pytest.mark.parametrize("shape,prop,types,hw,fma", _sample())
def test_the_ir_issues_what_the_config_figure_says(shape, prop, types, hw, fma):
    p = problem(shape, prop, types)
    config = resolve_config(p, TARGETS[hw], KernelConfig(fma=fma))
    use = lane_use(p, config, TARGETS[hw])
    assert _issued_by_the_ir(p, config, hw) == use.issued, (config.line(), use.reason())


DEPTHWISE_DOC = """[problem]
op = "conv"
prop = "fwd"
shape = "{shape}"
types = "f16:f16:f16"

[target]
hw = "{hw}"
{config}"""


def test_stats_report_the_lanes_of_the_depthwise_default():
    shape = "mb4g32ic32oc32ih16oh16kh3ph1"
    result = Engine().compile(Source(DEPTHWISE_DOC.format(shape=shape, hw="xehpg", config="")), "stats")
    lanes = result["stats"]["lanes"]
    assert lanes["source"] == "IR" and lanes["fraction"] == 1.0 and lanes["config"]["fma"] == "mad"
    assert lanes["useful"] == lanes["issued"] == 4 * 32 * 16 * 16 * 9
    assert not [d for d in result["diagnostics"] if "multiply lanes" in d["message"]]


def test_dpas_on_depthwise_issues_the_waste_the_issue_measured():
    """c0f6f57's defaults for the layer: N 1 -> 8, kw 3 -> 16."""
    p = problem_from_text("mb32g32ic32oc32ih112oh112kh3ph1", types="f16")
    config = resolve_config(p, TARGETS["xehpg"], parse_config_line("fma=dpas simd=8 l=kh3 T=ow4 i=mb32ow2oc8kw16"))
    useful = 32 * 32 * 112 * 112 * 9
    assert _issued_by_the_ir(p, config, "xehpg") == useful * 8 * 16 // 3  # N 1 -> 8 and kw 3 -> 16: 2.3 % useful


# benchdnn's depthwise lines (shapes_basic: the 1D, 2D and 3D depthwise convolutions and their g17 tails) and
# a MobileNet-sized depthwise layer; kdd check reduces the large one and runs the assembly in xesim (sm_90: the
# PTX in ptxsim).
CHECKED = [("g16ic16oc16_ih5oh5kh3ph1", "xehpg"), ("g17ic17oc17_ih8oh4kh3ph1sh2", "xehpc"),
           ("g17ic17oc17_id5od5kd3pd1", "xehpg"), ("mb32g32ic32oc32ih112oh112kh3ph1", "xehpc"),
           ("g17ic17oc17_ih8oh4kh3ph1sh2", "sm_90")]


@pytest.mark.parametrize("shape,hw", CHECKED)
def test_depthwise_defaults_pass_the_check_on_their_assembly(shape, hw):
    result = Engine().check(Source(DEPTHWISE_DOC.format(shape=shape, hw=hw, config="")))
    assert result["verdict"] == "ok" and result["artifact"] == ("ptx" if hw == "sm_90" else "asm"), result
