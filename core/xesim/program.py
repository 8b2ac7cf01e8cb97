"""The program the simulator runs: ``iga64 -d`` text parsed into instructions.

The text is what Intel's disassembler prints for the binary, so what runs is
what the binary encodes. One instruction per line::

    (W&~f0.1) add (8|M0) r3.0<1>:d r4.0<1;1,0>:d -r5.0<0;1,0>:d {I@1}
    (W) send.ugm (1|M0) r22 r21 null:0 0x0 0x0210C580 {$0}
    (W) dpas.8x8 (8|M0) r3:f r3:f r89:hf r40.0:hf
    (W&f0.0) jmpi L320

``kdd.core.targets.xe_syntax`` reads the lines and their operand tokens (the
one reader of IGA text, shared with the generator's register verifier); this
module gives them the simulator's meaning: regions as element steps, flags as
register bits, a jump's label as an instruction index. Software-scoreboard
annotations are timing, not semantics, and are dropped; ``{EOT}`` is kept. A
line the simulator cannot read is a :class:`SimulatorGap` naming the line.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from kdd.core.targets.xe_asm import FLAGS, TYPES
from kdd.core.targets.xe_syntax import (Instruction, Label, flag_token, immediate, null_type, parse_line,
                                        register_range, register_token)

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


_CONDITIONS = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "z", "nz"})   # the simulated condition modifiers


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


def _operand(tok: str, *, dst: bool = False, ternary_src2: bool = False, exec_size: int = 1):
    t = null_type(tok)
    if t is not None:
        return Operand("null", t)
    flag = flag_token(tok)   # a flag subregister as a 16-bit ALU operand (``f0.0<0;1,0>:uw``)
    if flag is not None:
        reg, bit = FLAGS[flag[0]]
        return Operand("flag", flag[1], reg, bit)
    r = register_token(tok)
    if r is not None and not (r.inv or r.sat):  # neither is simulated: an inverted source, (sat) on a source
        if r.type not in TYPES:
            raise ValueError(f"type {r.type!r}")
        return Operand("grf" if r.file == "r" else "acc", r.type, r.reg, r.sub or 0,
                       _region(r.region, dst, ternary_src2, exec_size), r.neg, r.abs)
    return immediate(tok)


def _send_reg(tok: str) -> Operand:
    r = register_range(tok)
    if r is None or r.address:
        raise ValueError(f"send operand {tok!r}")
    if r.reg is None:
        return Operand("null", "ud", length=r.count or 0)
    return Operand("grf", "ud", r.reg, length=r.count or 0)


def parse(text: str) -> list[Instr]:
    """The instructions of ``iga64 -d`` output; raises :class:`SimulatorGap` for a line outside the
    grammar of the simulated subset."""
    instrs: list[Instr] = []
    labels: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        try:
            line = parse_line(raw)
        except ValueError as exc:
            raise SimulatorGap(lineno, raw.split("//", 1)[0].strip(), str(exc)) from None
        if isinstance(line, Label):
            labels[line.name] = len(instrs)
        elif line is not None:
            try:
                instrs.append(_instruction(lineno, line))
            except (ValueError, IndexError) as exc:
                raise SimulatorGap(lineno, line.code, str(exc)) from None
    for ins in instrs:
        if ins.label is not None:
            if ins.label not in labels:
                raise SimulatorGap(ins.line, ins.text, f"jump to unknown label {ins.label}")
            ins.target = labels[ins.label]
    return instrs


def _instruction(lineno: int, line: Instruction) -> Instr:
    op, _, sub = line.mnemonic.partition(".")
    sat = False
    if sub == "sat":
        sat, sub = True, ""
    pred = None
    if line.pred is not None:
        flag, inverted = line.pred
        pred = (*FLAGS[flag], inverted)
    ins = Instr(lineno, line.code, op, sub, pred=pred, sat=sat, eot=line.eot)
    toks = list(line.operands)
    if op == "jmpi":
        ins.label = toks[0]
        return ins
    if op == "sync":
        return ins
    if line.exec_size is None:
        raise ValueError("no execution size")
    if line.channel not in (0, 8, 16, 24):
        raise ValueError(f"first channel M{line.channel}")
    ins.exec_size, ins.channel = line.exec_size, line.channel
    if line.cmod is not None:
        if line.cmod[0] not in _CONDITIONS:
            raise ValueError(f"condition modifier ({line.cmod[0]})")
        ins.cmod = line.cmod[0]
        ins.cmod_flag = FLAGS[line.cmod[1]]
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
    t = null_type(tok)
    if t is not None:
        return Operand("null", t)
    r = register_token(tok)
    if r is None or r.file != "r" or r.region is not None or r.neg or r.inv or r.abs or r.sat:
        raise ValueError(f"dpas operand {tok!r}")
    if r.type not in TYPES:
        raise ValueError(f"dpas type {r.type!r}")
    return Operand("grf", r.type, r.reg, r.sub or 0)
