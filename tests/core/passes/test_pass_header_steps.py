"""Global message headers stepped from their last value: ``hdr = base + k + 768`` stored again as
``hdr = hdr + 384`` where that is exact (the same terms, a positive step, an unmasked message between)."""
from passes_oracle import effects

from kdd.core.ir import Alloc, BoolImm, For, FuncCall, Let, Load, MemKind, Store, seq, var, walk
from kdd.core.ir.expr import Binary, Broadcast, IntImm, Op, Ramp
from kdd.core.ir.funcs import Send, SendKind, SendOp
from kdd.core.ir.types import f16, s32, u64
from kdd.core.passes.header_steps import step_headers

BASE, K = var("base"), var("k")
SRC, REG, HDR, CTR = var("src", u64), var("b_g2s", u64), var("src_hdr", u64), var("k_reg", u64)
ATTRS = (("addr", "header"),)
XE = {"target": "xehpg"}


def _load(mask=None, lanes=1):
    if lanes == 1:
        f = Send(SendOp.LOAD, SendKind.BLOCK, "global", f16, 16)
        return FuncCall.make(f, [SRC, Load.make(s32, HDR, 0), REG, 0, BoolImm.make(True) if mask is None else mask],
                             attrs=ATTRS)
    f = Send(SendOp.LOAD, SendKind.SCATTERED, "global", s32, lanes)
    full = Broadcast.make(BoolImm.make(True), lanes)
    return FuncCall.make(f, [SRC, Load.make(s32.with_lanes(lanes), HDR, 0), REG, 0, full if mask is None else mask],
                         attrs=ATTRS)


def _message(offset, mask=None):
    """The header's store, its message, then another message (the SLM traffic of a loop step)."""
    slm = FuncCall.make(Send(SendOp.LOAD, SendKind.BLOCK, "slm", f16, 16),
                        [SRC, IntImm.make(s32, 0), REG, 0, BoolImm.make(True)])
    return seq(Store.make(HDR, 0, offset), _load(mask, offset.type.lanes), slm)


def _stores(ir):
    return [n.value for n in walk(ir) if isinstance(n, Store) and n.buf.name == HDR.name]


def _stepped(value, step):
    return isinstance(value, Binary) and value.op is Op.ADD and isinstance(value.a, Load) \
        and value.a.buf.name == HDR.name and (value.b.a if isinstance(value.b, Broadcast) else value.b).value == step


def _kernel(body):
    return Alloc.make(HDR, 64, MemKind.GRF, Alloc.make(CTR, 32, MemKind.GRF, body))


def test_a_header_stored_again_with_a_larger_constant_is_stepped():
    ir = _kernel(seq(_message(BASE + 768), _message(BASE + 1152), _message(BASE + 1024)))
    out = step_headers(ir, XE)
    first, second, third = _stores(out)
    assert first == BASE + 768 and _stepped(second, 384)
    assert third == BASE + 1024         # a step back (negative) is built from the terms again
    for base in (0, 4096):
        assert effects(out, env={"base": base}) == effects(ir, env={"base": base})


def test_vector_headers_and_copies_of_one_register_with_no_store_between_are_stepped():
    """Two lets copying the loop-carried register (each unrolled copy reads it again) are one value."""
    lanes = Ramp.make(IntImm.make(s32, 0), 128, 8)
    k1, k2 = var("k1"), var("k2")
    ir = _kernel(seq(Store.make(CTR, 0, BASE),
                     Let.make(k1, Load.make(s32, CTR, 0), _message(lanes + Broadcast.make(k1 + 64, 8))),
                     Let.make(k2, Load.make(s32, CTR, 0), _message(lanes + Broadcast.make(k2 + 96, 8)))))
    out = step_headers(ir, XE)
    assert _stepped(_stores(out)[1], 32)
    assert effects(out, env={"base": 256}) == effects(ir, env={"base": 256})


def test_what_breaks_the_step_keeps_the_store():
    k1, k2 = var("k1"), var("k2")
    # a store into the copied register between the two copies: different values
    bumped = _kernel(seq(Store.make(CTR, 0, BASE),
                         Let.make(k1, Load.make(s32, CTR, 0), seq(
                             _message(k1 + 64), Store.make(CTR, 0, k1 + 4096),
                             Let.make(k2, Load.make(s32, CTR, 0), _message(k2 + 96))))))
    assert step_headers(bumped, XE) is bumped
    # a masked message read the earlier value: its offset may be out of bounds (negative)
    masked = _kernel(seq(_message(BASE + 768, BoolImm.make(True).land(K.lt(3))), _message(BASE + 1152)))
    assert step_headers(masked, XE) is masked
    # no message between the two stores
    unread = _kernel(seq(Store.make(HDR, 0, BASE + 768), _message(BASE + 1152)))
    assert step_headers(unread, XE) is unread
    # a loop between: its first copy is also reached from its back edge
    looped = _kernel(seq(_message(BASE + 768), For.make(K, 0, 4, _message(BASE + 1152))))
    assert step_headers(looped, XE) is looped
    # other terms
    other = _kernel(seq(_message(BASE + 768), _message(BASE + K + 1152)))
    assert step_headers(other, XE) is other


def test_only_xe_global_headers_are_stepped():
    ir = _kernel(seq(_message(BASE + 768), _message(BASE + 1152)))
    assert step_headers(ir, {"target": "sm_90"}) is ir
    assert step_headers(ir, {}) is ir
    prefetch = Send(SendOp.PREFETCH, SendKind.BLOCK, "global", f16, 16)
    also = FuncCall.make(prefetch, [SRC, Load.make(s32, HDR, 0), REG, 0, BoolImm.make(True)], attrs=ATTRS)
    with_prefetch = _kernel(seq(_message(BASE + 768), _message(BASE + 1152), also))
    assert step_headers(with_prefetch, XE) is with_prefetch


def test_back_to_back_steps_alternate_with_a_twin_header():
    """Back to back (an epilogue's stores, a loop's row messages) a header stepped in place would wait for
    the message before to read its address: the step goes into a twin header instead, allocated beside
    it, and the next message reads the twin; the next step goes back. A header some message reads with no
    store before it in its run (stored before a loop, read in it) gets no twin."""
    store = Send(SendOp.STORE, SendKind.BLOCK, "global", f16, 16)

    def send(hdr=HDR):
        return FuncCall.make(store, [SRC, Load.make(s32, hdr, 0), REG, 0, BoolImm.make(True)], attrs=ATTRS)

    def message(offset):
        return seq(Store.make(HDR, 0, offset), send())
    ir = _kernel(seq(message(BASE + 768), message(BASE + 1152), message(BASE + 1536)))
    out = step_headers(ir, XE)
    stores = [n for n in walk(out) if isinstance(n, Store)]
    reads = [n.ops.mem_offset.buf.name for n in walk(out) if isinstance(n, FuncCall)]
    twin = stores[1].buf.name
    assert twin != HDR.name and [s.buf.name for s in stores] == [HDR.name, twin, HDR.name]
    assert stores[1].value.a.buf.name == HDR.name and stores[2].value.a.buf.name == twin
    assert reads == [HDR.name, twin, HDR.name]
    assert any(isinstance(n, Alloc) and n.buf.name == twin for n in walk(out))
    for base in (0, 4096):
        assert effects(out, env={"base": base}) == effects(ir, env={"base": base})
    bare = _kernel(seq(message(BASE + 768), message(BASE + 1152), For.make(K, 0, 2, send())))
    assert step_headers(bare, XE) is bare
