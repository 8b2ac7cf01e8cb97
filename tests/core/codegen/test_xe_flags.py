"""Flags for SIMD32 instructions: a flag subregister holds 16 channels, so an instruction over 32 takes a
whole flag register (``fN.0``), and a whole register is never one the neighbouring flags live in."""
from hypothesis import given
from hypothesis import strategies as st

from kdd.core.codegen.xe.lower import FlagPool
from kdd.core.targets import get_target


@given(st.lists(st.sampled_from([1, 8, 16, 32]), min_size=1, max_size=40))
def test_wide_flags_are_whole_registers_apart_from_their_neighbours(widths):
    pool = FlagPool(get_target("xehpc").xe.flags)
    taken = [(pool.take(n), n) for n in widths]
    for i, (flag, n) in enumerate(taken):
        reg = flag.split(".")[0]
        if n > 16:
            assert flag.endswith(".0")
        for j in (i - 1, i + 1):
            if 0 <= j < len(taken) and (n > 16 or taken[j][1] > 16):
                assert taken[j][0].split(".")[0] != reg, taken
        if i:
            assert taken[i - 1][0] != flag
