"""An independent check of a listing's register use, from the assembly text alone.

It imports nothing of the generator: it reads every IGA line it is given
with ``kdd.core.targets.xe_syntax`` (the reader ``xesim`` reads the
disassembly with) and turns its regions, message payloads and dpas operands
into the bytes the instruction reads and writes, and replays them against the allocator's claims (the
listing's ``allocations``: each value's bytes and the lines it is live on):

1. no two values live on the same line share a byte;
2. every byte an instruction touches belongs to a value live on that line
   (or to ``r0``, which the thread keeps);
3. a message's payload and its address each lie in one value (a message
   never reads or writes a neighbour's bytes), and a load's destination still
   belongs to the same value at the first later line that reads it (its data
   is not lost to another value while in flight).

``verify(listing_dict)`` returns the list of problems (empty when all hold).
"""
from __future__ import annotations

from kdd.core.targets.xe_asm import LSC_DATA, SIZES
from kdd.core.targets.xe_syntax import (Instruction, lsc_message, null_type, parse_line, register_range,
                                        register_token)


def _region_bytes(tok: str, lanes: int, rb: int, is_dst: bool) -> set[int] | None:
    r = register_token(tok)
    if r is None or r.file != "r" or r.sub is None or not r.region or r.abs or (r.neg and r.inv):
        return None
    reg, sub, t = r.reg, r.sub, r.type
    size = SIZES[t]
    parts = list(r.region)
    # <h> (dst, src2) and <v;h>: the first is the lane step; <v;w,h>: rows of w elements h apart, v apart
    v, w, h = parts if len(parts) == 3 else (parts[0], 1, 0)
    start = reg * rb + sub * size
    out = set()
    for i in range(lanes if (v or h or is_dst) else 1):
        b = start + ((i // w) * v + (i % w) * h) * size
        out.update(range(b, b + size))
    return out


def _whole(tok: str, rb: int) -> set[int] | None:
    """The bytes of the registers a message operand names (``r20:8``, ``[r4:1]``, ``r22`` one register)."""
    r = register_range(tok)
    if r is None or r.reg is None:
        return None
    return set(range(r.reg * rb, (r.reg + (r.count or 1)) * rb))


def _message_bytes(op: str, lanes: int) -> tuple[int, int]:
    """Data and address bytes of an LSC message: ``d32xNt`` blocks move N dwords from one address,
    scattered messages one (32-bit slot) element per lane, each with its own address."""
    m = lsc_message(op)
    if m is None:
        raise ValueError(f"message {op}")
    count = m.vector or 1
    unit = LSC_DATA[m.data][1]
    addr = m.addr_bits // 8
    if m.transposed:
        return unit * count, addr
    return unit * count * lanes, addr * lanes


def _first(regs: set[int] | None, nbytes: int) -> set[int]:
    if not regs:
        return set()
    lo = min(regs)
    return set(range(lo, lo + nbytes))


def access(text: str, rb: int) -> tuple[set[int], set[int], str]:
    """``(bytes read, bytes written, kind)`` of one line; kind is ``alu``, ``load``, ``store``,
    ``send`` or ``other``. Raises ``ValueError`` for a line that is no IGA instruction, label or comment."""
    reads, writes, kind, _ = _access(text, rb)
    return reads, writes, kind


def writes(text: str, rb: int) -> set[int]:
    """The bytes one line writes, ``access(text, rb)[1]``, without reading an ALU instruction's sources
    (what a scan of every line for its writes asks)."""
    line = parse_line(text)
    if not isinstance(line, Instruction) or line.mnemonic.startswith(("store", "atomic")):
        return set()    # as _message_access reads them: no register written
    return _instruction_access(line, rb, alu_reads=False)[1]


def _access(text: str, rb: int):
    """``access`` plus the byte sets that must each lie in one value (message payload, address)."""
    line = parse_line(text)
    if not isinstance(line, Instruction):
        return set(), set(), "other", ()
    return _instruction_access(line, rb)


def _instruction_access(line: Instruction, rb: int, alu_reads: bool = True):
    """``_access`` of a parsed instruction; without ``alu_reads`` an ALU instruction's reads are not read
    (empty)."""
    op, lanes, rest = line.mnemonic, line.exec_size or 1, list(line.operands)
    if op.startswith(("load", "store", "atomic")):
        return _message_access(op, rest, lanes, rb)
    if op.startswith("send"):
        dst, src = rest[0], rest[1]
        return _whole(src, rb) or set(), _whole(dst, rb) or set(), "send", ()
    if op in ("jmpi", "sync.bar", "sync.nop"):
        return set(), set(), "other", ()
    if line.op in ("dpas", "dpasw"):
        depth, _, rcount = op.partition(".")[2].partition("x")
        return _dpas_access(int(depth), int(rcount), rest, lanes, rb, alu_reads)
    writes: set[int] = set()
    if rest and not rest[0].startswith("null") and not rest[0].startswith("acc"):
        writes |= _region_bytes(rest[0], lanes, rb, True) or set()
    if not alu_reads:
        return set(), writes, "alu", ()
    reads: set[int] = set()
    for tok in rest[1:]:
        got = _region_bytes(tok, lanes, rb, False)
        if got:
            reads |= got
    return reads, writes, "alu", ()


def _message_access(op: str, rest: list[str], lanes: int, rb: int):
    """A load, store or atomic LSC message's bytes: its data payload and its address payload."""
    if op.startswith("load_block2d"):  # a one-register header; the data is the registers the operand names
        payload, address = _whole(rest[0], rb) or set(), _whole(rest[1], rb) or set()
        return set(address), set(payload), "load", (payload, address)
    if op.startswith("atomic"):
        rest = rest[1:]          # null:0 destination (no return value)
    load = op.startswith("load")
    data, addr = (rest[0], rest[1]) if load else (rest[1], rest[0])
    dbytes, abytes = _message_bytes(op, lanes)
    payload = _first(_whole(data, rb), dbytes) if data != "null:0" else set()
    address = _first(_whole(addr, rb), abytes)
    reads = set(address) | (set() if load else payload)
    writes = set(payload) if load else set()
    return reads, writes, "load" if load else "store", (payload, address)


def _dpas_access(depth: int, rcount: int, rest: list[str], lanes: int, rb: int, reads_too: bool = True):
    """A ``dpas.DxR``'s bytes: it writes the destination's R rows of lanes and reads the accumulator,
    B (D dwords per lane) and A (R rows of D dwords); without ``reads_too`` the reads are left empty."""
    reads: set[int] = set()
    writes: set[int] = set()
    tokens = [register_token(t) for t in rest[:4 if reads_too else 1]]
    regs = [None if t is None or t.file != "r" else t.reg * rb for t in tokens]
    acc = SIZES[null_type(rest[0]) or tokens[0].type]
    sizes = [rcount * lanes * acc, rcount * lanes * acc, depth * lanes * 4, rcount * depth * 4]
    for i, (start, size) in enumerate(zip(regs, sizes)):
        if start is None:
            continue
        (writes if i == 0 else reads).update(range(start, start + size))
    return reads, writes, "alu", ()


def verify(listing: dict) -> list[str]:
    rb = listing["registers"]["reg_bytes"]
    allocs = listing["registers"]["allocations"]
    lines = [ln["text"] for ln in listing["lines"]]
    return _overlaps(allocs) + _replay(lines, allocs, rb)


def _overlaps(allocs: list[dict]) -> list[str]:
    """Check 1: values live at the same time do not overlap."""
    problems = []
    ordered = sorted(allocs, key=lambda a: a["start"])
    for i, a in enumerate(ordered):
        for b in ordered[i + 1:]:
            if b["start"] >= a["start"] + a["bytes"]:
                break
            if a["first_line"] <= b["last_line"] and b["first_line"] <= a["last_line"]:
                problems.append(f"{a['label']} and {b['label']} share bytes while both live "
                                f"(lines {max(a['first_line'], b['first_line']) + 1}..)")
    return problems


def _replay(lines: list[str], allocs: list[dict], rb: int) -> list[str]:
    """Checks 2 and 3: the lines replayed against the owner of each byte, line by line."""
    starts: dict[int, list] = {}
    ends: dict[int, list] = {}
    for a in allocs:
        starts.setdefault(a["first_line"], []).append(a)
        ends.setdefault(a["last_line"], []).append(a)
    owner: dict[int, dict] = {b: {"label": "r0"} for b in range(rb)}
    pending: dict[int, tuple] = {}        # byte -> (load line, value) not yet read
    problems: list[str] = []
    for i, text in enumerate(lines):
        for a in starts.get(i, ()):
            for b in range(a["start"], a["start"] + a["bytes"]):
                owner[b] = a
        problems += _line(i, text, rb, owner, pending)
        for a in ends.get(i, ()):
            for b in range(a["start"], a["start"] + a["bytes"]):
                if owner.get(b) is a:
                    del owner[b]
                    pending.pop(b, None)     # data its value never read (unused halves of slots)
    return problems


def _line(i: int, text: str, rb: int, owner: dict, pending: dict) -> list[str]:
    """The problems of line ``i`` under the byte owners of that line; ``pending`` follows its loads."""
    try:
        reads, writes, kind, parts = _access(text, rb)
    except ValueError as exc:   # the reader of IGA text cannot read the line: nothing on it is checked
        return [f"line {i + 1}: not read ({exc}): {text.strip()}"]
    problems = []
    for part in parts:
        owners = {owner[b]["label"] for b in part if b in owner}
        if len(owners) > 1:
            problems.append(f"line {i + 1}: a message operand spans {', '.join(sorted(owners))}: "
                            f"{text.strip()}")
    # 2. every touched byte belongs to a live value
    stray = sorted(b for b in reads | writes if b not in owner)
    if stray:
        problems.append(f"line {i + 1}: bytes r{stray[0] // rb}.{stray[0] % rb} (+{len(stray) - 1}) belong to "
                        f"no live value: {text.strip()}")
    # 3. loaded data is read by the value it was loaded for
    for b in reads:
        got = pending.pop(b, None)
        if got is not None and owner.get(b) is not got[1]:
            problems.append(f"line {i + 1}: reads r{b // rb} loaded at line {got[0] + 1} for "
                            f"{got[1]['label']}, which no longer owns it")
            break
    for b in writes:
        if kind == "load" and b in owner:
            pending[b] = (i, owner[b])
        else:
            pending.pop(b, None)
    return problems


def address_waits(listing: dict) -> list[str]:
    """Consecutive messages whose addresses share registers written between them: the second message's
    address waits until the first has read its own (headers rotate among a few registers,
    ``allocation.HEADER_ROTATION``, so that consecutive messages need no such wait)."""
    rb = listing["registers"]["reg_bytes"]
    out: list[str] = []
    last: tuple[int, set[int]] | None = None   # the last message's line and address bytes
    written: set[int] = set()                  # bytes written since
    for i, ln in enumerate(listing["lines"]):
        try:
            reads, writes, kind, parts = _access(ln["text"], rb)
        except ValueError as exc:
            out.append(f"line {i + 1}: not read ({exc}): {ln['text'].strip()}")
            continue
        if kind not in ("load", "store", "send"):
            written |= writes
            continue
        address = parts[1] if parts else reads
        if last is not None and address & last[1] & written:
            out.append(f"line {i + 1}: its address is rewritten in the registers line {last[0] + 1}'s message "
                       f"reads its address from: {ln['text'].strip()}")
        last, written = (i, address), set(writes)
    return out
