"""IR nodes: immutability, structural hashing and equality, type checking at construction."""
import pickle
import subprocess
import sys

import pytest

from kdd.core.ir import (Alloc, Binary, BoolImm, Cast, For, FuncCall, Group, If, IntImm, Let, Load,
                         MemKind, Op, Seq, Store, const, iif, seq, var)
from kdd.core.ir.funcs import Barrier, Send, SendKind, SendOp
from kdd.core.ir.types import Type, bool_, f16, f32, s8, s32, s64, u8, u16, u32


def test_nodes_are_immutable():
    a = var("a")
    with pytest.raises(AttributeError):
        a.name = "b"
    with pytest.raises(AttributeError):
        (a + 1).op = Op.SUB


def test_structurally_equal_trees_hash_equal_and_work_as_dict_keys():
    a, b = var("a"), var("b")
    e1 = (a + b) * 2
    e2 = (var("a") + var("b")) * 2
    assert e1 is not e2
    assert e1.is_equal(e2) and e1 == e2 and hash(e1) == hash(e2)
    assert {e1: "x"}[e2] == "x"
    assert len({e1, e2, a + b}) == 2


def test_different_trees_are_not_equal():
    a, b = var("a"), var("b")
    assert not (a + b).is_equal(b + a)
    assert not (a + 1).is_equal(a + const(1, s64))  # the immediate's type is part of the node
    assert not var("a", s32).is_equal(var("a", u32))


def test_comparisons_are_builders_not_operators():
    a = var("a")
    cmp = a.lt(3)
    assert isinstance(cmp, Binary) and cmp.op is Op.LT and cmp.type == bool_
    with pytest.raises(TypeError):
        bool(cmp)  # `if expr:` is a bug; IR has no truth value
    assert (a == var("a")) is True  # Python == stays structural equality


def test_python_numbers_take_the_other_operands_type():
    x = var("x", u8)
    e = x + 1
    assert e.b.type == u8
    y = var("y", f16)
    assert (y * 2).b.type == f16


def test_common_type_promotes_like_c():
    assert (var("a", u8) + var("b", u8)).type == u8  # same kind: no promotion
    assert (var("a", s32) + var("b", u32)).type == u32
    assert (var("a", s32) + var("b", s64)).type == s64
    assert (var("a", s32) + var("b", f32)).type == f32
    assert (var("a", s32).lt(var("b", f32))).type == bool_
    assert (var("a", u16) + var("b", s8)).type == s32  # narrow unsigned promotes to int, as in C
    assert (var("a", u32) + var("b", s8)).type == u32


def test_float_immediates_are_compared_by_bit_pattern():
    zero, neg_zero = const(0.0, f32), const(-0.0, f32)
    assert not zero.is_equal(neg_zero)  # 1/x tells them apart, so they are different IR
    nan = const(float("nan"), f32)
    assert nan.is_equal(const(float("nan"), f32)) and hash(nan) == hash(const(float("nan"), f32))
    assert {nan: 1}[nan] == 1


def test_constructors_validate():
    with pytest.raises(TypeError):
        var("a", f32) % 2  # modulus needs integers
    with pytest.raises(TypeError):
        If.make(var("a"), Seq.make(()))  # condition must be bool
    with pytest.raises(TypeError):
        Let.make(var("x", s32), var("y", f32), Seq.make(()))
    with pytest.raises(TypeError):
        iif(var("a"), 1, 2)
    with pytest.raises(TypeError):
        FuncCall.make(Barrier(), [var("a")])  # barrier takes no arguments
    with pytest.raises(ValueError):
        For.make(var("i"), 0, 4, Seq.make(()), step=0)


def test_int_immediates_wrap_to_their_type():
    assert IntImm.make(u8, 300).value == 44
    assert IntImm.make(Type.parse("s8"), 200).value == -56


def test_seq_flattens_and_groups_label():
    s1 = Store.make(var("b", s32), 0, var("x"))
    nested = Seq.make([Seq.make([s1, s1]), s1])
    assert len(nested.stmts) == 3
    g = Group.make("kernel", nested)
    assert g.label == "kernel"
    assert seq(s1) is s1


