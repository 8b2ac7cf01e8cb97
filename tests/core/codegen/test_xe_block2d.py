"""2D block loads in Xe assembly: the header the code generator writes and iga64's acceptance on Xe-HPC."""
from __future__ import annotations

import re
import shutil

import pytest

from kdd.core.codegen import generate_asm
from kdd.core.engine import Engine, Source

from xe_kernels import final

HAVE_IGA = shutil.which("iga64") is not None


def _listing(check: bool) -> dict:
    kernel, body, target = final("gemm_bert.kernel.toml")
    return generate_asm(kernel, body, target, check=check).to_dict()


def test_gemm_bert_loads_a_with_2d_blocks_and_their_headers():
    """A's four 2D block loads take the kernel's two 2D header registers in turn (no message's address
    rewritten while the one before it reads its own); the surface's and the block's fields, the same for
    every load, are written once at the start, and between loads only the address and the block's x and y
    (dwords 0-1, 5 and 6) are."""
    listing = _listing(check=False)
    texts = [ln["text"].split("//")[0].strip() for ln in listing["lines"]]
    loads = [i for i, t in enumerate(texts) if "load_block2d" in t]
    assert len(loads) == 4 and all(texts[i].startswith("(W) load_block2d.ugm.d16.a64 (1|M0) r")
                                   and ":16 [r" in texts[i] for i in loads)  # 2 blocks of 16 rows x 32 B: 16 GRFs
    headers = [re.search(r"\[(r\d+):1\]", texts[i])[1] for i in loads]
    assert len(set(headers)) == 2 and all(a != b for a, b in zip(headers, headers[1:]))
    shape = 15 | 15 << 8 | 1 << 16  # width 16, height 16, array 2, each less one
    fixed = [t for t in texts if f":ud {shape}:ud" in t or ":ud 127:ud" in t]  # pitch 128 B less one
    assert len(fixed) == 4 and all(texts.index(t) < texts.index("LOOP_1:") for t in fixed)  # before the loop
    assert {t.split()[3].split(".")[0] for t in fixed} == set(headers)
    for a, b in zip(loads, loads[1:]):
        for t in texts[a + 1:b]:
            dst = re.match(r"\(W\) \w+ \(1\|M0\) (r\d+)\.(\d+)<1>:(\w+)", t)
            if dst and dst[1] in headers:
                assert (dst[2], dst[3]) in {("0", "uq"), ("5", "d"), ("6", "d")}, t


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


LINE_K_SPLIT = """[problem]
op = "conv"
prop = "fwd"
shape = "mb1ic896iw49oc32ow49kw1pw0"
types = "f16"
[target]
hw = "xehpc"
[config]
line = "fma=dpas simd=16 l=ic7 T=ic8 i=ic16oc16ow8 bufs=0"
"""


@pytest.mark.skipif(not HAVE_IGA, reason="iga64 (Debian libigc-tools) is not installed")
def test_a_counter_that_is_the_blocks_x_steps_in_the_header_field():
    """oneDNN's xehpc line ``mb1 ic896iw49 ... l=ic7 T=ic8``: A's 2D load reads its block x from the k
    counter, which lives in the held header's x field through the loop (dword 5, advanced by ``add`` in
    place): no ``mov`` copies it into the header in the loop (3 integer instructions a trip, were 4), and
    the assembly runs in xesim like the reference."""
    engine = Engine()
    out = engine.compile(Source(LINE_K_SPLIT, "line.kernel.toml"), emit="asm")["asm"]
    lines = [t.split("//")[0].strip() for t in out["asm"].splitlines()]
    start = lines.index("LOOP_1:")
    end = next(i for i in range(start, len(lines)) if "jmpi LOOP_1" in lines[i])
    loop = lines[start:end]
    hdr = re.search(r"load_block2d\.\S+ \(1\|M0\) r\d+:\d+ \[(r\d+):1\]", "\n".join(loop))[1]
    assert not [t for t in loop if re.match(rf"\(W\) mov \(1\|M0\) {hdr}\.", t)]
    assert re.search(rf"\(W\) add \(1\|M0\) {hdr}\.5<1>:d {hdr}\.5<0;1,0>:d 128:d", "\n".join(loop))
    assert out["mix"]["main_loop"]["per_iteration"]["int"] == 3
    assert engine.check(Source(LINE_K_SPLIT, "line.kernel.toml"))["ok"]
