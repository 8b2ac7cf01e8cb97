"""The GRF allocator: whole-register ranges for buffers, sub-registers for scalars.

The register file is ``nregs`` GRFs of ``reg_bytes``. Buffers (message
payloads, matrix operands, anything of a register or more) get contiguous,
register-aligned ranges, first fit, optionally on a preferred bank (dpas
operands: ``bank = start register % banks``, so that A and B are read from
different banks). Scalars and short vectors get sub-registers aligned to
their size, packed into registers that already hold others. The allocator
keeps the live set and the number of registers holding any live byte, the
figure every assembly line reports.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(eq=False)
class Allocation:
    """A live value's bytes: ``[start, start + size)`` of the register file."""

    label: str
    category: str
    start: int
    size: int
    knob: str | None = None
    first_line: int = 0        # lines [first_line, last_line] of the listing see it live
    last_line: int = -1

    @property
    def end(self) -> int:
        return self.start + self.size


class NoRoom(Exception):
    """No free range of the asked shape (the caller turns it into ``OutOfRegisters``)."""


class RegisterFile:
    """Free/used bytes of every GRF and the live allocations."""

    def __init__(self, nregs: int, reg_bytes: int, banks: int = 2):
        self.nregs, self.reg_bytes, self.banks = nregs, reg_bytes, banks
        self.used = [0] * nregs          # live bytes per register
        self.free_mask = [(1 << reg_bytes) - 1] * nregs   # bit i set: byte i free
        self.live: dict[int, Allocation] = {}
        self.history: list[Allocation] = []
        self.busy = 0                   # registers with at least one live byte
        self.lines: list = []           # the emitted lines (their count is the clock)

    # -- bookkeeping ----------------------------------------------------------------------
    def _take(self, a: Allocation) -> Allocation:
        rb = self.reg_bytes
        for r in range(a.start // rb, (a.end - 1) // rb + 1):
            lo = max(a.start, r * rb) - r * rb
            hi = min(a.end, (r + 1) * rb) - r * rb
            bits = ((1 << (hi - lo)) - 1) << lo
            if self.free_mask[r] & bits != bits:
                raise AssertionError(f"allocating {a.label}: bytes of r{r} already taken")
            self.free_mask[r] &= ~bits
            if self.used[r] == 0:
                self.busy += 1
            self.used[r] += hi - lo
        self.live[id(a)] = a
        a.first_line = len(self.lines)
        self.history.append(a)
        return a

    def release(self, a: Allocation) -> None:
        if self.live.pop(id(a), None) is None:
            return
        a.last_line = len(self.lines) - 1
        rb = self.reg_bytes
        for r in range(a.start // rb, (a.end - 1) // rb + 1):
            lo = max(a.start, r * rb) - r * rb
            hi = min(a.end, (r + 1) * rb) - r * rb
            self.free_mask[r] |= ((1 << (hi - lo)) - 1) << lo
            self.used[r] -= hi - lo
            if self.used[r] == 0:
                self.busy -= 1

    def close(self) -> None:
        """Stamps the values still live at the end (they are live through the last line)."""
        for a in self.live.values():
            a.last_line = len(self.lines) - 1

    def place(self, start: int, nbytes: int, label: str, category: str, knob: str | None = None) -> Allocation:
        """``nbytes`` (whole registers) at ``start`` exactly (a value taking over another's registers)."""
        count = max(1, -(-nbytes // self.reg_bytes))
        return self._take(Allocation(label, category, start, count * self.reg_bytes, knob))

    def reserve(self, reg: int, count: int, label: str) -> Allocation:
        """Fixed registers (the thread payload, arguments, the end-of-thread copy)."""
        return self._take(Allocation(label, "reserved", reg * self.reg_bytes, count * self.reg_bytes))

    # -- allocation -----------------------------------------------------------------------
    def alloc_regs(self, nbytes: int, label: str, category: str, knob: str | None = None,
                   bank: int | None = None, limit: int | None = None,
                   avoid: frozenset[int] = frozenset()) -> Allocation:
        """Whole registers, contiguous; ``bank`` prefers a start register with that bank; registers in
        ``avoid`` are taken only where no free range lies outside them."""
        if avoid:
            try:
                return self._alloc_regs(nbytes, label, category, knob, bank, limit, avoid)
            except NoRoom:
                pass
        return self._alloc_regs(nbytes, label, category, knob, bank, limit, frozenset())

    def _alloc_regs(self, nbytes, label, category, knob, bank, limit, avoid) -> Allocation:
        rb, full = self.reg_bytes, (1 << self.reg_bytes) - 1
        count = max(1, -(-nbytes // rb))
        top = self.nregs if limit is None else limit
        fallback = None
        run = 0
        for r in range(top):
            run = run + 1 if self.free_mask[r] == full and r not in avoid else 0
            if run >= count:
                start = r - count + 1
                if bank is None or start % self.banks == bank:
                    return self._take(Allocation(label, category, start * rb, count * rb, knob))
                if fallback is None:
                    fallback = start
        if fallback is not None:
            return self._take(Allocation(label, category, fallback * rb, count * rb, knob))
        raise NoRoom(f"{count} registers for {label}")

    def alloc_sub(self, nbytes: int, label: str, category: str, knob: str | None = None,
                  avoid: frozenset[int] = frozenset()) -> Allocation:
        """A sub-register range aligned to its (power-of-two rounded) size, inside one register,
        in a register that is already in use if one has room, else in an empty one outside ``avoid``
        if there is one."""
        rb = self.reg_bytes
        if nbytes > rb:
            return self.alloc_regs(nbytes, label, category, knob, avoid=avoid)
        align = 1
        while align < nbytes:
            align *= 2
        bits = (1 << nbytes) - 1
        empty = None
        full = (1 << rb) - 1
        for r in range(self.nregs):
            fm = self.free_mask[r]
            if fm == 0:
                continue
            if fm == full:
                if empty is None or (empty in avoid and r not in avoid):
                    empty = r
                continue
            for lo in range(0, rb - nbytes + 1, align):
                if (fm >> lo) & bits == bits:
                    return self._take(Allocation(label, category, r * rb + lo, nbytes, knob))
        if empty is None:
            raise NoRoom(f"{nbytes} bytes for {label}")
        return self._take(Allocation(label, category, empty * rb, nbytes, knob))

    def alloc_head(self, nbytes: int, label: str, category: str, knob: str | None = None,
                   avoid: frozenset[int] = frozenset()) -> Allocation:
        """``nbytes`` at the start of a register (a SIMD1 message's address, read from dword 0 of its
        header register): one whose first bytes are free while others hold values first, else an empty
        one outside ``avoid`` if there is one; the rest of the register stays free for other scalars."""
        bits = (1 << nbytes) - 1
        full = (1 << self.reg_bytes) - 1
        empty = None
        for r in range(self.nregs):
            fm = self.free_mask[r]
            if fm & bits != bits:
                continue
            if fm != full:
                return self._take(Allocation(label, category, r * self.reg_bytes, nbytes, knob))
            if empty is None or (empty in avoid and r not in avoid):
                empty = r
        if empty is None:
            raise NoRoom(f"{nbytes} bytes at a register's start for {label}")
        return self._take(Allocation(label, category, empty * self.reg_bytes, nbytes, knob))

    def free_regs(self) -> int:
        return self.nregs - self.busy
