"""An independent check of a listing's register use, from the assembly text alone.

It imports nothing of the generator: it parses every IGA line it is given
(regions, message payloads, dpas operands) into the bytes the instruction
reads and writes, and replays them against the allocator's claims (the
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

import re

from kdd.core.targets.xe_asm import SIZES, register_token
_EXEC = re.compile(r"\((\d+)\|M0\)")
_WHOLE = re.compile(r"^\[?r(\d+):(\w+)\]?$")
_DPAS = re.compile(r"dpasw?\.(\d+)x(\d+)")


def _region_bytes(tok: str, lanes: int, rb: int, is_dst: bool) -> set[int] | None:
    r = register_token(tok)
    if r is None or r.file != "r" or r.sub is None or not r.region or r.abs or (r.neg and r.inv):
        return None
    reg, sub, t = r.reg, r.sub, r.type
    size = SIZES[t]
    parts = list(r.region)
    stride = parts[0]                      # <h> (dst, src2), <v;w,h> and <v;h>: the first is the lane step
    if len(parts) == 3 and parts[1] != 1:
        stride = parts[2]
    start = reg * rb + sub * size
    out = set()
    for i in range(lanes if (stride or is_dst) else 1):
        b = start + i * stride * size
        out.update(range(b, b + size))
    return out


def _whole(tok: str, rb: int) -> set[int] | None:
    m = _WHOLE.match(tok)
    if m is None:
        return None
    reg, count = int(m.group(1)), m.group(2)
    n = int(count) if count.isdigit() else 1
    return set(range(reg * rb, (reg + n) * rb))


_LSC = re.compile(r"\.d(64|32|16u32|8u32)(?:x(\d+)(t?))?\.a(64|32)")


def _message_bytes(op: str, lanes: int) -> tuple[int, int]:
    """Data and address bytes of an LSC message: ``d32xNt`` blocks move N dwords from one address,
    scattered messages one (32-bit slot) element per lane, each with its own address."""
    m = _LSC.search(op)
    count = int(m.group(2)) if m.group(2) else 1
    unit = 8 if m.group(1) == "64" else 4
    addr = int(m.group(4)) // 8
    if m.group(3):
        return unit * count, addr
    return unit * count * lanes, addr * lanes


def _first(regs: set[int] | None, nbytes: int) -> set[int]:
    if not regs:
        return set()
    lo = min(regs)
    return set(range(lo, lo + nbytes))


def access(text: str, rb: int) -> tuple[set[int], set[int], str]:
    """``(bytes read, bytes written, kind)`` of one line; kind is ``alu``, ``load``, ``store``,
    ``send`` or ``other``."""
    reads, writes, kind, _ = _access(text, rb)
    return reads, writes, kind


def _access(text: str, rb: int):
    """``access`` plus the byte sets that must each lie in one value (message payload, address)."""
    body = text.split("//")[0].strip()
    if not body or body.endswith(":"):
        return set(), set(), "other", ()
    body = re.sub(r"\{[^}]*\}", "", body)
    toks = body.split()
    if toks[0].startswith("("):
        toks = toks[1:]
    op = toks[0]
    m = _EXEC.search(body)
    lanes = int(m.group(1)) if m else 1
    rest = [t for t in toks[2:] if not t.startswith("(") or t.startswith("(sat)")]
    reads: set[int] = set()
    writes: set[int] = set()
    if op.startswith("load_block2d"):  # a one-register header; the data is the registers the operand names
        payload, address = _whole(rest[0], rb) or set(), _whole(rest[1], rb) or set()
        return set(address), set(payload), "load", (payload, address)
    if op.startswith(("load", "store", "atomic")):
        if op.startswith("atomic"):
            rest = rest[1:]          # null:0 destination (no return value)
        data, addr = (rest[0], rest[1]) if op.startswith("load") else (rest[1], rest[0])
        dbytes, abytes = _message_bytes(op, lanes)
        payload = _first(_whole(data, rb), dbytes) if data != "null:0" else set()
        address = _first(_whole(addr, rb), abytes)
        (writes if op.startswith("load") else reads).update(payload)
        reads.update(address)
        return reads, writes, "load" if op.startswith("load") else "store", (payload, address)
    if op.startswith("send"):
        dst, src = rest[0], rest[1]
        if dst != "null":
            writes |= _whole(dst + ":1", rb) or set()
        reads |= _whole(src + ":1", rb) or set()
        return reads, writes, "send", ()
    if op in ("jmpi", "sync.bar", "sync.nop"):
        return reads, writes, "other", ()
    d = _DPAS.match(op)
    if d:
        depth, rcount = int(d.group(1)), int(d.group(2))
        regs = [int(re.match(r"r(\d+)", t).group(1)) * rb if t.startswith("r") else None for t in rest[:4]]
        acc = SIZES[rest[0].split(":")[1]]
        sizes = [rcount * lanes * acc, rcount * lanes * acc, depth * lanes * 4, rcount * depth * 4]
        for i, (start, size) in enumerate(zip(regs, sizes)):
            if start is None:
                continue
            (writes if i == 0 else reads).update(range(start, start + size))
        return reads, writes, "alu", ()
    if rest and not rest[0].startswith("null") and not rest[0].startswith("acc"):
        writes |= _region_bytes(rest[0], lanes, rb, True) or set()
    for tok in rest[1:]:
        got = _region_bytes(tok, lanes, rb, False)
        if got:
            reads |= got
    return reads, writes, "alu", ()


def verify(listing: dict) -> list[str]:
    rb = listing["registers"]["reg_bytes"]
    allocs = listing["registers"]["allocations"]
    lines = [ln["text"] for ln in listing["lines"]]
    problems: list[str] = []
    # 1. values live at the same time do not overlap
    ordered = sorted(allocs, key=lambda a: a["start"])
    for i, a in enumerate(ordered):
        for b in ordered[i + 1:]:
            if b["start"] >= a["start"] + a["bytes"]:
                break
            if a["first_line"] <= b["last_line"] and b["first_line"] <= a["last_line"]:
                problems.append(f"{a['label']} and {b['label']} share bytes while both live "
                                f"(lines {max(a['first_line'], b['first_line']) + 1}..)")
    # owner of each byte, line by line
    starts: dict[int, list] = {}
    ends: dict[int, list] = {}
    for a in allocs:
        starts.setdefault(a["first_line"], []).append(a)
        ends.setdefault(a["last_line"], []).append(a)
    owner: dict[int, dict] = {b: {"label": "r0"} for b in range(rb)}
    pending: dict[int, tuple] = {}        # byte -> (load line, value) not yet read
    for i, text in enumerate(lines):
        for a in starts.get(i, ()):
            for b in range(a["start"], a["start"] + a["bytes"]):
                owner[b] = a
        reads, writes, kind, parts = _access(text, rb)
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
        for a in ends.get(i, ()):
            for b in range(a["start"], a["start"] + a["bytes"]):
                if owner.get(b) is a:
                    del owner[b]
                    pending.pop(b, None)     # data its value never read (unused halves of slots)
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
        reads, writes, kind, parts = _access(ln["text"], rb)
        if kind not in ("load", "store", "send"):
            written |= writes
            continue
        address = parts[1] if parts else reads
        if last is not None and address & last[1] & written:
            out.append(f"line {i + 1}: its address is rewritten in the registers line {last[0] + 1}'s message "
                       f"reads its address from: {ln['text'].strip()}")
        last, written = (i, address), set(writes)
    return out
