"""4-bit tensors in memory (benchdnn's u4/s4: two a byte, the even element of the innermost dim in the low
nibble): the check's packing against an independent oracle that pairs the tensor's elements in memory order
by hand, and back."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.interp.check import pack, unpack
from kdd.core.ir.types import s4, u4
from kdd.core.layout.layout import Layout


def _oracle_bytes(values: np.ndarray, order: tuple[int, ...]) -> bytes:
    """The bytes of ``values`` stored densely with dims ``order`` outer to inner: the memory sequence,
    taken two at a time, low nibble first (an odd count leaves the last high nibble zero)."""
    seq = [int(v) & 0xF for v in np.transpose(values, order).reshape(-1)]
    seq += [0] * (len(seq) % 2)
    return bytes(lo | hi << 4 for lo, hi in zip(seq[0::2], seq[1::2]))


@settings(max_examples=60, deadline=None)
@given(dims=st.lists(st.integers(1, 7), min_size=1, max_size=3), signed=st.booleans(), data=st.data())
def test_pack_pairs_elements_in_memory_order_low_nibble_first(dims, signed, data):
    t = s4 if signed else u4
    order = tuple(data.draw(st.permutations(range(len(dims)))))
    lo, hi = t.scalar.int_range()
    values = np.array(data.draw(st.lists(st.integers(lo, hi), min_size=int(np.prod(dims)),
                                         max_size=int(np.prod(dims))))).reshape(dims).astype(np.float64)
    layout = Layout.dense(t, tuple(dims), [(d, dims[d]) for d in order])
    buf = pack(values, t, layout)
    assert buf.tobytes() == _oracle_bytes(values, order)
    assert layout.size_bytes() == (int(np.prod(dims)) + 1) // 2
    np.testing.assert_array_equal(unpack(buf, t, layout, tuple(dims)), values)


def test_signed_nibbles_read_back_negative():
    layout = Layout.dense(s4, (4,), [(0, 4)])
    buf = np.array([0x8F, 0x71], dtype=np.uint8)  # -1, -8, 1, 7
    np.testing.assert_array_equal(unpack(buf, s4, layout, (4,)), [-1, -8, 1, 7])
    np.testing.assert_array_equal(unpack(buf, u4, Layout.dense(u4, (4,), [(0, 4)]), (4,)), [15, 8, 1, 7])
