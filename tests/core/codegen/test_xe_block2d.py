"""2D block loads in Xe assembly: the header the code generator writes and iga64's acceptance on Xe-HPC."""
from __future__ import annotations

import shutil

import pytest

from kdd.core.codegen import generate_asm

from xe_kernels import final

HAVE_IGA = shutil.which("iga64") is not None


def _listing(check: bool) -> dict:
    kernel, body, target = final("gemm_bert.kernel.toml")
    return generate_asm(kernel, body, target, check=check).to_dict()


def test_gemm_bert_loads_a_with_2d_blocks_and_their_headers():
    listing = _listing(check=False)
    texts = [ln["text"].split("//")[0].strip() for ln in listing["lines"]]
    loads = [i for i, t in enumerate(texts) if "load_block2d" in t]
    assert len(loads) == 4 and all(texts[i].startswith("(W) load_block2d.ugm.d16.a64 (1|M0) r")
                                   and ":16 [r" in texts[i] for i in loads)  # 2 blocks of 16 rows x 32 B: 16 GRFs
    shape = 15 | 15 << 8 | 1 << 16  # width 16, height 16, array 2, each less one
    header = texts[loads[0] - 7: loads[0]]
    assert any(f":ud {shape}:ud" in t for t in header)
    assert any(":ud 127:ud" in t for t in header)  # surface width, height, pitch (128 B, 128 rows, 128 B) less one


@pytest.mark.skipif(not HAVE_IGA, reason="iga64 (Debian libigc-tools) is not installed")
def test_iga64_assembles_the_2d_block_loads_on_xe_hpc():
    a = _listing(check=True)["assembler"]
    assert a["ok"] and a["messages"] == [] and a["round_trip"], a


@pytest.mark.skipif(not HAVE_IGA, reason="iga64 (Debian libigc-tools) is not installed")
@pytest.mark.parametrize("tile", ["m64n32k32", "m24n16k32", "m40n16k32"])
def test_a_row_groups_run_in_the_simulator_like_the_reference(tile):
    """gemm_bert's types and layouts with A's rows grouped for 16 x 16 x 2, 16 x 24 x 2 and 16 x 20 x 1
    blocks (M 40: a 64-row tile's last rows read zeros), assembled by iga64 and run in xesim."""
    from kdd.core.builder import build_kernel
    from kdd.core.config.line import parse_config_line
    from kdd.core.passes.kernel_pipeline import run_pipeline
    from kdd.core.problem import Problem, parse_data_types, parse_shape
    from kdd.core.targets import get_target
    from kdd.core.xesim.check import check_assembly

    p = Problem(op="gemm", prop="fwd", shape=parse_shape("2x40x64:2x64x32"), types=parse_data_types("bf16:bf16:f32"),
                tags={"src": "abc", "wei": "acb", "dst": "abc"}, post_ops=())
    dims = [n for r in "bmnk" for n, _ in getattr(p.gemm_dims(), r)]
    kernel = build_kernel(p, parse_config_line(f"fma=dpas simd=16 regs=256 i={tile}", dims), "xehpc")
    target = get_target("xehpc")
    listing = generate_asm(kernel, run_pipeline(kernel).final, target, check=True).to_dict()
    assert listing["assembler"]["ok"], listing["assembler"]
    result = check_assembly(kernel, listing, target.assembler, p)
    assert result["ok"] and "error" not in result, result
