"""Swizzled shared memory (:mod:`kdd.core.codegen.ptx.swizzle`): the map is a permutation that keeps
16-byte chunks whole, splits constants exactly, and serves every ldmatrix of the tiles it is chosen
for without bank conflicts; the GEMM example's PTX uses it and keeps a copy in flight at every
barrier of its main loop."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, strategies as st

from kdd.core.codegen.ptx.swizzle import shift_for, split, swizzle

from ptx_loops import example_ptx, main_loop

PITCHES = (32, 64, 128, 256, 512, 1024)


def _bank_groups(addresses) -> list[int]:
    """The 16-byte bank group (of the eight in a 128-byte line) each address falls in."""
    return [(a // 16) % 8 for a in addresses]


@given(st.sampled_from(PITCHES), st.integers(1, 64))
def test_the_map_permutes_a_buffer_keeping_chunks_whole(pitch, lines):
    s = shift_for({pitch}, 128 * lines)
    size = 128 * lines
    image = [swizzle(a, s) for a in range(size)]
    assert sorted(image) == list(range(size))
    assert all(image[a] - image[a & ~15] == a & 15 for a in range(size))


@given(st.integers(7, 10), st.integers(0, 1 << 20), st.integers(-(1 << 16), 1 << 16))
def test_a_constant_splits_into_a_swizzled_low_part_and_a_passed_through_high_part(s, base, k):
    low, high = split(k, s)
    assert low + high == k and 0 <= low < 1 << (s + 3) and high % (1 << (s + 3)) == 0
    if base + k >= 0:
        assert swizzle(base + k, s) == ((swizzle(base + low, s) + high) & 0xFFFFFFFF)


@pytest.mark.parametrize("pitch", PITCHES)
def test_ldmatrix_rows_of_a_swizzled_tile_fall_in_eight_bank_groups(pitch):
    s = shift_for({pitch}, pitch * 64)
    for row0 in range(0, 64, 8):
        for col in range(0, pitch, 16):
            rows = [(row0 + r) * pitch + col for r in range(8)]
            assert len(set(_bank_groups(swizzle(a, s) for a in rows))) == 8
            assert len(set(_bank_groups(rows))) < 8        # dense: the rows conflict


def test_no_swizzle_where_it_cannot_help_or_would_not_permute():
    assert shift_for(set(), 4096) is None                  # no ldmatrix read
    assert shift_for({16}, 4096) is None                   # rows contiguous: one line already
    assert shift_for({80}, 4096) is None                   # not a power of two
    assert shift_for({64, 256}, 4096) is None              # two pitches
    assert shift_for({64}, 4096 + 64) is None              # not whole lines
    assert shift_for({64}, 4096) == 7 and shift_for({256}, 4096) == 8


CLASSIC_GEMM = ('[problem]\nop = "gemm"\nshape = "m4096n4096k4096"\ntypes = "f16:f16:f32"\n\n'
                '[target]\nhw = "sm_90"\n')


def test_classic_gemm_swizzles_its_tiles_and_keeps_a_copy_in_flight_in_its_main_loop():
    """The classic schedule (mma.sync from ldmatrix, cp.async staging) of the GEMM the example was before it
    moved to schedule=tma_ws_cooperative."""
    from kdd.core.builder import build_kernel
    from kdd.core.codegen.ptx import generate_ptx
    from kdd.core.passes.kernel_pipeline import run_pipeline
    from kdd.core.spec import load_spec

    spec, _ = load_spec(CLASSIC_GEMM, "classic.kernel.toml")
    kernel = build_kernel(spec.problem, spec.config, spec.target)
    asm = generate_ptx(kernel, run_pipeline(kernel).final, spec.target, check=False).to_dict()["asm"]
    waits = re.findall(r"cp\.async\.wait_group (\d+);", main_loop(asm))
    assert waits and set(waits) == {"1"}          # the prologue commits a group per stage
    assert "xor.b32" in asm and ".x4.trans.shared.b16" in asm
