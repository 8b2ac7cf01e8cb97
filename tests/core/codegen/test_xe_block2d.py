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
    assert loads and all(texts[i].startswith("(W) load_block2d.ugm.d16.a64 (1|M0) r") and ":8 [r" in texts[i]
                         for i in loads)  # 2 blocks of 8 rows x 32 bytes: 8 GRFs of 64 bytes
    shape = 15 | 7 << 8 | 1 << 16  # width 16, height 8, array 2, each less one
    header = texts[loads[0] - 7: loads[0]]
    assert any(f":ud {shape}:ud" in t for t in header)
    assert any(":ud 127:ud" in t for t in header)  # surface width, height, pitch (128 B, 128 rows, 128 B) less one


@pytest.mark.skipif(not HAVE_IGA, reason="iga64 (Debian libigc-tools) is not installed")
def test_iga64_assembles_the_2d_block_loads_on_xe_hpc():
    a = _listing(check=True)["assembler"]
    assert a["ok"] and a["messages"] == [] and a["round_trip"], a
