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

import shutil

import pytest

from kdd.core.builder import build_kernel
from kdd.core.engine import InterpreterCheck
from kdd.core.ir.funcs import Mad
from kdd.core.ir.visitor import walk
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


@pytest.mark.slow
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


@pytest.mark.slow
@pytest.mark.parametrize("prop,shape,types,hw,line,m", PADDED_M)
def test_m_per_thread_is_padded_to_the_instruction(prop, shape, types, hw, line, m):
    text = _document(prop, shape, types, hw, line)
    spec, diagnostics = load_spec(text)
    assert any(f"iter gives M={m} per thread, padded to" in d.message and d.severity == Severity.WARNING
               for d in diagnostics)
    _checked(text)


DEPTHWISE = [
    # xehpc: i=g16kw3ow8's form, T=ow2, lanes over 16 groups
    ("mb1g32ic32ih4oc32oh4kh3ph1", "f16", "xehpc", "fma=mad simd=16 l=kh3 T=ow2 i=g16kw3ow2 bufs=0"),
    # xehpg: i=g64kw3mb8's form (M is the minibatch, strided ow), 16 groups as two SIMD8 chunks
    ("mb4g16ic16ih6oc16oh3kh3sh2ph0", "bf16", "xehpg", "fma=mad simd=8 l=kh3 T=x i=g16kw3mb4 bufs=0"),
    # g beside padding: two thread tiles of groups, ow tail
    ("mb1g16ic16iw7oc16ow7kw3pw1", "f16", "xehpg", "fma=mad simd=8 l=x T=ow2 i=g8kw3ow4 bufs=0"),
    # the xehpg lines' T=ow4 with SLM: the weights' lone f16 elements stored one lane at a time
    ("mb1g16ic16iw32oc16ow32kw3pw1", "f16", "xehpg", "fma=mad simd=8 l=x T=ow4 i=g8kw3ow8"),
]


@pytest.mark.parametrize("shape,types,hw,line", DEPTHWISE)
def test_depthwise_mad_runs_its_lanes_over_groups(shape, types, hw, line):
    kernel = _checked(_document("fwd", shape, types, hw, line))
    mads = {str(c.func): c.func for c in walk(kernel.body) if isinstance(getattr(c, "func", None), Mad)}
    # every mad reads A as a vector (one group per lane), none broadcasts it
    assert mads and all(f.src2_stride == f.src2_type.size for f in mads.values()), mads


def test_depthwise_needs_whole_simd_chunks_of_groups():
    spec, diagnostics = load_spec(_document("fwd", "mb1g16ic16iw8oc16ow8kw3pw1", "f16", "xehpg",
                                            "fma=mad simd=8 l=x T=x i=g4kw3ow8 bufs=0"))
    assert any("iter gives N=1 per thread, not a multiple of mad's N=8" in d.message
               and d.severity == Severity.ERROR for d in diagnostics), [d.message for d in diagnostics]


# oneDNN's f64 lines for xehpc run SIMD8 mad (8 doubles fill one 64-byte GRF): scattered qword loads
# (d64) where the taps are strided, and qword atomics where bwd_w splits K across the grid.
F64_SIMD8 = [
    ("fwd", "mb16ic2ih10oc8oh8kh3ph0", "fma=mad simd=8 l=kh3 T=x i=ic2kw3oc8ow8 bufs=0", "load.ugm.d64.a64"),
    ("bwd_d", "mb16ic8ih10oc10oh8kh3ph0", "fma=mad simd=8 l=kh3kw3 T=oc2 i=ic8mb16oc8 bufs=0", "mad (8|M0)"),
    ("bwd_w", "mb16ic2ih10oc8oh8kh3ph0", "fma=mad simd=8 l=oh4ow8 T=x i=ic2kw3mb8oc8 bufs=0",
     "atomic_fadd.ugm.d64.a64"),
]


