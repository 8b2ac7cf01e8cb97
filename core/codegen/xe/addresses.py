"""Global message addresses advanced from one another instead of rebuilt from their offsets.

A global message's header holds ``arg + offset`` in 64 bits per lane (``sends.store_header``). The
headers of one loop step, and of consecutive steps, are mostly the same sum of registers plus
different constants (``k + 409600``, then ``k + 614400``; a vector of pixel offsets plus the counter,
then the same plus 640). oneDNN's generator keeps such address payloads live and advances them by the
difference; here a header whose register still holds ``arg + terms + c`` (written since by no line,
nor any of the terms' registers, with no jump or label between) gives the next one as ``held +
(c' - c)``: one 64-bit add on Xe-HPC where the 32-bit offset and the 64-bit address were two (a
vector's 32-bit sum and its constant were two more), ``addc`` + ``add`` on Xe-HPG where they were
three.

Why the difference is exact: the overflow pass rebuilds in 64 bits every address that may wrap, so a
header's 32-bit offset is its true value in every lane, masked or not; a held address is exactly
``arg`` plus it where the high dword took the offset's sign (native 64-bit adds sign-extend a ``:d``
source; Xe-HPG's emulation adds only the carry, which is exact where the offset is not negative: a
header every lane of which an unpredicated message read, or, where a message read it under a mask,
exactly in the lanes the mask enables). Xe-HPG advances only by a difference that is not negative (a
negative one costs the emulation a third instruction), and advances a header exact under a mask only
for messages under that same mask (the B loads of a tile's columns, one bound for them all: oneDNN
keeps these payloads live and steps them).
"""
from __future__ import annotations

from dataclasses import dataclass

from kdd.core.ir.expr import Load, Var, summands
from kdd.core.ir.visitor import post_order

from .isa import Remat
from .operand import Imm, Reg
from .verify import writes


@dataclass
class _Held:
    """``byte``: where the 64-bit addresses are; ``const``: the constant of the sum they hold; ``line``:
    the listing's length when they were written; ``flow``: the emitter's jumps and labels then;
    ``exact``: whether the high dwords took the offsets' signs (see the module docstring): True, False,
    or the mask (a memory-free bool expression) in whose enabled lanes they are exact."""

    byte: int
    const: int
    line: int
    flow: int
    exact: object


def terms(cg, e) -> tuple[tuple, int, Reg | None, tuple] | None:
    """``(register operands, constant, the operand where there is one, (key, operand) pairs)`` of an
    offset that is a sum of variables and constants (``a + b + c``, ``add3``, a broadcast scalar), the
    operands as sorted keys ``(first byte, end byte, type, stride)``; a let that is such a sum itself
    stands for its terms while none of their registers was written since it was defined
    (``HeldAddresses.define``), a recomputed let for its value. None for any other offset."""
    regs: list = []      # (key, register) per term
    parts, const = summands(e)
    for x in parts:
        if not isinstance(x, Var):
            return None
        op = cg.lookup(x.name)
        if isinstance(op, Imm):
            const += int(op.value)
        elif isinstance(op, Remat):
            got = terms(cg, op.value)
            if got is None:
                return None
            regs += got[3]
            const += got[1]
        elif not isinstance(op, Reg) or op.neg:
            return None
        elif (sum_ := cg.addresses.sum_of(cg, x.name, op)) is not None:
            regs += sum_[0]
            const += sum_[1]
        else:
            regs.append(((*op.span(x.type.lanes), op.type.scalar.short, op.stride), op))
    if not regs:
        return None
    return tuple(sorted(k for k, _ in regs)), const, regs[0][1] if len(regs) == 1 else None, tuple(regs)


