"""GEMM descriptors: benchdnn matmul form, kdd's m/n/k form, errors."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.problem import GemmShape, ProblemError, parse_gemm_shape


@pytest.mark.parametrize("text, batch, m, n, k, name", [
    ("10x30:30x20", (), 10, 20, 30, None),
    ('12x128x64:12x64x128_n"encoder:QK_matmul:12"', (12,), 128, 128, 64, "encoder:QK_matmul:12"),
    ("56x16x384x384:56x16x384x64", (56, 16), 384, 64, 384, None),
    ("4x8:8x2:4x2", (), 4, 2, 8, None),
    ("m4096n1024k512", (), 4096, 1024, 512, None),
    ("b2x3_k5_m7_n11nproj", (2, 3), 7, 11, 5, "proj"),
    ('m1n2k3_n"a b"', (), 1, 2, 3, "a b"),
])
def test_both_spellings(text, batch, m, n, k, name):
    s = parse_gemm_shape(text)
    assert (s.batch, s.m, s.n, s.k, s.name) == (batch, m, n, k, name)
    assert parse_gemm_shape(s.canonical()) == s


def test_canonical_is_the_benchdnn_form():
    assert parse_gemm_shape("b12m128n64k32").canonical() == "12x128x32:12x32x64"
    assert parse_gemm_shape('m2n3k4n"x"').canonical() == '2x4:4x3_n"x"'
    assert parse_gemm_shape("1x1:1x1").to_dict() == {
        "batch": [], "m": 1, "n": 1, "k": 1, "name": None, "canonical": "1x1:1x1"}


@pytest.mark.parametrize("text, span, words", [
    ("10x30:31x20", "31x20", "K mismatch"),
    ("2x10x30:3x30x20", "3x30x20", "batch dims"),
    ("10x30:2x30x20", "2x30x20", "same number"),
    ("10x0:0x20", "10x0", "positive"),
    ("10x30", "10x30", "expected ':'"),
    ("10x30:", ":", "expected weights dims"),
    ("10x30:y", "y", "expected weights dims"),
    ("4x8:8x2:4x3", "4x3", "should be '4x2'"),
    ("4x8:8x2 junk", " junk", "only a name"),
    ("m4n4k4q2", "q2", "unknown GEMM entry"),
    ("m4m5n4k4", "m5", "given twice"),
    ("m0n4k4", "m0", "positive"),
])
def test_errors_name_the_token(text, span, words):
    with pytest.raises(ProblemError) as info:
        parse_gemm_shape(text)
    e = info.value
    assert text[e.start:e.end] == span
    assert words in e.message


def test_missing_sizes_are_listed():
    with pytest.raises(ProblemError, match="lacks n, k"):
        parse_gemm_shape("m4")


def test_construction_checks_sizes():
    with pytest.raises(ValueError, match="batch\\[1\\]"):
        GemmShape((2, 0), 1, 1, 1)
    assert GemmShape([2, 3], 1, 1, 1).batch == (2, 3)


sizes = st.integers(1, 5000)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 64), max_size=3), sizes, sizes, sizes,
       st.none() | st.text("abc:*_-. 019", min_size=1, max_size=8))
def test_round_trip_through_both_forms(batch, m, n, k, name):
    shape = GemmShape(tuple(batch), m, n, k, name)
    assert parse_gemm_shape(shape.canonical()) == shape
    b = f"b{'x'.join(map(str, batch))}_" if batch else ""
    named = f'n"{name}"' if name else ""
    assert parse_gemm_shape(f"{b}m{m}n{n}k{k}{named}") == shape
