"""The one reader of Xe assembly text (IGA syntax, ``../shared/reference/iga-syntax.md``): the lines the
generator writes and the lines ``iga64 -d`` prints, for the checkers that read them (``codegen/xe/verify``
reads the generator's listing, ``xesim`` the disassembly of the binary).

A line is an instruction, a label or nothing (blank, a comment)::

    (W&~f0.1) cmp (8|M0) (lt)f0.0 null<1>:d r4.0<1;1,0>:d -r5.0<0;1,0>:d {I@1}   // a comment
    (W) load.ugm.d32x8t.a64 (1|M0) r20:8 [r2:1]
    (W) send.ugm (1|M0) r22 r21 null:0 0x0 0x0210C580 {$0}
    L320:

:func:`parse_line` splits an instruction into its predicate, mnemonic, execution size and first channel,
condition modifier, operand tokens and whether ``{EOT}`` ends the thread; the other software-scoreboard
annotations (``{I@1}``, ``{$0.src}``) are timing and are dropped. One operand token at a time is read by
:func:`register_token` (a region ``r5.2<8;8,1>:f``, a typed whole register ``r89:hf``),
:func:`register_range` (a message's registers ``r20:8``, an address ``[r4:1]``, ``null:0``),
:func:`null_type`, :func:`flag_token` and :func:`immediate`; :func:`lsc_message` reads an LSC
mnemonic's suffixes (``load.ugm.d32x8t.a64.ca.ca``). This module knows the spelling only: what an
operand means (the bytes a region covers, the value an instruction computes) is each reader's own, so
neither checker depends on the generator's lowering decisions.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .xe_asm import FLOAT_TYPES, IMM_VECTOR_TYPES, TYPES

_LABEL = re.compile(r"^(\w+):$")
_PRED = re.compile(r"^\((W)?&?(~)?(f[01]\.[01])?\)\s*")
_EXEC = re.compile(r"^\((\d+)\|M(\d+)\)\s*")
_CMOD = re.compile(r"^\((\w+)\)(f[01]\.[01])\s+")
_ANNOTATION = re.compile(r"\{([^}]*)\}")
_REGISTER = re.compile(r"^(-)?(~)?(\(abs\))?(\(sat\))?(r|acc)(\d+)(?:\.(\d+))?(?:<([^>]*)>)?:([a-z]\w*)$")
_RANGE = re.compile(r"^(?:\[(r\d+|null)(?::(\d+))?\]|(r\d+|null)(?::(\d+))?)$")
_NULL = re.compile(r"^null(?:<\d+>)?:(\w+)$")
_FLAG = re.compile(r"^(f[01]\.[01])(?:<[^>]*>)?:(uw|w)$")
_LSC = re.compile(r"^(\w+)\.(\w+)\.(d64|d32|d16|d8|d16u32|d8u32)(?:x(\d+)(t?))?\.a(64|32)((?:\.\w+)*)$")


@dataclass(frozen=True, slots=True)
class Instruction:
    """One instruction line: ``code`` is the line without its comment and annotations, ``mnemonic`` the
    opcode with its dotted parts (``dpas.8x8``, ``send.ugm``, ``load.ugm.d32x8t.a64``, ``add.sat``),
    ``operands`` the operand tokens as written (the condition modifier not among them)."""

    code: str
    mnemonic: str
    operands: tuple[str, ...]
    exec_size: int | None = None            # None: not written (``jmpi``, ``sync``)
    channel: int = 0                        # the first channel (``M16``)
    nomask: bool = False                    # ``(W)``
    pred: tuple[str, bool] | None = None    # (flag subregister, inverted)
    cmod: tuple[str, str] | None = None     # (condition, flag subregister): ``(lt)f0.0``
    eot: bool = False                       # ``{EOT}``: the thread ends with this message

    @property
    def op(self) -> str:
        """The mnemonic's first part: ``send`` of ``send.ugm``, ``dpas`` of ``dpas.8x8``."""
        return self.mnemonic.partition(".")[0]


@dataclass(frozen=True, slots=True)
class Label:
    """A label line (``L320:``): the name of the next instruction's offset."""

    name: str


def parse_line(text: str) -> Instruction | Label | None:
    """The instruction or label on one line of IGA text (None: blank or a comment). Raises
    ``ValueError`` naming what it cannot read."""
    code, eot = _strip(text)
    if not code:
        return None
    m = _LABEL.match(code)
    if m:
        return Label(m.group(1))
    rest, nomask, pred = code, False, None
    m = _PRED.match(rest)
    if m:
        nomask, inverted, flag = bool(m.group(1)), bool(m.group(2)), m.group(3)
        pred = (flag, inverted) if flag else None
        rest = rest[m.end():]
    mnemonic, _, rest = rest.partition(" ")
    if not mnemonic or mnemonic.startswith("("):
        raise ValueError("no mnemonic")
    rest = rest.strip()
    exec_size, channel, cmod = None, 0, None
    m = _EXEC.match(rest)
    if m:
        exec_size, channel = int(m.group(1)), int(m.group(2))
        rest = rest[m.end():]
    m = _CMOD.match(rest)
    if m:
        cmod = (m.group(1), m.group(2))
        rest = rest[m.end():]
    return Instruction(code, mnemonic, tuple(rest.split()), exec_size, channel, nomask, pred, cmod, eot)