@pytest.mark.slow
@pytest.mark.parametrize("prop,shape,line,form", F64_SIMD8)
def test_simd8_f64_lines_of_xehpc_check_in_the_interpreter_and_the_simulator(prop, shape, line, form):
    kernel = _assembles_and_checks(_document(prop, shape, "f64", "xehpc", line), form)
    assert kernel.simd == 8


def test_a_block_no_lsc_message_holds_is_moved_in_legal_pieces():
    """oneDNN's i=kw10mb10oc16 reads ten f32 taps (40 bytes) in one block: a d32x8 and a d32x2 message."""
    _assembles_and_checks(_document("fwd", "mb12ic1iw52oc10ow9kw10sw5pw0", "f32", "xehpc",
                                    "fma=mad simd=16 l=x T=x i=kw10mb10oc16 bufs=0"), "d32x2t")


def _assembles_and_checks(text, form):
    """The kernel of ``text`` after checking every pass; its assembly holds ``form`` and (with iga64)
    runs right in the simulator."""
    from kdd.core.engine import Engine
    from kdd.core.engine.engine import Source

    kernel = _checked(text)
    engine = Engine()
    listing = engine.compile(Source(text), emit="asm")
    assert listing["ok"] and form in listing["asm"]["asm"], listing.get("error")
    if shutil.which("iga64") is not None:
        assert engine.check(Source(text), asm=True)["ok"]
    return kernel


# Shipped oneDNN lines at their production sizes, with the registers their tiles need at least:
# C (accumulators, M padded to the instruction), A and B per thread, by hand.
PRODUCTION = [
    # xehpg f16 fwd, l=x and K slices T=ic8: C 16x16 f32, A 16x16 f16, B 16x16 f16 in 32-byte GRFs
    ("xehpg dpas fwd x16:x16:any mb1 ic128iw32oc512ow32kw1pw0 simd=8 l=x T=ic8 i=ic16oc16ow16 bufs=0",
     16 * 16 * 4 // 32 + 16 * 16 * 2 // 32 + 16 * 16 * 2 // 32),
    # xehpc f16 fwd, M=ow7 padded to 8: C 8x32 f32, A 8x16, B 16x32 f16 in 64-byte GRFs
    ("xehpc dpas fwd x16:x16:any mb1 ic1024iw196oc2048ow196kw1pw0 simd=16 l=ic64 T=oc4ow4 i=ic16oc32ow7 bufs=3",
     8 * 32 * 4 // 64 + 8 * 16 * 2 // 64 + 16 * 32 * 2 // 64),
    # xehpc f16 bwd_d 3D, T=x: C mb16 x ic32, K oc32
    ("xehpc dpas bwd_d any:x16:x16 mb16 ic32id17ih33iw33oc32od17oh33ow33kd3kh3kw3pd1ph1pw1 simd=16 l=kd3kh3kw3 T=x "
     "i=ic32mb16oc32 bufs=3", 16 * 32 * 4 // 64 + 16 * 32 * 2 // 64 + 32 * 32 * 2 // 64),
    # xehpg int8 fwd, K slices T=ic4: C 8x16 s32, A 8x32 u8, B 32x16 s8
    ("xehpg dpas fwd x8:x8:any mb1 ic128ih32oc64oh32kh3ph1 simd=8 l=kh3kw3 T=ic4 i=ic32oc16ow8 bufs=0",
     8 * 16 * 4 // 32 + 8 * 32 // 32 + 32 * 16 // 32),
]


@pytest.mark.parametrize("line,least", PRODUCTION)
def test_production_sized_lines_fit_the_allocator(line, least):
    from kdd.core.engine import Engine
    from kdd.core.engine.engine import Source
    from kdd.core.problem.lookup_entry import LookupEntry

    entry = LookupEntry.parse(line)
    out = Engine().compile(Source(entry.document(entry.variants()[0])), emit="stats")
    assert out["ok"], out.get("error")
    regs = out["stats"]["registers"]
    assert out["stats"]["codegen"]["ok"], out["stats"]["codegen"]
    assert least <= regs["allocated"] <= regs["budget"], regs
