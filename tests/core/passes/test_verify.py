"""The IR verifier: each rule caught on a small broken IR, sound IR passes, and `kdd compile --verify`."""
import json

from passes_kernels import EXAMPLES
from protocol_schemas import validator

from kdd.core.ir.expr import Binary, Broadcast, IntImm, Load, Op, Ramp, Ternary, Var, const
from kdd.core.ir.funcs import Dpas, Mad, Send, Send2D, SendKind, SendOp
from kdd.core.ir.stmt import Alloc, For, FuncCall, Let, MemKind, Store, seq
from kdd.core.ir.types import f16, f32, s8, s32, s64, u4, u8, u64
from kdd.core.passes.verify import verify_ir
from kdd.core.targets import SM90, XEHPC, XEHPG
from kdd.server.cli import main

SRC = Var.make(u64, "src")
REG = Var.make(u64, "reg")
SLM = Var.make(u64, "slm")
X = Var.make(s32, "x")
K = Var.make(s32, "k")


def rules(ir, target=XEHPG, free=(SRC,)):
    return [p.rule for p in verify_ir(ir, target, free)]


def in_regs(body, size=64):
    return Alloc.make(REG, size, MemKind.GRF, body)


def load(kind=SendKind.BLOCK, elems=16, space="global", mem=SRC, offset=None, reg_offset=0):
    offset = offset if offset is not None else (Ramp.make(const(0), 2, elems) if kind is SendKind.SCATTERED
                                                else const(0))
    mask = Broadcast.make(const(True), elems) if kind is SendKind.SCATTERED else const(True)
    return FuncCall.make(Send(SendOp.LOAD, kind, space, f16, elems), [mem, offset, REG, reg_offset, mask])


def test_sound_ir_has_no_problem():
    body = For.make(K, 0, 2, Let.make(X, K * 32, seq(load(reg_offset=X), Store.make(REG, 0, X))))
    assert rules(in_regs(body)) == []


def test_an_unbound_variable_and_a_name_bound_twice():
    assert rules(in_regs(Store.make(REG, 0, X))) == ["scope"]
    twice = Let.make(X, 1, Let.make(X, 2, in_regs(Store.make(REG, 0, X))))
    assert rules(twice) == ["scope"]


def test_a_use_with_another_type_than_its_binding():
    other = Var.make(s64, "x")
    assert rules(Let.make(X, 1, in_regs(Store.make(REG, 0, other)))) == ["types"]


def test_a_node_made_around_its_constructor():
    wrong = Binary(f32, Op.ADD, X, X)  # the plain constructor checks nothing: x + x is s32
    assert rules(Let.make(X, 1, in_regs(Store.make(REG, 0, wrong)))) == ["types"]


def test_no_value_has_a_packed_4_bit_type():
    nibbles = Load.make(u4.with_lanes(16), REG, 0)  # u4 lives in memory only: its bytes are read as u8
    assert "types" in rules(in_regs(Store.make(REG, 0, nibbles.cast(u8.with_lanes(16)))))
    assert rules(in_regs(Store.make(REG, 0, Load.make(u8.with_lanes(16), REG, 0) & 15))) == []


def test_register_access_out_of_bounds():
    assert rules(Let.make(X, 1, in_regs(Store.make(REG, 60, X)))) == []  # bytes 60..64 of 64 fit
    assert rules(Let.make(X, 1, in_regs(Store.make(REG, 62, X)))) == ["bounds"]
    loop = For.make(K, 0, 3, load(reg_offset=K * 32))                      # the third message ends at 96
    assert rules(in_regs(loop)) == ["bounds"]
    assert rules(in_regs(load(reg_offset=0), size=16)) == ["bounds"]      # 32 bytes into 16


def test_unknown_offsets_are_not_guessed():
    hdr = Load.make(s32, REG, 0)
    assert rules(in_regs(load(reg_offset=hdr))) == []