def _strip(line: str) -> tuple[str, bool]:
    """The code of a line without its comment and annotations, and whether an annotation says EOT."""
    code = line.split("//", 1)[0]
    if "{" not in code:
        return code.strip(), False
    eot = any("EOT" in ann.split(",") for ann in _ANNOTATION.findall(code))
    return _ANNOTATION.sub("", code).strip(), eot


@dataclass(frozen=True, slots=True)
class RegisterToken:
    """A register operand as IGA writes it, ``-(abs)r5.2<8;8,1>:f``: source modifiers (``-`` negate,
    ``~`` invert, ``(abs)``), ``(sat)`` (how ``iga64 -d`` spells a saturating destination), the register
    file (``r`` or ``acc``), register, sub-register (None: not written), the region's numbers as written
    (``<1>``, ``<V;H>``, ``<V;W,H>``; None: no region) and the type name. What a region means (a
    destination's, a ternary source's) is the reader's."""

    file: str
    reg: int
    sub: int | None
    region: tuple[int, ...] | None
    type: str
    neg: bool = False
    inv: bool = False
    abs: bool = False
    sat: bool = False


def register_token(text: str) -> RegisterToken | None:
    """The register operand ``text`` spells (None: it is no register operand, or its region holds
    something other than numbers). Raises nothing: each reader says what it does not read."""
    m = _REGISTER.match(text)
    if m is None:
        return None
    neg, inv, ab, sat, file, reg, sub, region, t = m.groups()
    try:
        numbers = None if region is None else tuple(int(x) for x in re.split(r"[;,]", region))
    except ValueError:
        return None
    return RegisterToken(file, int(reg), None if sub is None else int(sub), numbers, t, bool(neg), bool(inv),
                         bool(ab), bool(sat))


@dataclass(frozen=True, slots=True)
class RegisterRange:
    """Whole registers a message names: ``r20:8`` (``reg`` 20, ``count`` 8), ``[r4:1]`` (an address),
    ``r22`` (no count written), ``null:0`` (``reg`` None)."""

    reg: int | None
    count: int | None
    address: bool = False


def register_range(text: str) -> RegisterRange | None:
    """The registers ``text`` names as a message payload or address (None: it names none that way)."""
    m = _RANGE.match(text)
    if m is None:
        return None
    address = m.group(1) is not None
    name, count = (m.group(1), m.group(2)) if address else (m.group(3), m.group(4))
    return RegisterRange(None if name == "null" else int(name[1:]), None if count is None else int(count), address)


def null_type(text: str) -> str | None:
    """The type of a ``null`` operand (``null<1>:d``, ``null:ud``); None: the token is something else."""
    m = _NULL.match(text)
    return None if m is None else m.group(1)


def flag_token(text: str) -> tuple[str, str] | None:
    """A flag subregister as a 16-bit ALU operand (``f0.0<1>:uw``): (flag subregister, type); None:
    the token is something else."""
    m = _FLAG.match(text)
    return None if m is None else (m.group(1), m.group(2))


@dataclass(frozen=True, slots=True)
class Immediate:
    """An immediate: ``value`` is a Python int (raw bits for floats given in hex) or float."""

    type: str
    value: int | float
    raw_bits: bool = False


def immediate(text: str) -> Immediate:
    """The immediate ``text`` spells (``0x3F800000:f``, ``1.5:f``, ``-3:d``, ``0x76543210:uv``); raises
    ``ValueError`` for an unknown type or a malformed value."""
    value, _, t = text.rpartition(":")
    if t in IMM_VECTOR_TYPES:
        return Immediate(t, int(value, 16))
    if t not in TYPES:
        raise ValueError(f"immediate type {t!r}")
    if t in FLOAT_TYPES:
        if value.lower().startswith("0x"):
            return Immediate(t, int(value, 16), raw_bits=True)
        return Immediate(t, float(value))
    return Immediate(t, int(value, 0))


@dataclass(frozen=True, slots=True)
class LscMessage:
    """An LSC message mnemonic's parts: ``load.ugm.d32x8t.a64.ca.ca`` is the operation ``load`` on the
    shared function ``ugm``, data size ``d32``, ``vector`` 8 (None: not written), transposed, 64-bit
    addresses, cache controls ``("ca", "ca")``."""

    op: str
    sfid: str
    data: str
    vector: int | None
    transposed: bool
    addr_bits: int
    cache: tuple[str, ...] = ()


def lsc_message(mnemonic: str) -> LscMessage | None:
    """The parts of an LSC load, store or atomic mnemonic (None: ``mnemonic`` is no such message)."""
    m = _LSC.match(mnemonic)
    if m is None:
        return None
    op, sfid, data, vector, t, addr, cache = m.groups()
    return LscMessage(op, sfid, data, None if vector is None else int(vector), bool(t), int(addr),
                      tuple(cache.split(".")[1:]))
