"""Division by constants in the PTX lowering: the multiply-high form is exact over the bounds, and the
convolution's main loop divides by none of ptxas's slow paths."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from kdd.core.codegen.ptx.divide import magic

from ptx_loops import example_ptx, main_loop


@given(st.integers(1, 1 << 20), st.integers(0, (1 << 32) - 1), st.data())
def test_the_multiplier_divides_exactly_up_to_the_bound(d, hi, data):
    ms = magic(d, hi)
    if ms is None:                 # d = 1 (2^32 is no 32-bit multiplier), or a bound of 32 bits
        assert d == 1 or hi >= 1 << 31
        return
    m, s = ms
    assert 0 < m < 1 << 32 and 0 <= s < 32
    xs = {0, hi, max(0, hi - 1), hi - hi % d, data.draw(st.integers(0, hi))}
    for x in xs:
        assert (x * m) >> (32 + s) == x // d, (x, d, m, s)


def test_small_divisors_of_loop_indices_take_no_more_than_a_multiply_high():
    assert magic(3, 1000) is not None and magic(9, 1 << 20) is not None
    with pytest.raises(ValueError):
        magic(0, 10)


def test_conv_main_loop_divides_by_no_instruction():
    """The im2col indices of the classic 3x3 conv (``k / 9``, ``k / 3 % 3``) become multiply-highs."""
    body = main_loop(example_ptx("sm90_conv_classic", Path(__file__).resolve().parents[2] / "data"))
    assert not re.search(r"\b(div|rem)\.[su]32\b", body)
    assert "mul.hi.u32" in body