def test_statement_vocabulary_builds():
    buf, slm = var("buf", s32), var("slm", s32)
    send = Send(SendOp.LOAD, SendKind.BLOCK, "global", f16, 16)
    call = FuncCall.make(send, [buf, 0, slm, 0, BoolImm.make(True)])
    body = seq(call, FuncCall.make(Barrier()),
               Store.make(slm, 4, Load.make(f32, slm, 0), mask=var("m", bool_)))
    k = Alloc.make(slm, 1024, MemKind.SLM, For.make(var("i"), 0, 4, body, unroll=4))
    assert k.kind is MemKind.SLM and k.body.unroll == 4
    assert str(send) == "send.load.block.global.f16x16"


def test_call_operands_are_read_and_replaced_by_name():
    buf, reg = var("buf", s32), var("reg", s32)
    send = Send(SendOp.LOAD, SendKind.BLOCK, "global", f16, 16)
    call = FuncCall.make(send, [buf, var("off"), reg, 64, BoolImm.make(True)], attrs=(("k", 1),))
    assert call.ops.mem is buf and call.ops.reg is reg and call.ops.reg_offset == IntImm.make(s32, 64)
    assert call.with_ops(mem_offset=call.ops.mem_offset) is call  # nothing changed: the same node
    moved = call.with_ops(mem_offset=var("off") + 32)
    assert moved.ops.mem_offset == var("off") + 32 and moved.ops.reg is reg and moved.attrs == call.attrs
    with pytest.raises(ValueError):
        call.with_ops(offset=0)  # a name the send does not have
    with pytest.raises(TypeError, match="mem, mem_offset, reg, reg_offset, mask"):
        FuncCall.make(send, [buf, 0])


def test_origin_does_not_change_identity():
    e = var("a") + 1
    tagged = e.with_origin(("config.iter", 3))
    assert tagged.origin == ("config.iter", 3)
    assert tagged == e and hash(tagged) == hash(e)


def test_cast_and_vectors():
    x = var("x", s32)
    c = Cast.make(f16, x)
    assert c.type == f16
    from kdd.core.ir import Broadcast, Ramp, Shuffle
    r = Ramp.make(x, 4, 8)
    assert r.type == s32.with_lanes(8)
    b = Broadcast.make(x, 8)
    sh = Shuffle.make([r, b], [0, 8, 1])
    assert sh.type.lanes == 3
    with pytest.raises(ValueError):
        Shuffle.make([r], [8])


def test_vector_condition_makes_a_vector_select():
    from kdd.core.ir import Broadcast, Ramp, evaluate
    cond = Ramp.make(var("i"), 1, 4).lt(Broadcast.make(const(2), 4))
    sel = iif(cond, 1, 0)
    assert sel.type == s32.with_lanes(4)
    assert evaluate(sel, {"i": 0}) == (1, 1, 0, 0)


def test_ir_pickled_in_another_process_hashes_and_compares_like_ir_built_here():
    # Operators, scalar kinds and types hash by identity or cache their hash: a pickle must
    # rebuild them through their constructors, or equal IR from a worker process would miss
    # every dict it is looked up in.
    source = ("import pickle, sys\n"
              "from kdd.core.ir import var\n"
              "from kdd.core.ir.types import Type\n"
              "x = var('x')\n"
              "e = ((x + 1) * 3).cast(Type.parse('s64')).lt(x)\n"
              "sys.stdout.buffer.write(pickle.dumps((e, e.type, e.a.type)))\n")
    done = subprocess.run([sys.executable, "-c", source], capture_output=True, check=True)
    theirs = pickle.loads(done.stdout)
    x = var("x")
    e = ((x + 1) * 3).cast(Type.parse("s64")).lt(x)
    ours = (e, e.type, e.a.type)
    for a, b in zip(theirs, ours):
        assert a == b and hash(a) == hash(b)
    assert {ours[0]: 1}[theirs[0]] == 1
