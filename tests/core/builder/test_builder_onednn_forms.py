"""The forms oneDNN's shipped config lines use, each on a reduced shape, checked after every pass.

Each case is a kernel config whose line uses one feature: K slicing (``tg``
over K dims, partial C tiles summed through SLM), the empty tile ``x``, M per
thread not a multiple of the instruction's M (padded, masked), and a
reduction split across the grid into a narrow destination or under post-ops.
The config must read without errors, build, and compute the float64
reference's result after the build and after every pass (``kdd check
--bisect``).
"""
from __future__ import annotations

import pytest

from kdd.core.builder import build_kernel
from kdd.core.engine import InterpreterCheck
from kdd.core.passes.pass_bisect import bisect, render_bisect
from kdd.core.spec import Severity, load_spec


def _document(prop, shape, types, hw, line, post_ops=()):
    ops = ", ".join(f'"{o}"' for o in post_ops)
    return (f'[problem]\nop = "conv"\nprop = "{prop}"\nshape = "{shape}"\ntypes = "{types}"\npost_ops = [{ops}]\n'
            f'[target]\nhw = "{hw}"\n[config]\nline = "{line}"\n[check]\nshape = "{shape}"\n')


def _checked(text):
    spec, diagnostics = load_spec(text)
    errors = [d for d in diagnostics if d.severity == Severity.ERROR]
    assert spec is not None and not errors, [d.message for d in errors]
    kernel = build_kernel(spec.check, spec.user_config, spec.target)
    found = bisect(kernel, InterpreterCheck(spec.check, spec.check_seed, spec.check_tol))
    assert found.first_bad is None, render_bisect(found.to_dict())
    return kernel


K_SLICES = [
    # fwd: T=ic2 beside ow, SLM triple-buffered (the xehpg lines' form)
    ("fwd", "mb8ic64ih6oc32oh6kh3ph1", "f16", "xehpg", "fma=dpas simd=8 l=kh3kw3ic2 T=ic2ow2 i=mb8oc16ic16 bufs=3",
     ("relu",)),
    # fwd: only K in the group (T=ic4), straight from global memory
    ("fwd", "mb16ic128ih3oc32oh3kh1", "bf16", "xehpc", "fma=dpas simd=16 l=ic2 T=ic4 i=mb16oc16ic16 bufs=0", ()),
    # int8 fwd, K slices and an M x N group
    ("fwd", "mb8ic128ih4oc32oh4kh3ph1", "u8:s8:s32", "xehpg",
     "fma=dpas simd=8 l=kh3kw3 T=ic2oc2ow2 i=mb8oc8ic32 bufs=2", ()),
    # bwd_d: K is oc and the kernel dims
    ("bwd_d", "mb16ic32ih5oc32oh5kh3ph1", "f16", "xehpc", "fma=dpas simd=16 l=kh3kw3 T=oc2iw2 i=ic16mb16oc16 bufs=3",
     ()),
    # bwd_w: K is the minibatch and the output points
    ("bwd_w", "mb16ic32ih5oc32oh5kh3ph1", "f32", "xehpc", "fma=mad simd=16 l=oh5 T=mb2 i=ic16mb8oc16 bufs=0", ()),
]


@pytest.mark.parametrize("prop,shape,types,hw,line,post_ops", K_SLICES)
def test_k_slicing_sums_partial_tiles_through_slm(prop, shape, types, hw, line, post_ops):
    kernel = _checked(_document(prop, shape, types, hw, line, post_ops))
    assert kernel.tg[2] > 1 and "c_slices" in str(kernel.body)


PADDED_M = [
    ("fwd", "mb1ic32ih9oc32oh7kh3ph0", "f16", "xehpg", "fma=dpas simd=8 l=kh3kw3 T=ic2 i=ic16oc16ow7 bufs=0", 7),
    ("fwd", "mb2ic64ih6oc32oh6kh3ph1", "f16", "xehpg", "fma=dpas simd=8 l=ic4kh3kw3 T=ow2 i=ic16mb2oc16ow6", 12),
    ("bwd_d", "mb1ic8ih12iw64oc16oh4ow21kh3kw3sh3sw3ph0pw0", "bf16", "xehpg",
     "fma=dpas simd=8 l=kh3kw3 T=iw2 i=ic8iw30oc16", 30),
    ("fwd", "mb1ic64iw40oc32ow40kw1pw0", "u8:s8:u8", "xehpg", "fma=dpas simd=8 l=ic2 T=oc2ow2 i=ic32oc16ow14 bufs=0",
     14),
    ("fwd", "mb1ic64ih10oc32oh8kh3ph0", "f16", "xehpc", "fma=dpas simd=16 l=ic4kh3kw3 T=oc2ow2 i=ic16oc16ow7 bufs=3",
     7),
]


@pytest.mark.parametrize("prop,shape,types,hw,line,m", PADDED_M)
def test_m_per_thread_is_padded_to_the_instruction(prop, shape, types, hw, line, m):
    text = _document(prop, shape, types, hw, line)
    spec, diagnostics = load_spec(text)
    assert any(f"iter gives M={m} per thread, padded to" in d.message and d.severity == Severity.WARNING
               for d in diagnostics)
    _checked(text)
