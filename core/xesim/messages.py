"""Send message descriptors of Xe-HPG/Xe-HPC: LSC (``ugm``, ``slm``) and the message gateway.

Field positions follow Intel's LSC descriptor format as IGA decodes it
(``MessageDecoderLSC.cpp``): opcode ``[5:0]``, address size ``[8:7]``, data size
``[11:9]``, vector size ``[14:12]``, transpose ``[15]``, cache control
``[19:17]``, response length ``[24:20]``, message length ``[28:25]``, address
type ``[30:29]``. Gateway messages carry their opcode in ``[3:0]`` (0 end of
thread, 4 barrier signal).
"""
from __future__ import annotations

from dataclasses import dataclass

from kdd.core.targets.xe_asm import LSC_DATA

LOAD, STORE = 0x00, 0x04
LOAD_BLOCK2D = 0x03       # load_block2d (Xe-HPC): its block shape and surface are in the header
ATOMIC_IADD, ATOMIC_FADD, FENCE = 0x0C, 0x13, 0x1F
OPS = {LOAD: "load", STORE: "store", ATOMIC_IADD: "atomic_iadd", ATOMIC_FADD: "atomic_fadd", FENCE: "fence"}
ADDR_BYTES = {1: 2, 2: 4, 3: 8}
DATA_NAMES = {0: "d8", 1: "d16", 2: "d32", 3: "d64", 4: "d8u32", 5: "d16u32"}   # data size code -> its name
DATA = {code: LSC_DATA[name] for code, name in DATA_NAMES.items()}   # -> (bytes in memory, in a register slot)
VECTOR = (1, 2, 3, 4, 8, 16, 32, 64)
SCATTERED_VECTOR = 8      # non-transposed messages: vectors of at most 8 elements (16 and more transposed only)

GATEWAY_EOT, GATEWAY_BARRIER = 0x0, 0x4


def bits(value: int, lo: int, n: int) -> int:
    return (value >> lo) & ((1 << n) - 1)


@dataclass(frozen=True)
class Lsc:
    """A decoded LSC descriptor."""

    op: int
    addr_bytes: int
    mem_bytes: int
    reg_bytes: int
    vector: int
    transposed: bool
    rlen: int
    mlen: int
    addr_type: int
    data_code: int

    @property
    def name(self) -> str:
        t = "t" if self.transposed else ""
        v = f"x{self.vector}" if self.vector > 1 or self.transposed else ""
        return f"{OPS.get(self.op, hex(self.op))}.{DATA_NAMES.get(self.data_code, '?')}{v}{t}.a{8 * self.addr_bytes}"


@dataclass(frozen=True)
class Block2DDesc:
    """A decoded ``load_block2d`` descriptor: element bytes, VNNI-transformed, transposed, lengths."""

    elem_bytes: int
    vnni: bool
    transposed: bool
    rlen: int
    mlen: int


def decode_block2d(desc: int) -> Block2DDesc | None:
    """The fields of a ``load_block2d`` descriptor (opcode 3; VNNI transform ``[7]``), None for another
    opcode."""
    if bits(desc, 0, 6) != LOAD_BLOCK2D:
        return None
    d = bits(desc, 9, 3)
    return Block2DDesc(DATA[d][0] if d in (0, 1, 2, 3) else 0, bool(bits(desc, 7, 1)), bool(bits(desc, 15, 1)),
                       bits(desc, 20, 5), bits(desc, 25, 4))


def decode_lsc(desc: int) -> Lsc | str:
    """The descriptor's fields, or why it is outside the simulated subset."""
    op = bits(desc, 0, 6)
    if op not in OPS:
        return f"LSC opcode {op:#x}"
    if op == FENCE:
        return Lsc(op, 0, 0, 0, 1, False, bits(desc, 20, 5), bits(desc, 25, 4), 0, 0)
    a = bits(desc, 7, 2)
    d = bits(desc, 9, 3)
    if a not in ADDR_BYTES:
        return f"LSC address size code {a}"
    if d not in DATA:
        return f"LSC data size code {d}"
    mem, reg = DATA[d]
    at = bits(desc, 29, 2)
    if at != 0:
        return f"LSC address type {at} (only flat addresses are simulated)"
    return Lsc(op, ADDR_BYTES[a], mem, reg, VECTOR[bits(desc, 12, 3)], bool(bits(desc, 15, 1)),
               bits(desc, 20, 5), bits(desc, 25, 4), at, d)