def test_message_rules_come_from_the_target():
    big = in_regs(load(elems=256), size=512)                               # 512 B block
    assert rules(big) == ["send"] and rules(big, XEHPC) == []
    wide = in_regs(load(SendKind.SCATTERED, 32), size=64)                  # 32 addresses
    assert rules(wide) == ["send"] and rules(wide, XEHPC) == []
    # an SLM message addresses an SLM buffer, a global one a kernel buffer
    assert rules(in_regs(load(space="slm"))) == ["send"]
    slm = Alloc.make(SLM, 64, MemKind.SLM, in_regs(load(space="slm", mem=SLM)))
    assert rules(slm) == []
    assert rules(Alloc.make(SLM, 64, MemKind.SLM, in_regs(load(mem=SLM)))) == ["send"]


def test_vector_sizes_of_scattered_messages_come_from_the_target():
    def vector(vec, lanes=8, t=s32, op=SendOp.LOAD):
        offset = Ramp.make(const(0), 4 * vec, lanes)
        call = FuncCall.make(Send(op, SendKind.SCATTERED, "global", t, lanes * vec, vec),
                             [SRC, offset, REG, 0, Broadcast.make(const(True), lanes)])
        return in_regs(call, size=1024)

    assert rules(vector(8)) == [] and rules(vector(3)) == []
    assert rules(vector(16)) == ["send"]                           # 16 and more: transposed blocks only
    assert rules(vector(4, t=f16)) == ["send"]                     # 16-bit data: one element per lane
    assert rules(vector(2, op=SendOp.ATOMIC_ADD)) == ["send"]
    assert rules(vector(8), SM90) == ["send"]                      # PTX: kdd has no vector gathers
    wrong = FuncCall.make(Send(SendOp.LOAD, SendKind.SCATTERED, "global", s32, 64, 8),  # 64 offsets, 8 lanes
                          [SRC, Ramp.make(const(0), 4, 64), REG, 0, const(True)])
    assert rules(in_regs(wrong, size=512)) == ["send"]


def test_slm_accesses_out_of_bounds():
    far = Alloc.make(SLM, 32, MemKind.SLM, in_regs(load(space="slm", mem=SLM, offset=const(16))))
    assert rules(far) == ["bounds"]


def test_fused_operations_the_target_does_not_encode():
    mad = Ternary.make(Op.MAD, X, X, IntImm.make(s32, 401408))
    ir = Let.make(X, 1, in_regs(Store.make(REG, 0, mad)))
    assert rules(ir) == ["fused"] and rules(ir, SM90) == []
    add3 = Ternary.make(Op.ADD3, X, X, X)
    assert rules(Let.make(X, 1, in_regs(Store.make(REG, 0, add3))), SM90) == ["fused"]  # sm_90 has no add3


def test_multiply_adds_only_in_forms_the_target_has():
    def call(func, size=1024):
        return in_regs(FuncCall.make(func, [REG, 0, REG, 0, REG, 0, REG, 0]), size)
    mad8 = Mad(8, s32, s8, u8)                     # u8 (A, src2) * s8 (B, src1) into s32
    assert rules(call(mad8)) == [] and rules(call(mad8), XEHPC) == []
    assert rules(call(mad8), SM90) == ["fused"]     # sm_90's fma takes f32 and f64 only
    assert rules(call(Mad(8, f32, s8, u8))) == ["fused"]   # no byte mad into f32
    tf32 = Dpas(8, 8, 16, f32, f32, f32)
    assert rules(call(tf32, 4096), XEHPC) == [] and rules(call(tf32, 4096)) == ["fused"]  # no tf32 on Xe-HPG


def test_64_bit_integer_arithmetic_only_where_the_target_has_it():
    z = Var.make(s64, "z")
    mul = Let.make(z, 3, in_regs(Store.make(REG, 0, z * z)))
    assert rules(mul) == ["int64"] and rules(mul, XEHPC) == []
    add = Let.make(z, 3, in_regs(Store.make(REG, 0, z + z)))
    assert rules(add) == []   # Xe-HPG's code generator emulates the add


