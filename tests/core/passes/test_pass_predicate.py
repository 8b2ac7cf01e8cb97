"""If-conversion: a branch around messages and their header stores becomes the messages' predicate."""
from passes_oracle import effects

from kdd.core.ir import Alloc, BoolImm, For, FuncCall, If, Load, MemKind, Store, seq, var, walk
from kdd.core.ir.expr import Broadcast, Ramp
from kdd.core.ir.funcs import Send, SendKind, SendOp
from kdd.core.ir.types import f16, s32, u64
from kdd.core.passes.predicate import predicate_messages

K, T = var("k"), var("t")
SRC, REG, HDR = var("src", u64), var("b_g2s", u64), var("src_hdr", u64)
ATTRS = (("addr", "header"),)
XE = {"target": "xehpg"}


def _block(offset):
    load = Send(SendOp.LOAD, SendKind.BLOCK, "global", f16, 16)
    return seq(Store.make(HDR, 0, offset),
               FuncCall.make(load, [SRC, Load.make(s32, HDR, 0), REG, 0, BoolImm.make(True)], attrs=ATTRS))


def _scattered(offset, mask):
    load = Send(SendOp.LOAD, SendKind.SCATTERED, "global", s32, 8)
    hdr = Load.make(s32.with_lanes(8), HDR, 0)
    return seq(Store.make(HDR, 0, offset), FuncCall.make(load, [SRC, hdr, REG, 0, mask], attrs=ATTRS))


def _calls(ir):
    return [n for n in walk(ir) if isinstance(n, FuncCall)]


def test_a_branch_around_a_message_becomes_its_predicate():
    # A cooperative copy only threads t < 2 take part in, inside the main loop.
    loop = Alloc.make(HDR, 32, MemKind.GRF, For.make(K, 0, 4, If.make(T.lt(2), _block(K * 64))))
    out = predicate_messages(loop, XE)
    assert not [n for n in walk(out) if isinstance(n, If)]
    (call,) = _calls(out)
    assert call.ops.mask == T.lt(2)
    for t in range(4):
        assert effects(out, env={"t": t}) == effects(loop, env={"t": t})


def test_a_vector_mask_takes_the_condition_in_every_lane():
    lanes = Ramp.make(K, 1, 8).lt(Broadcast.make(var("n"), 8))
    loop = Alloc.make(HDR, 32, MemKind.GRF,
                      For.make(K, 0, 4, If.make(T.lt(2), _scattered(Ramp.make(K * 64, 4, 8), lanes))))
    out = predicate_messages(loop, XE)
    (call,) = _calls(out)
    assert call.ops.mask == Broadcast.make(T.lt(2), 8).land(lanes)
    for t, n in ((0, 9), (1, 2), (3, 9)):
        assert effects(out, env={"t": t, "n": n}) == effects(loop, env={"t": t, "n": n})


def test_branches_doing_more_than_messages_and_headers_read_elsewhere_stay():
    fill = Store.make(REG, 0, Broadcast.make(BoolImm.make(True), 8))  # a register write the branch guards
    busy = Alloc.make(HDR, 32, MemKind.GRF, If.make(T.lt(2), seq(fill, _block(K * 64))))
    assert predicate_messages(busy, XE) is busy
    # A later send reads the header without writing it: the store must stay under its condition.
    load = Send(SendOp.LOAD, SendKind.BLOCK, "global", f16, 16)
    again = FuncCall.make(load, [SRC, Load.make(s32, HDR, 0), REG, 0, BoolImm.make(True)], attrs=ATTRS)
    shared = Alloc.make(HDR, 32, MemKind.GRF, seq(_block(K), If.make(T.lt(2), _block(K * 64)), again))
    assert predicate_messages(shared, XE) is shared
    with_else = Alloc.make(HDR, 32, MemKind.GRF, If.make(T.lt(2), _block(K), _block(K * 64)))
    assert predicate_messages(with_else, XE) is with_else


def test_only_xe_messages_are_predicated():
    loop = Alloc.make(HDR, 32, MemKind.GRF, If.make(T.lt(2), _block(K * 64)))
    assert predicate_messages(loop, {"target": "sm_90"}) is loop
    assert predicate_messages(loop, {}) is loop
