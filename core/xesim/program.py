"""The program the simulator runs: ``iga64 -d`` text parsed into instructions.

The text is what Intel's disassembler prints for the binary, so what runs is
what the binary encodes. One instruction per line::

    (W&~f0.1) add (8|M0) r3.0<1>:d r4.0<1;1,0>:d -r5.0<0;1,0>:d {I@1}
    (W) send.ugm (1|M0) r22 r21 null:0 0x0 0x0210C580 {$0}
    (W) dpas.8x8 (8|M0) r3:f r3:f r89:hf r40.0:hf
    (W&f0.0) jmpi L320

Labels (``L320:``) name byte offsets; a jump's target becomes an instruction
index. Software-scoreboard annotations (``{I@1}``, ``{$0.src}``) are timing,
not semantics, and are dropped; ``{EOT}`` is kept. A line the parser cannot
read is a :class:`SimulatorGap` naming the line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from kdd.core.targets.xe_asm import FLAGS, IMM_VECTOR_TYPES, TYPES, register_token

from .errors import SimulatorGap


@dataclass(frozen=True)
class Operand:
    """A register operand: ``kind`` ``grf``/``acc``/``null``/``flag``; ``reg`` and ``sub`` (in elements of
    ``type``; a flag subregister's register and first bit); the region ``(v, w, h)``: element ``i`` at ``sub + (i // w) * v + (i % w) * h`` (a
    destination's ``<h>`` is ``(h, 1, 0)``); source modifiers."""

    kind: str
    type: str
    reg: int = 0
    sub: int = 0
    region: tuple[int, int, int] = (0, 1, 1)
    neg: bool = False
    abs: bool = False
    length: int = 0          # a send payload's register count (``r20:8``)


@dataclass(frozen=True)
class Imm:
    """An immediate: ``value`` is a Python int (raw bits for floats given in hex) or float."""

    type: str
    value: int | float
    raw_bits: bool = False


@dataclass
class Instr:
    """One instruction of the program (``line``: its 1-based line in the disassembly, ``text``)."""

    line: int
    text: str
    op: str
    sub: str = ""                              # ``ugm`` of ``send.ugm``, ``8x8`` of ``dpas.8x8``
    exec_size: int = 1
    channel: int = 0                           # the first channel (``M16``): which flag bits predicate it
    pred: tuple[int, int, bool] | None = None  # (flag register, first bit, inverted)
    cmod: str | None = None
    cmod_flag: tuple[int, int] | None = None
    sat: bool = False
    dst: Operand | None = None
    srcs: list = field(default_factory=list)
    target: int | None = None                  # jump target (instruction index)
    label: str | None = None
    desc: int = 0
    exdesc: int = 0
    eot: bool = False


_PRED = re.compile(r"^\((W)?(?:&)?(~)?(f[01]\.[01])?\)\s*")
_EXEC = re.compile(r"^\((\d+)\|M(0|8|16|24)\)\s*")
_CMOD = re.compile(r"^\((eq|ne|lt|le|gt|ge|z|nz)\)(f[01]\.[01])\s+")
_NULL = re.compile(r"^null(?:<\d+>)?:(\w+)$")
_FLAG = re.compile(r"^(f[01]\.[01])(?:<[^>]*>)?:(uw|w)$")
_SEND_REG = re.compile(r"^(r\d+|null)(?::(\d+))?$")
_LABEL = re.compile(r"^(\w+):$")


@lru_cache(maxsize=None)
def _region(parts: tuple[int, ...] | None, dst: bool, ternary_src2: bool, exec_size: int) -> tuple[int, int, int]:
    if parts is None:
        return (1, 1, 0) if dst or exec_size > 1 else (0, 1, 0)
    if dst or ternary_src2:      # a destination's or a ternary src2's <h>: element i at i * h
        (h,) = parts
        return (h, 1, 0)
    if len(parts) == 3:
        return tuple(parts)
    v, h = parts   # a ternary <v;h> source: only forms whose width is 1 are read
    if h != 0:
        raise ValueError(f"ternary region <{v};{h}> is outside the simulated subset")
    return (v, 1, 0)


def _imm(tok: str) -> Imm:
    value, _, t = tok.rpartition(":")
    if t in IMM_VECTOR_TYPES:
        return Imm(t, int(value, 16))
    if t not in TYPES:
        raise ValueError(f"immediate type {t!r}")
    if TYPES[t][0].startswith("float") or t == "bf":
        if value.lower().startswith("0x"):
            return Imm(t, int(value, 16), raw_bits=True)
        return Imm(t, float(value))
    return Imm(t, int(value, 0))


def _operand(tok: str, *, dst: bool = False, ternary_src2: bool = False, exec_size: int = 1):
    m = _NULL.match(tok)
    if m:
        return Operand("null", m.group(1))
    m = _FLAG.match(tok)
    if m:       # a flag subregister as a 16-bit ALU operand (``and (1|M0) f0.0<1>:uw f0.0<0;1,0>:uw 0x7F:uw``)
        reg, bit = FLAGS[m.group(1)]
        return Operand("flag", m.group(2), reg, bit)
    r = register_token(tok)
    if r is not None and not (r.inv or r.sat):  # neither is simulated: an inverted source, (sat) on a source
        if r.type not in TYPES:
            raise ValueError(f"type {r.type!r}")
        return Operand("grf" if r.file == "r" else "acc", r.type, r.reg, r.sub or 0,
                       _region(r.region, dst, ternary_src2, exec_size), r.neg, r.abs)
    return _imm(tok)


def _send_reg(tok: str) -> Operand:
    m = _SEND_REG.match(tok)
    if not m:
        raise ValueError(f"send operand {tok!r}")
    name, length = m.groups()
    if name == "null":
        return Operand("null", "ud", length=int(length or 0))
    return Operand("grf", "ud", int(name[1:]), length=int(length or 0))


def _strip(line: str) -> tuple[str, bool]:
    code = line.split("//", 1)[0]
    eot = False
    for ann in re.findall(r"\{([^}]*)\}", code):
        eot = eot or "EOT" in ann.split(",")
    return re.sub(r"\{[^}]*\}", "", code).strip(), eot


def parse(text: str) -> list[Instr]:
    """The instructions of ``iga64 -d`` output; raises :class:`SimulatorGap` for a line outside the
    grammar of the simulated subset."""
    instrs: list[Instr] = []
    labels: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        code, eot = _strip(raw)
        if not code:
            continue
        m = _LABEL.match(code)
        if m:
            labels[m.group(1)] = len(instrs)
            continue
        try:
            instrs.append(_instruction(lineno, code, eot))
        except (ValueError, IndexError) as exc:
            raise SimulatorGap(lineno, code, str(exc)) from None
    for ins in instrs:
        if ins.label is not None:
            if ins.label not in labels:
                raise SimulatorGap(ins.line, ins.text, f"jump to unknown label {ins.label}")
            ins.target = labels[ins.label]
    return instrs


def _instruction(lineno: int, code: str, eot: bool) -> Instr:
    rest = code
    pred = None
    m = _PRED.match(rest)
    if m:
        _, inv, flag = m.groups()
        if flag:
            reg, bit = FLAGS[flag]
            pred = (reg, bit, bool(inv))
        rest = rest[m.end():]
    mnemonic, _, rest = rest.partition(" ")
    op, _, sub = mnemonic.partition(".")
    sat = False
    if sub == "sat":
        sat, sub = True, ""
    ins = Instr(lineno, code, op, sub, pred=pred, sat=sat, eot=eot)
    rest = rest.strip()
    if op == "jmpi":
        ins.label = rest.split()[0]
        return ins
    if op == "sync":
        return ins
    m = _EXEC.match(rest)
    if not m:
        raise ValueError("no execution size")
    ins.exec_size = int(m.group(1))
    ins.channel = int(m.group(2))
    rest = rest[m.end():]
    m = _CMOD.match(rest)
    if m:
        ins.cmod = m.group(1)
        ins.cmod_flag = FLAGS[m.group(2)]
        rest = rest[m.end():]
    toks = rest.split()
    if op == "send" or op == "sendc":
        ins.dst = _send_reg(toks[0])
        ins.srcs = [_send_reg(toks[1]), _send_reg(toks[2])]
        ins.exdesc, ins.desc = int(toks[3], 16), int(toks[4], 16)
        return ins
    if op in ("dpas", "dpasw"):
        ins.dst = _dpas_operand(toks[0])
        ins.srcs = [_dpas_operand(t) for t in toks[1:4]]
        return ins
    if toks[0].startswith("(sat)"):   # how iga64 -d spells the saturate modifier
        ins.sat, toks[0] = True, toks[0][len("(sat)"):]
    ins.dst = _operand(toks[0], dst=True)
    ternary = len(toks) == 4
    ins.srcs = [_operand(t, ternary_src2=ternary and i == 2, exec_size=ins.exec_size)
                for i, t in enumerate(toks[1:])]
    return ins


def _dpas_operand(tok: str) -> Operand:
    name, _, t = tok.partition(":")
    if name == "null":
        return Operand("null", t)
    reg, _, sub = name[1:].partition(".")
    if t not in TYPES:
        raise ValueError(f"dpas type {t!r}")
    return Operand("grf", t, int(reg), int(sub or 0))
