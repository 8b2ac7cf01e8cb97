"""Global header chains carried across a loop's back edge: ``hdr = inv + k_iv (+ c)`` at each step and
``k_reg[0] = k_iv + S`` at the bottom become one header stored before the loop and stepped by constants
(the last step to the next trip's first offset); the counter goes where only its own step reads it."""
from passes_oracle import effects

from kdd.core.ir import Alloc, BoolImm, For, FuncCall, Let, Load, MemKind, Store, seq, var, walk
from kdd.core.ir.expr import IntImm
from kdd.core.ir.funcs import Send, SendKind, SendOp
from kdd.core.ir.types import f16, s32, u64
from kdd.core.passes.carried_headers import carry_headers

INV, I = var("inv"), var("i")
SRC, REG, HDR, CTR = var("src", u64), var("b_g2s", u64), var("src_hdr", u64), var("k_reg", u64)
ATTRS = (("addr", "header"),)


def _load(mask=None):
    f = Send(SendOp.LOAD, SendKind.BLOCK, "global", f16, 16)
    return FuncCall.make(f, [SRC, Load.make(s32, HDR, 0), REG, 0, BoolImm.make(True) if mask is None else mask],
                         attrs=ATTRS)


def _step(offset, mask=None):
    """The header's store, its message, then an SLM message (the rest of a loop step)."""
    slm = FuncCall.make(Send(SendOp.LOAD, SendKind.BLOCK, "slm", f16, 16),
                        [SRC, IntImm.make(s32, 0), REG, 0, BoolImm.make(True)])
    return seq(Store.make(HDR, 0, offset), _load(mask), slm)


def _kernel(consts=(0, 64), step=192, mask=None, after=True, tail=()):
    """``k_reg`` starts at 128; each of 4 trips loads at ``inv + k + c`` for each ``c``, then steps ``k``; a
    peeled trip after the loop loads at ``inv + k`` as the loop left it."""
    k, k2 = var("k_iv"), var("k_iv_2")
    body = Let.make(k, Load.make(s32, CTR, 0), seq(*(_step(INV + k + c, mask) for c in consts),
                                                   Store.make(CTR, 0, k + step)))
    peeled = Let.make(k2, Load.make(s32, CTR, 0), _step(INV + k2)) if after else seq()
    return Alloc.make(HDR, 64, MemKind.GRF, Alloc.make(CTR, 64, MemKind.GRF, seq(
        Store.make(CTR, 0, IntImm.make(s32, 128)), For.make(I, 0, 4, body), peeled, *tail)))


def _loop(ir):
    return next(n for n in walk(ir) if isinstance(n, For))


def _header_stores(node):
    return [n for n in walk(node) if isinstance(n, Store) and n.buf.name.startswith(HDR.name)]


def test_a_chain_is_stored_before_the_loop_and_stepped_across_its_back_edge():
    ir = _kernel()
    out = carry_headers(ir, {"target": "xehpg"})
    stores = _header_stores(_loop(out).body)
    # the second step's +64 and the bottom's +128 to the next trip's first offset; nothing built from the counter
    assert [s.value.b.value for s in stores] == [64, 128]
    assert all(isinstance(s.value.a, Load) and s.value.a.buf.name == s.buf.name for s in stores)
    assert not [n for n in walk(out) if isinstance(n, (Store, Load)) and n.buf.name == CTR.name]
    for inv in (0, 4096):
        assert effects(out, env={"inv": inv}) == effects(ir, env={"inv": inv})


def test_steps_back_only_where_64_bit_adds_sign_extend():
    """Constants that go down (a kh wrap's ``-3235840``) step back on Xe-HPC; Xe-HPG's carry-only high
    dword cannot subtract."""
    ir = _kernel(consts=(512, 0))
    assert carry_headers(ir, {"target": "xehpg"}) is ir
    out = carry_headers(ir, {"target": "xehpc"})
    assert [s.value.b.value for s in _header_stores(_loop(out).body)] == [-512, 704]
    assert effects(out, env={"inv": 1024}) == effects(ir, env={"inv": 1024})


def test_masked_messages_are_carried_only_where_64_bit_adds_sign_extend():
    mask = I.lt(3)
    ir = _kernel(mask=mask)
    assert carry_headers(ir, {"target": "xehpg"}) is ir
    out = carry_headers(ir, {"target": "xehpc"})
    assert out is not ir and effects(out, env={"inv": 64}) == effects(ir, env={"inv": 64})


def test_a_counter_something_else_reads_stays():
    """A store of the counter's value into a buffer other than its own keeps it (and the chain is still
    carried)."""
    other = var("other", u64)
    k3 = var("k_iv_3")
    ir = Alloc.make(other, 64, MemKind.GRF, _kernel(tail=[Let.make(k3, Load.make(s32, CTR, 0), Store.make(other, 0, k3))]))
    out = carry_headers(ir, {"target": "xehpg"})
    assert [n for n in walk(out) if isinstance(n, Store) and n.buf.name == CTR.name]
    assert effects(out, env={"inv": 0}) == effects(ir, env={"inv": 0})


def test_no_target_or_sm90_leaves_the_kernel():
    ir = _kernel()
    assert carry_headers(ir, {}) is ir and carry_headers(ir, {"target": "sm_90"}) is ir
