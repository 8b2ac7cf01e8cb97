"""Facts of Xe assembly text (IGA syntax, ``../shared/reference/iga-syntax.md``), one source for the code
generator that writes it and the checkers that read it (``codegen/xe/verify``, ``xesim``).

These are the assembler's spellings, not choices of kdd's lowering: the type
names and their sizes, which of them are floating point, the IR scalar each
IR type is written as, and the flag subregisters.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from kdd.core.ir.types import Scalar

# IGA type names -> (numpy dtype name, bytes). ``bf`` is held as its 16 raw bits, ``tf32`` (a dpas source
# on Xe-HPC) as its 32 raw bits.
TYPES = {"ub": ("uint8", 1), "b": ("int8", 1), "uw": ("uint16", 2), "w": ("int16", 2),
         "ud": ("uint32", 4), "d": ("int32", 4), "uq": ("uint64", 8), "q": ("int64", 8),
         "hf": ("float16", 2), "f": ("float32", 4), "df": ("float64", 8), "bf": ("uint16", 2),
         "tf32": ("uint32", 4)}
SIZES = {name: size for name, (_, size) in TYPES.items()}
FLOAT_TYPES = frozenset({"hf", "bf", "f", "df"})   # the ALU's floating-point types (tf32 is dpas-only)
IMM_VECTOR_TYPES = frozenset({"uv", "v"})           # packed 4-bit immediates, one per lane of eight

# The IGA type of each IR scalar; a bool is kept as a 32-bit mask per lane (0 or all ones).
SCALAR_TYPES = {
    Scalar.S8: "b", Scalar.U8: "ub", Scalar.S16: "w", Scalar.U16: "uw", Scalar.S32: "d", Scalar.U32: "ud",
    Scalar.S64: "q", Scalar.U64: "uq", Scalar.F16: "hf", Scalar.BF16: "bf", Scalar.F32: "f", Scalar.F64: "df",
    Scalar.BOOL: "d",
}

# Flag subregisters by name: (flag register, first bit); each is 16 bits.
FLAGS = {"f0.0": (0, 0), "f0.1": (0, 16), "f1.0": (1, 0), "f1.1": (1, 16)}

_REGISTER = re.compile(r"^(-)?(~)?(\(abs\))?(\(sat\))?(r|acc)(\d+)(?:\.(\d+))?(?:<([^>]*)>)?:(\w+)$")


@dataclass(frozen=True)
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
