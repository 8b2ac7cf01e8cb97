"""Deliberately broken builders are caught by the check: the matrix tests can fail.

Each mutation patches one piece of the builder or of the views (an
off-by-one mask, a wrong stride, a dropped condition, a missing barrier);
the same case passes unpatched, and fails the check (or trips the
interpreter's race detection) patched.
"""
from __future__ import annotations

from dataclasses import replace

import pytest

from builder_cases import problem
from kdd.core.builder import build_kernel
from kdd.core.builder import loads as loads_mod
from kdd.core.config.line import parse_config_line
from kdd.core.interp import InterpError
from kdd.core.interp.check import check_kernel
from kdd.core.ir.expr import land
from kdd.core.ir.funcs import Fence
from kdd.core.layout import view_conv
from kdd.core.problem import parse_shape


def padding_mask_off_by_one(mp):
    mp.setattr(view_conv, "_in_range", lambda x, size: land(x.ge(1), x.lt(size)))


def dilation_stride_wrong(mp):
    original = view_conv._tap
    mp.setattr(view_conv, "_tap", lambda base, axis, k, dil, sign: original(base, axis, k, dil + 1, sign))


def stride_condition_dropped(mp):
    original = view_conv._spatial

    def dropped(problem, kind, axis):
        index, mask = original(problem, kind, axis)
        if kind == "o":
            mask = view_conv._in_range(index, problem.shape.axis(axis).o)
        return index, mask
    mp.setattr(view_conv, "_spatial", dropped)


def tail_mask_off_by_one(mp):
    mp.setattr(loads_mod, "tail_masks",
               lambda view, index, bounded: [index[n].lt(view.dim(n).size - 1) for n in sorted(bounded)
                                             if n in view.dim_names])


def memory_stride_wrong(mp):
    """Addresses with the strides of the two innermost layout blocks exchanged."""
    original = loads_mod.offset_expr

    def swapped(layout, index, scale=1):
        b = list(layout.blocks)
        b[0], b[1] = replace(b[0], stride=b[1].stride), replace(b[1], stride=b[0].stride)
        return original(replace(layout, blocks=tuple(b)), index, scale)
    mp.setattr(loads_mod, "offset_expr", swapped)


def barrier_dropped(mp):
    from kdd.core.builder import build as build_mod
    mp.setattr(build_mod, "Barrier", lambda: Fence("slm"))


# (mutation, shape, prop, types, target, config line, how it shows: wrong values or an SLM race)
MUTATIONS = [
    (padding_mask_off_by_one, "ic8ih6oc16oh6kh3ph1", "fwd", "f32", "xehpg", "", "wrong"),
    (dilation_stride_wrong, "ic8ih9oc16oh5kh3dh1ph1", "bwd_w", "f16", "sm_90", "", "wrong"),
    (stride_condition_dropped, "mb1ic4ih9oc8oh4kh3sh2ph1", "bwd_d", "f32", "xehpg", "", "wrong"),
    (tail_mask_off_by_one, "ic16ih6oc17oh6kh3ph1", "fwd", "f32", "xehpg", "fma=mad simd=16 i=ow4oc16ic16 l=kh3kw3",
     "wrong"),
    (memory_stride_wrong, "m16n16k16", "fwd", "s8", "xehpg", "", "wrong"),
    (barrier_dropped, "ic16ih6oc16oh6kh3ph1", "fwd", "f32", "xehpg",
     "fma=mad simd=16 i=ow4oc16ic8 T=ow2oc1 l=ic2kh3kw3 s=x1", "race"),
]


def _build(shape, prop, types, target, line):
    p = problem(parse_shape(shape), prop, types)
    gd = p.gemm_dims()
    return build_kernel(p, parse_config_line(line, [n for r in "bmnk" for n, _ in getattr(gd, r)]), target)


@pytest.mark.parametrize("mutate, shape, prop, types, target, line, shows", MUTATIONS,
                         ids=[m[0].__name__ for m in MUTATIONS])
def test_mutation_is_caught(monkeypatch, mutate, shape, prop, types, target, line, shows):
    assert check_kernel(_build(shape, prop, types, target, line)).ok
    with monkeypatch.context() as mp:
        mutate(mp)
        broken = _build(shape, prop, types, target, line)
    if shows == "race":
        with pytest.raises(InterpError, match="SLM race"):
            check_kernel(broken)
        return
    result = check_kernel(broken)
    assert not result.ok, f"{mutate.__name__} went unnoticed: {result}"
