"""Facts of Xe assembly text (IGA syntax, ``../shared/reference/iga-syntax.md``), one source for the code
generator that writes it and the checkers that read it (``codegen/xe/verify``, ``xesim``).

These are the assembler's spellings, not choices of kdd's lowering: the type
names and their sizes, which of them are floating point, the IR scalar each
IR type is written as, the flag subregisters, the LSC messages' data
sizes, and the pipe each opcode issues to. ``xe_syntax`` reads the text
these facts spell.
"""
from __future__ import annotations

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

# LSC data sizes (a message mnemonic's ``.d32``): (bytes in memory, bytes of the register slot per element).
# ``d8u32``/``d16u32`` widen each element to a dword slot; ``d8``/``d16`` are the 2D block loads' sizes.
LSC_DATA = {"d8": (1, 1), "d16": (2, 2), "d32": (4, 4), "d64": (8, 8), "d8u32": (1, 4), "d16u32": (2, 4)}

# The pipes an instruction issues to (seed 002's table), and the opcodes (a mnemonic's first part) that issue
# to one whatever their types; every other (ALU) opcode issues to the float pipe when its destination (or,
# without one, its first source) is of a floating-point type and to the int pipe otherwise.
PIPES = ("float", "int", "xmx", "send", "control")
FIXED_PIPES = {"dpas": "xmx", "dpasw": "xmx",
               "send": "send", "sendc": "send", "load": "send", "store": "send", "load_block2d": "send",
               "atomic_fadd": "send", "atomic_iadd": "send", "fence": "send",
               "jmpi": "control", "sync": "control", "if": "control", "else": "control", "endif": "control"}


def pipe(mnemonic: str, type_name: str) -> str:
    """The pipe of an instruction ``mnemonic`` whose destination (or first source) has IGA type ``type_name``."""
    fixed = FIXED_PIPES.get(mnemonic.partition(".")[0])
    return fixed or ("float" if type_name in FLOAT_TYPES else "int")
