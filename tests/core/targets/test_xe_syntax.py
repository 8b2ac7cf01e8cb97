"""The one reader of Xe assembly text (core/targets/xe_syntax.py): lines and operand tokens as IGA spells
them, and a generated listing and ``iga64 -d``'s disassembly of its binary read alike (the register operands
the generator writes read back: tests/core/targets/test_xe_asm.py)."""
import shutil
from pathlib import Path

import pytest

from kdd.core.builder import build_kernel
from kdd.core.codegen import generate_asm
from kdd.core.passes.kernel_pipeline import run_pipeline
from kdd.core.spec import load_spec
from kdd.core.targets.xe_syntax import (Immediate, Instruction, Label, LscMessage, RegisterRange, flag_token,
                                        immediate, lsc_message, null_type, parse_line, register_range,
                                        register_token)


def test_an_instruction_line_splits_into_its_fields():
    line = parse_line("(W&~f0.1) cmp (16|M16) (lt)f1.0 null<1>:d r4.0<1;1,0>:d -r5.2<0;1,0>:d {I@1}  // i < n")
    assert line == Instruction("(W&~f0.1) cmp (16|M16) (lt)f1.0 null<1>:d r4.0<1;1,0>:d -r5.2<0;1,0>:d",
                               "cmp", ("null<1>:d", "r4.0<1;1,0>:d", "-r5.2<0;1,0>:d"), 16, 16, True,
                               ("f0.1", True), ("lt", "f1.0"), False)
    send = parse_line("(W)     send.ugm (1|M0)  r22  r21  null:0  0x0  0x0210C580  {EOT,$0}  // wr:1+0, rd:1")
    assert (send.op, send.mnemonic, send.operands, send.eot, send.pred) == (
        "send", "send.ugm", ("r22", "r21", "null:0", "0x0", "0x0210C580"), True, None)
    jump = parse_line("(f0.0) jmpi L320")
    assert (jump.nomask, jump.pred, jump.exec_size, jump.operands) == (False, ("f0.0", False), None, ("L320",))
    assert parse_line("(W) add.sat (8|M0) r3.0<1>:f r4.0<1;1,0>:f r5.0<1;1,0>:f").mnemonic == "add.sat"


def test_labels_comments_and_what_is_no_instruction():
    assert parse_line("L320:") == Label("L320") and parse_line("LOOP_1:  // k") == Label("LOOP_1")
    assert parse_line("// a comment") is None and parse_line("   ") is None and parse_line("{$1}") is None
    for text in ("(W&f0.0.any16h) add (16|M0) r3.0<1>:d r4.0<1;1,0>:d 1:d", "(W)"):
        with pytest.raises(ValueError):
            parse_line(text)


def test_message_operands_null_flags_and_immediates():
    assert register_range("r20:8") == RegisterRange(20, 8) and register_token("r20:8") is None
    assert register_range("[r4:1]") == RegisterRange(4, 1, address=True)
    assert register_range("r22") == RegisterRange(22, None) and register_range("null:0") == RegisterRange(None, 0)
    for text in ("r5.0<1>:d", "[r4:1", "r4:1]", "0x0"):
        assert register_range(text) is None, text
    assert null_type("null<1>:d") == "d" and null_type("null:ud") == "ud" and null_type("r0:ud") is None
    assert flag_token("f0.1<1>:uw") == ("f0.1", "uw") and flag_token("f0.1<1>:d") is None
    assert immediate("0x3F800000:f") == Immediate("f", 0x3F800000, raw_bits=True)
    assert immediate("1.5:hf") == Immediate("hf", 1.5) and immediate("-3:d") == Immediate("d", -3)
    assert immediate("0x76543210:uv") == Immediate("uv", 0x76543210) and immediate("0x10:ud").value == 16
    for text in ("3:zz", "abc:d", "1.5:d"):
        with pytest.raises(ValueError):
            immediate(text)


def test_lsc_message_suffixes():
    assert lsc_message("load.ugm.d32x8t.a64.ca.ca") == LscMessage("load", "ugm", "d32", 8, True, 64, ("ca", "ca"))
    assert lsc_message("store.slm.d16u32.a32") == LscMessage("store", "slm", "d16u32", None, False, 32)
    assert lsc_message("atomic_fadd.ugm.d32.a64").op == "atomic_fadd"
    assert lsc_message("load_block2d.ugm.d16.a64").data == "d16"
    for text in ("send.ugm", "load.ugm.d32x8t", "add", "load.ugm.d24.a64"):
        assert lsc_message(text) is None, text


def _alu(text: str) -> list[tuple]:
    """The ALU instructions of IGA text as the reader gives them, immediates by type only (the disassembler
    writes ``0x3:ud`` for ``3:ud``), a whole register's absent sub-register as 0 (``r116:b`` is ``r116.0:b``)."""
    out = []
    for raw in text.splitlines():
        line = parse_line(raw)
        if not isinstance(line, Instruction) or line.op in ("send", "sendc", "jmpi", "sync") or lsc_message(
                line.mnemonic) is not None:
            continue
        operands = []
        for tok in line.operands:
            r = register_token(tok)
            operands.append(("imm", immediate(tok).type) if r is None and null_type(tok) is None else
                            tok if r is None else (r.file, r.reg, r.sub or 0, r.region, r.type, r.neg))
        out.append((line.mnemonic, line.exec_size, line.channel, line.pred, line.cmod, tuple(operands)))
    return out


@pytest.mark.skipif(shutil.which("iga64") is None, reason="iga64 (Debian libigc-tools) is not installed")
def test_a_listing_and_the_disassembly_of_its_binary_read_alike():
    from kdd.core.xesim.run import assemble, disassemble

    path = Path(__file__).resolve().parents[3] / "examples" / "int8.kernel.toml"
    spec, _ = load_spec(path.read_text(), str(path))
    kernel = build_kernel(spec.problem, spec.config, spec.target)
    target = spec.target
    text = generate_asm(kernel, run_pipeline(kernel).final, target, check=False).to_dict()["asm"]
    written = _alu(text)
    dis = disassemble(assemble(text, tuple(target.assembler)), target.xe.iga_platform)
    assert len(written) > 50 and _alu(dis) == written