def test_compile_verify(capsys):
    path = str(EXAMPLES / "resnet50_1x1.kernel.toml")
    assert main(["compile", path, "--emit", "stats", "--verify", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    validator("compile.schema.json").validate(doc)
    assert doc["verify"]["ok"] and doc["verify"]["stages"] > 10 and doc["verify"]["problems"] == []
    assert main(["compile", path, "--emit", "ir", "--verify"]) == 0
    assert "verify: ok" in capsys.readouterr().out


def test_compile_verify_reports_a_broken_pass(capsys, monkeypatch):
    from kdd.core.passes import peephole
    from kdd.core.targets import FusedIntOps

    loose = FusedIntOps(("add3", "mad"), 64, 64, (0, 1, 2), "a target that encodes anything")
    monkeypatch.setattr(peephole, "_Fuse", lambda fused, *rest, _F=peephole._Fuse: _F(loose, *rest))
    # resnet50_3x3's store addresses have immediates wider than Xe-HPG's 16 bits (a row of the batch:
    # 401408 bytes) for the loose fusion to take
    path = str(EXAMPLES / "resnet50_3x3.kernel.toml")
    code = main(["compile", path, "--emit", "stats", "--verify", "--json", "--no-cache"])
    doc = json.loads(capsys.readouterr().out)
    validator("compile.schema.json").validate(doc)
    assert code == 3 and not doc["verify"]["ok"]
    assert {p["stage"] for p in doc["verify"]["problems"]} == {"peephole", "barrier-opt"}
    assert {p["rule"] for p in doc["verify"]["problems"]} == {"fused"}


def test_slm_accesses_under_an_if_may_never_happen_registers_must_fit_anyway():
    from kdd.core.ir.stmt import If

    tid = Var.make(s32, "tid")
    guarded = If.make(tid.lt(1), load(space="slm", mem=SLM, offset=tid * 64))
    ir = Alloc.make(SLM, 32, MemKind.SLM, in_regs(guarded))
    assert verify_ir(ir, XEHPG, (SRC, tid), {"tid": (0, 3)}) == []
    unguarded = Alloc.make(SLM, 32, MemKind.SLM, in_regs(load(space="slm", mem=SLM, offset=tid * 64)))
    assert [p.rule for p in verify_ir(unguarded, XEHPG, (SRC, tid), {"tid": (0, 3)})] == ["bounds"]
    register = If.make(tid.lt(1), load(space="slm", mem=SLM, reg_offset=tid * 64))
    assert [p.rule for p in verify_ir(Alloc.make(SLM, 32, MemKind.SLM, in_regs(register)), XEHPG, (SRC, tid),
                                      {"tid": (0, 3)})] == ["bounds"]


def _load2d(width=16, height=8, array=2, surface=(128, 64, 128), base=0, x=0):
    f = Send2D(f16, width, height, array)
    return FuncCall.make(f, [SRC, const(base), *(const(v) for v in surface), const(x), const(0), REG, const(0)])


def test_2d_block_loads_follow_the_targets_2d_rules():
    assert rules(in_regs(_load2d(), size=512), XEHPC) == []
    assert rules(in_regs(_load2d(), size=512)) == ["send"]                          # Xe-HPG has none
    assert rules(in_regs(_load2d(width=32, array=2), size=1024), XEHPC) == ["send"]  # 128-byte rows
    assert rules(in_regs(_load2d(height=33, array=1), size=2112), XEHPC) == ["send"]
    assert rules(in_regs(_load2d(width=12, array=1), size=192), XEHPC) == ["send"]  # 24-byte rows pad to 32
    assert rules(in_regs(_load2d(surface=(128, 64, 120)), size=512), XEHPC) == ["send"]  # pitch off 16 B
    assert rules(in_regs(_load2d(surface=(32, 64, 128)), size=512), XEHPC) == ["send"]   # 32 B wide
    assert rules(in_regs(_load2d(base=32), size=512), XEHPC) == ["send"]                 # base off 64 B
    assert rules(in_regs(_load2d(x=1), size=512), XEHPC) == ["send"]                     # x off a dword
    assert rules(in_regs(_load2d(), size=256), XEHPC) == ["bounds"]                      # 512 B into 256
