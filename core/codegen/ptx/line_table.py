"""The line table ptxas writes into a cubin (``-lineinfo``): SASS offset -> PTX line, read from the ELF.

``nvdisasm --print-line-info`` prints the same table beside the disassembly,
but it cannot do so in the run that prints live register ranges, and a
second nvdisasm run costs as much as the first. So the table is decoded here
from the cubin's ``.debug_line`` section: an ELF64 little-endian file whose
section holds DWARF (version 2 to 4) line-number programs. Rows are
(address, line) pairs; an instruction takes the line of the last row at or
before its offset within its sequence. Addresses are offsets in the kernel's
own text section, as nvdisasm prints them: the sequence's start is relocated
against the kernel's symbol plus 0, which this module does not apply, so it
reads cubins of one kernel (what kdd emits). ``tests/core/codegen/test_ptx.py``
compares it with nvdisasm's ``--print-line-info``.
"""
from __future__ import annotations

import bisect
import struct


class LineTableError(ValueError):
    """The cubin has no readable line table."""


def _sections(elf: bytes) -> dict[str, bytes]:
    if elf[:4] != b"\x7fELF" or len(elf) < 0x40 or elf[4] != 2 or elf[5] != 1:
        raise LineTableError("not a 64-bit little-endian ELF file")
    try:
        shoff, = struct.unpack_from("<Q", elf, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
        headers = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
        names = headers[shstrndx]
        strtab = elf[names[4]: names[4] + names[5]]
        out = {}
        for h in headers:
            name = strtab[h[0]: strtab.index(b"\0", h[0])].decode()
            out[name] = elf[h[4]: h[4] + h[5]] if h[1] != 8 else b""   # SHT_NOBITS has no bytes
    except (IndexError, ValueError, struct.error) as exc:
        raise LineTableError(f"a damaged ELF section table ({exc})") from None
    return out


def _leb128(data: bytes, i: int, signed: bool = False) -> tuple[int, int]:
    """The (unsigned, or ``signed``) LEB128 number at ``data[i]`` and the index after it."""
    value = shift = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return (value - (1 << shift) if signed and b & 0x40 else value), i


def _program_rows(data: bytes, start: int) -> tuple[list[list[tuple[int, int]]], int]:
    """The sequences of (address, line) rows of the line-number program at ``start``, and where it ends."""
    length, = struct.unpack_from("<I", data, start)
    offset = 4
    if length == 0xFFFFFFFF:
        length, = struct.unpack_from("<Q", data, start + 4)
        offset = 12
    end = start + offset + length
    i = start + offset
    version, = struct.unpack_from("<H", data, i)
    if not 2 <= version <= 4:
        raise LineTableError(f"DWARF line table version {version} (2 to 4 are read)")
    i += 2
    header_length, = struct.unpack_from("<Q" if offset == 12 else "<I", data, i)
    i += 8 if offset == 12 else 4
    program = i + header_length
    min_inst = data[i]
    i += 1
    if version >= 4:
        i += 1                              # maximum operations per instruction (VLIW only)
    i += 1                                  # default_is_stmt: every row counts here
    line_base, line_range, opcode_base = struct.unpack_from("<bBB", data, i)
    i += 3
    arg_counts = data[i: i + opcode_base - 1]
    sequences, rows = [], []
    address, line = 0, 1
    i = program
    while i < end:
        op = data[i]
        i += 1
        if op >= opcode_base:               # special: advance both and add a row
            adjusted = op - opcode_base
            address += adjusted // line_range * min_inst
            line += line_base + adjusted % line_range
            rows.append((address, line))
        elif op == 0:                       # extended
            size, i = _leb128(data, i)
            sub = data[i]
            if sub == 1:                    # end_sequence
                rows.append((address, line))
                sequences.append(rows)
                rows, address, line = [], 0, 1
            elif sub == 2:                  # set_address
                address = int.from_bytes(data[i + 1: i + size], "little")
            i += size
        elif op == 1:                       # copy
            rows.append((address, line))
        elif op == 2:                       # advance_pc
            n, i = _leb128(data, i)
            address += n * min_inst
        elif op == 3:                       # advance_line
            n, i = _leb128(data, i, signed=True)
            line += n
        elif op == 8:                       # const_add_pc
            address += (255 - opcode_base) // line_range * min_inst
        elif op == 9:                       # fixed_advance_pc
            n, = struct.unpack_from("<H", data, i)
            i += 2
            address += n
        else:                               # set_file, set_column, flags, set_isa: skip the arguments
            for _ in range(arg_counts[op - 1]):
                _, i = _leb128(data, i)
    if rows:
        sequences.append(rows)
    return sequences, end


def line_rows(cubin: bytes) -> list[list[tuple[int, int]]]:
    """Every sequence of (address, 1-based line) rows in the cubin's ``.debug_line``."""
    data = _sections(cubin).get(".debug_line")
    if not data:
        raise LineTableError("the cubin has no .debug_line section (ptxas -lineinfo writes it)")
    out, i = [], 0
    try:
        while i < len(data):
            sequences, i = _program_rows(data, i)
            out.extend(sequences)
    except (IndexError, struct.error) as exc:
        raise LineTableError(f"truncated .debug_line ({exc})") from None
    return out


def lines_at(cubin: bytes, offsets: list[int]) -> dict[int, int]:
    """Instruction offset -> 1-based source line for each of ``offsets`` a sequence covers."""
    out: dict[int, int] = {}
    for rows in line_rows(cubin):
        addresses = [a for a, _ in rows]
        last = addresses[-1]
        for off in offsets:
            if addresses[0] <= off < last:
                out[off] = rows[bisect.bisect_right(addresses, off) - 1][1]
    return out
