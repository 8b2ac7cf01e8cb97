"""Send lowering: Xe message headers, sm_90 address registers plus immediates; same addresses either way."""
from passes_oracle import effects

from kdd.core.ir import Alloc, For, FuncCall, Group, Let, Load, MemKind, Store, evaluate, seq, var, walk
from kdd.core.ir.expr import IntImm, Ramp
from kdd.core.ir.simplify import linear_form
from kdd.core.ir.funcs import Send, SendKind, SendOp
from kdd.core.ir.types import f16, s32, s64, u64
from kdd.core.passes.send_headers import lower_sends

SRC, REG = var("src", u64), var("a", u64)
K, X = var("k"), var("x")
BLOCK = Send(SendOp.LOAD, SendKind.BLOCK, "global", f16, 16)
GATHER = Send(SendOp.LOAD, SendKind.SCATTERED, "global", f16, 8)


def kernel(offset, func=BLOCK, mask=True):
    call = FuncCall.make(func, [SRC, offset, REG, K * 32, mask])
    return Group.make("kernel", Alloc.make(REG, 256, MemKind.GRF, For.make(K, 0, 4, call)))


def calls(s):
    return [n for n in walk(s) if isinstance(n, FuncCall)]


def test_xe_sends_read_their_address_from_a_header_register():
    s = kernel((K * 512 + X) * 2)
    out = lower_sends(s, {"target": "xehpg", "reg_bytes": 32, "reuse_headers": True})
    (call,) = calls(out)
    assert dict(call.attrs) == {"addr": "header"}
    hdr = call.ops.mem_offset
    assert isinstance(hdr, Load) and hdr.buf.name == "src_hdr" and hdr.type == s32
    (alloc,) = [n for n in walk(out) if isinstance(n, Alloc) and n.buf.name == "src_hdr"]
    assert alloc.kind is MemKind.GRF and alloc.size == 32
    assert alloc.body.stmts[0] == Store.make(alloc.buf, 0, (K * 512 + X) * 2)
    assert effects(out, env={"x": 3}) == effects(s, env={"x": 3})
    assert lower_sends(out, {"target": "xehpg", "reg_bytes": 32}) is out  # already lowered


def test_without_header_reuse_header_registers_are_allocated_for_the_whole_kernel():
    s = kernel(K * 64)
    out = lower_sends(s, {"target": "xehpc", "reg_bytes": 64, "reuse_headers": False})
    assert isinstance(out, Group) and isinstance(out.body, Alloc) and out.body.buf.name == "src_hdr"
    assert effects(out, env={}) == effects(s, env={})


def test_a_scattered_header_holds_one_wide_address_per_element():
    off = Ramp.make((K * 4096).cast(s64), 64, 8)
    s = kernel(off, GATHER, Ramp.make(K, 1, 8).lt(6))
    out = lower_sends(s, {"target": "xehpg", "reg_bytes": 32, "reuse_headers": True})
    (alloc,) = [n for n in walk(out) if isinstance(n, Alloc) and n.buf.name == "src_hdr"]
    assert alloc.size == 64  # 8 lanes x 8 bytes: two GRFs
    assert effects(out, env={}) == effects(s, env={})


def test_sm90_splits_the_address_into_a_register_and_an_immediate():
    offset = (K * 512 + X) * 2 + 96
    s = kernel(offset)
    out = lower_sends(s, {"target": "sm_90"})
    (call,) = calls(out)
    assert dict(call.attrs) == {"addr": "reg"}
    (let,) = [n for n in walk(out) if isinstance(n, Let)]
    assert let.var.name == "src_addr" and call.ops.mem_offset == let.var + 96
    assert linear_form(let.value).const == 0
    assert evaluate(let.value, {"k": 3, "x": 5}) + 96 == evaluate(offset, {"k": 3, "x": 5})
    assert effects(out, env={"x": 5}) == effects(s, env={"x": 5})


def test_sm90_constant_offsets_need_no_register_and_without_a_target_sends_are_untouched():
    const = kernel(IntImm.make(s32, 128))
    assert lower_sends(const, {"target": "sm_90"}) is const
    s = kernel(K * 64)
    assert lower_sends(s, {}) is s


def test_a_send_right_after_one_of_the_same_address_shares_its_header():
    """An SLM store and its store of zeros (same address, complementary masks) write one header:
    one register, one write; a send of another address or after another statement gets its own."""
    store = Send(SendOp.STORE, SendKind.BLOCK, "slm", f16, 16)
    slm, zero = var("a_slm", u64), var("a_zero", u64)
    off = K * 32 + X
    data = FuncCall.make(store, [slm, off, REG, 0, K.lt(2)])
    zeros = FuncCall.make(store, [slm, off, zero, 0, K.lt(2).lnot()])
    other = FuncCall.make(store, [slm, off + 64, zero, 0, True])
    body = Group.make("kernel", For.make(K, 0, 4, seq(data, zeros, other)))
    out = lower_sends(body, {"target": "xehpg", "reg_bytes": 32})
    headers = [n for n in walk(out) if isinstance(n, Alloc)]
    assert len(headers) == 2
    writes = [n for n in walk(out) if isinstance(n, Store)]
    assert [w.value for w in writes] == [off, off + 64]
    first, second, third = calls(out)
    assert first.ops.mem_offset == second.ops.mem_offset != third.ops.mem_offset
    assert lower_sends(out, {"target": "xehpg", "reg_bytes": 32}) is out


def test_a_global_load_and_an_slm_store_of_the_same_offset_keep_their_own_headers():
    """A copy's global load and its SLM store may have equal offsets (mobilenet conv2's bwd_d weights on
    xehpg): a shared header would address both spaces, which Xe's messages cannot."""
    load, store = BLOCK, Send(SendOp.STORE, SendKind.BLOCK, "slm", f16, 16)
    slm, off = var("b_slm", u64), K * 32 + X
    body = Group.make("kernel", For.make(K, 0, 4, seq(FuncCall.make(load, [SRC, off, REG, 0, True]),
                                                      FuncCall.make(store, [slm, off, REG, 0, True]))))
    out = lower_sends(body, {"target": "xehpg", "reg_bytes": 32})
    first, second = calls(out)
    assert first.ops.mem_offset != second.ops.mem_offset
    assert [w.value for w in walk(out) if isinstance(w, Store)] == [off, off]