class HeldAddresses:
    """The 64-bit global addresses the headers hold, by ``(memory, lanes, register terms)``."""

    def __init__(self, rb: int):
        self.rb = rb
        self.held: dict[tuple, list[_Held]] = {}
        self.scanned = 0                      # lines whose writes are in ``written``
        self.written: list[int] = []          # dword of the register file -> the last line writing it (-1)
        self.text_writes: dict[str, range | frozenset[int]] = {}   # a line given as text -> the dwords it writes
        self.sums: dict[str, tuple] = {}      # let -> (its register, (key, operand) terms, constant, line)

    def define(self, cg, name: str, value, op: Reg) -> None:
        """Let ``name``, now in ``op``, is ``value``: where that is a sum of registers and constants,
        the let stands for them in later offsets (:func:`terms`)."""
        got = terms(cg, value)
        if got is not None:
            self.sums[name] = (op, got[3], got[1], len(cg.em.lines))

    def sum_of(self, cg, name: str, op: Reg) -> tuple[tuple, int] | None:
        """The ``(key, operand)`` terms and constant let ``name`` (bound to ``op``) stands for, where
        none of their registers was written since it was defined."""
        got = self.sums.get(name)
        if got is None or got[0] != op:
            return None
        self._scan(cg.em.lines)
        if self._last_write(key for key, _ in got[1]) >= got[3]:
            return None
        return got[1], got[2]

    def _scan(self, lines) -> None:
        written = self.written
        for i in range(self.scanned, len(lines)):
            ln = lines[i]
            if ln.lanes:
                dwords = _dwords(ln.dst, ln.lanes)
            else:   # messages, dpas: the same text again and again in an unrolled loop
                dwords = self.text_writes.get(ln.text)
                if dwords is None:
                    dwords = self.text_writes[ln.text] = _dwords_of(writes(ln.text, self.rb))
            if not dwords:
                continue
            top = dwords[-1] if type(dwords) is range else max(dwords)
            if top >= len(written):
                written.extend([-1] * (top + 1 - len(written)))
            if type(dwords) is range:
                written[dwords.start:dwords.stop] = [i] * len(dwords)
            else:
                for d in dwords:
                    written[d] = i
        self.scanned = len(lines)

    def _written_since(self, start: int, end: int) -> int:
        """The last line that wrote a byte of ``[start, end)`` (-1: none)."""
        return max(self.written[start >> 2:(end + 3) >> 2], default=-1)

    def _last_write(self, spans) -> int:
        """The last line that wrote a byte of any ``(start, end, ...)`` span (-1: none)."""
        return max((self._written_since(sp[0], sp[1]) for sp in spans), default=-1)

    def near(self, cg, key: tuple, const: int, dst: Reg, lanes: int,
             masks: list | None) -> tuple[Reg, int, object] | None:
        """A held address of ``key`` still valid, the difference to add to it for ``const`` and where
        the result is exact (``_Held.exact``); the cheapest one (none to add, in place, else the
        smallest difference). ``masks``: those of the messages that will read ``dst`` (None: not
        known). None where there is none, or where advancing it costs the emulation more than building
        the address."""
        held = self.held.get(key)
        if not held:
            return None
        self._scan(cg.em.lines)
        native = cg.xe.native_int64
        flow = cg.em.flow
        terms_written = self._last_write(key[2])
        free, rb = cg.regs.free_mask, cg.rb
        best = None
        live = []   # the entries that may serve a later header: a jump or a term written since rules one out for good
        for h in held:
            if h.flow != flow or terms_written >= h.line:
                continue
            live.append(h)
            delta = const - h.const
            if not -2**31 <= delta < 2**31 or (not native and (delta < 0 or not _covers(h.exact, masks))):
                continue
            if free[h.byte // rb] >> (h.byte % rb) & 1:   # its first byte is free: the usual case, at once
                continue
            if not _owned(cg, h.byte, h.byte + 8 * lanes) or self._written_since(h.byte, h.byte + 8 * lanes) >= h.line:
                continue
            rank = (h.byte != dst.byte, delta != 0, abs(delta))
            if best is None or rank < best[0]:
                best = (rank, h, delta)
        self.held[key] = live
        return None if best is None else (Reg(best[1].byte, dst.type, 1), best[2], best[1].exact)

    def record(self, cg, key: tuple, const: int, dst: Reg, exact: object) -> None:
        """``dst`` now holds ``arg + terms + const`` (``key``); what it held before is gone."""
        flow = cg.em.flow
        kept = [h for h in self.held.get(key, ()) if h.flow == flow and h.byte != dst.byte]
        self.held[key] = kept + [_Held(dst.byte, const, len(cg.em.lines), flow, exact)]

    def sent(self, hdr: Reg, mask) -> None:
        """A message read the addresses at ``hdr`` under ``mask`` (None: no predicate): every lane it
        enabled had its offset in bounds (not negative), so the carry-only high dwords are exact in
        those lanes (in every lane without a predicate)."""
        for entries in self.held.values():
            for h in entries:
                if h.byte != hdr.byte or h.exact is True:
                    continue
                if mask is None:
                    h.exact = True
                elif h.exact is False and _stable(mask):
                    h.exact = mask


def _stable(mask) -> bool:
    """A mask that means the same wherever it is evaluated in straight-line code: no memory read."""
    return not any(isinstance(n, Load) for n in post_order(mask))


def _covers(exact, masks: list | None) -> bool:
    """Whether an address exact where ``exact`` says is exact in every lane ``masks`` enable."""
    if exact is True:
        return True
    if exact is False or not masks:
        return False
    return all(m is exact or m.is_equal(exact) for m in masks)


def _dwords(dst: Reg | None, lanes: int) -> set[int] | range:
    """The dwords an ALU instruction over ``lanes`` lanes writes into ``dst`` (its ``<max(stride, 1)>``
    region; none for ``null``): what ``verify.writes`` reads from the line's text."""
    if dst is None:
        return range(0)
    size = dst.size
    start = dst.byte - dst.byte % size
    step = max(dst.stride, 1) * size
    if step == size:
        return range(start >> 2, (start + lanes * size + 3) >> 2)
    return {d for i in range(lanes) for d in range((start + i * step) >> 2, (start + i * step + size + 3) >> 2)}


def _dwords_of(nbytes: set[int]) -> range | frozenset[int]:
    """The dwords of a set of bytes (a range where the bytes are one run, as a message's or dpas's are)."""
    if not nbytes:
        return range(0)
    lo, hi = min(nbytes), max(nbytes)
    if hi - lo + 1 == len(nbytes):
        return range(lo >> 2, (hi >> 2) + 1)
    return frozenset(b >> 2 for b in nbytes)


def _owned(cg, start: int, end: int) -> bool:
    """Every byte of ``[start, end)`` belongs to a live allocation (a read of them is a live value's)."""
    rb = cg.rb
    for r in range(start // rb, (end - 1) // rb + 1):
        lo, hi = max(start, r * rb) - r * rb, min(end, (r + 1) * rb) - r * rb
        if cg.regs.free_mask[r] & (((1 << (hi - lo)) - 1) << lo):
            return False
    return True
