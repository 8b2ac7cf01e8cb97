"""The byte view of a 4-bit tensor (core/builder/packed.py) against an oracle: every element of the
weights lives in the byte its pair index names in the byte view, at the nibble its parity names, for
plain and blocked layouts and for an index with even terms (a grouped convolution's channel)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.builder.errors import BuildError
from kdd.core.builder.packed import byte_access
from kdd.core.builder.tile import MatrixDim, TileAccess
from kdd.core.ir.expr import IntImm, var
from kdd.core.ir.types import s32, u4, u64
from kdd.core.layout.layout import parse_layout
from kdd.core.layout.view import DimKind, View, ViewDim

TAGS = ["ab", "ba", "AB2a4b", "BA4b2a"]


def _access(k: int, n: int, tag: str, extra: int = 0) -> TileAccess:
    """A ``k x n`` weight view (N index ``n + extra``, an even offset as a grouped conv's ``g * OC/g``)."""
    dims = (ViewDim("k", k, DimKind.K), ViewDim("n", n, DimKind.N))
    kv, nv = dims[0].var, dims[1].var
    index = nv + IntImm.make(s32, extra) if extra else nv
    layout = parse_layout(tag, (k, n + extra), u4)
    view = View("B", "wei", dims, (("k", k), ("n", n + extra)), (kv, index), (None, None), layout)
    roles = (MatrixDim(()), MatrixDim((("k", k),)), MatrixDim((("n", n),)))
    return TileAccess(view, var("wei", u64), "global", roles, {"k": IntImm.make(s32, 0), "n": IntImm.make(s32, 0)})


@settings(max_examples=40, deadline=None)
@given(k=st.integers(1, 6).map(lambda x: 2 * x), n=st.integers(1, 6).map(lambda x: 4 * x),
       tag=st.sampled_from(TAGS), extra=st.sampled_from([0, 4]))
def test_every_element_sits_in_the_byte_and_nibble_its_pair_names(k, n, tag, extra):
    access = _access(k, n, tag, extra)
    packed = byte_access(access, "wei")
    layout, bview = access.view.layout, packed.access.view
    index, _ = access.view.table()                      # element (k, n) -> tensor index
    bindex, _ = bview.table()                           # pair (k', n') -> byte tensor index
    inner = next(b.dim for b in layout.blocks if b.stride == 1 and b.size > 1)
    walker = "k" if inner == 0 else "n"
    role = 1 if walker == "k" else 2
    assert packed.role == role
    element = layout.offsets_of(index.reshape(-1, 2)).reshape(k, n)
    for i in range(k):
        for j in range(n):
            pi, pj = (i // 2, j) if walker == "k" else (i, j // 2)
            byte = bview.layout.offsets_of(bindex[pi, pj][None, :])[0]
            assert element[i, j] // 2 == byte                 # the pair's byte
            assert element[i, j] % 2 == (i if walker == "k" else j) % 2   # low nibble: the even element


def test_odd_extents_and_odd_terms_are_refused_naming_why():
    odd_tile = replace(_access(4, 6, "ab"), roles=(MatrixDim(()), MatrixDim((("k", 4),)), MatrixDim((("n", 3),))))
    with pytest.raises(BuildError, match=r"even sizes \(tile 3\)") as err:
        byte_access(odd_tile, "wei")
    assert err.value.knob == "iter"
    with pytest.raises(BuildError, match="plus even terms"):
        byte_access(_access(4, 8, "ab", 3), "wei")
