"""Program points, live intervals and roles of the values a kernel keeps in registers.

``events(body)`` flattens a statement into the event sequence the lowering
visits (``let``/``end_let``, ``for``/``end_for``, ``if``/``else``/``end_if``,
``alloc``/``end_alloc``, ``group``/``end_group``, ``store``, ``call``); an
event's index is its *program point*. ``analyze`` walks the same sequence
once and gives every register value (a let variable, a loop variable, a
``grf`` buffer) the first and last point it is needed at:

- from its first access to its last access, with buffers allocated at their
  first access rather than at their ``alloc`` (builders allocate at the top);
- a value used inside a loop and defined before it stays live to the loop's
  end; a buffer whose first access in a loop is a read or a conditional write
  (its value may come from the previous iteration) is live over the whole loop;
- a let that copies a register buffer (``k = k_reg[0]``, a loop-carried
  counter read at the top of a step) *aliases* it where nothing writes the
  buffer while the let is live, or only a store as the let's last read whose
  one instruction reads its operands before it writes (``k_reg[0] = k + 1``):
  the let reads the buffer's registers, no ``mov`` (``aliases``), and the
  buffer stays live to the let's last use.

It also records what each buffer is used for (``roles``): accumulators, A/B
operands, message headers (and which memory they address), payloads.
Everything is iterative: let chains are thousands deep.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kdd.core.ir.expr import Binary, IntImm, Load, Op, Ternary, Var
from kdd.core.ir.funcs import (Barrier, BarrierSignal, Dp4a, Dpas, Eltwise, Mad, Reduce, Reorder, Send, Send2D, SendOp,
                               always_enabled)
from kdd.core.ir.stmt import Alloc, For, FuncCall, Group, If, Let, MemKind, Seq, Store


_FLOW = frozenset(("for", "end_for", "if", "else", "end_if"))   # events where the emitter jumps or labels


def events(root):
    """Yields ``(kind, node)`` in lowering order."""
    stack = [("s", root)]
    while stack:
        kind, x = stack.pop()
        if kind != "s":
            yield kind, x
            continue
        t = type(x)
        if t is Seq:
            stack.extend(("s", s) for s in reversed(x.stmts))
        elif t is Let:
            yield "let", x
            stack += [("end_let", x), ("s", x.body)]
        elif t is For:
            yield "for", x
            stack += [("end_for", x), ("s", x.body)]
        elif t is If:
            yield "if", x
            stack.append(("end_if", x))
            if x.else_ is not None:
                stack += [("s", x.else_), ("else", x)]
            stack.append(("s", x.then))
        elif t is Alloc:
            yield "alloc", x
            stack += [("end_alloc", x), ("s", x.body)]
        elif t is Group:
            yield "group", x
            stack += [("end_group", x), ("s", x.body)]
        elif t is Store:
            yield "store", x
        elif t is FuncCall:
            yield "call", x
        else:
            raise TypeError(f"unknown statement {t.__name__}")


def _const(e):
    return e.value if isinstance(e, IntImm) else None


def call_buffers(call: FuncCall) -> tuple[list[tuple], list]:
    """``([(buffer name, 'r'|'w', written byte range or None), ...], value expressions read)`` of one
    function call. A write's range is given where it is known exactly (reads count as whole-buffer)."""
    f, a = call.func, call.ops
    if isinstance(f, Send):
        values = [a.mem_offset, a.reg_offset, a.mask]
        if f.op is SendOp.LOAD:
            off = _const(a.reg_offset)
            rng = None if off is None else (off, off + f.elems * f.type.size)
            if not always_enabled(a.mask):  # masked-off elements keep the destination's bytes: it is read too
                return [(a.reg.name, "r", None), (a.reg.name, "w", rng)], values
            return [(a.reg.name, "w", rng)], values
        if f.op is SendOp.ATOMIC_FETCH_ADD:  # adds the register's values and returns the old ones there
            off = _const(a.reg_offset)
            rng = None if off is None else (off, off + f.elems * f.type.size)
            return [(a.reg.name, "r", None), (a.reg.name, "w", rng)], values
        return [(a.reg.name, "r", None)], values
    if isinstance(f, Send2D):  # out-of-surface elements are zeros: every destination byte is written
        off = _const(a.reg_offset)
        rng = None if off is None else (off, off + f.elems * f.type.size)
        return [(a.reg.name, "w", rng)], [a.base, a.surface_width, a.surface_height, a.pitch, a.x, a.y,
                                          a.reg_offset]
    if isinstance(f, (Dpas, Mad, Dp4a)):
        off = _const(a.dst_offset)
        if isinstance(f, Dpas):
            size = f.rcount * f.simd * f.dst_type.size
        else:
            size = f.simd * (f.dst_type.size if isinstance(f, Mad) else 4)
        rng = None if off is None else (off, off + size)
        return [(a.src0.name, "r", None), (a.src1.name, "r", None), (a.src2.name, "r", None),
                (a.dst.name, "w", rng)], [a.dst_offset, a.src0_offset, a.src1_offset, a.src2_offset]
    if isinstance(f, (Reorder, Reduce)):
        off = _const(a.dst_offset)
        rng = None
        if off is not None:
            lay = f.dst_layout
            rng = (off + lay.offset * lay.dtype.size, off + lay.size_bytes())
        return [(a.src.name, "r", None), (a.dst.name, "w", rng)], [a.src_offset, a.dst_offset]
    if isinstance(f, Eltwise):
        return [(a.buf.name, "r", None), (a.buf.name, "w", None)], [a.offset]
    return [], list(a)


@dataclass
class _Loop:
    """A loop open during the liveness walk: where it starts and the keys it touches."""

    start: int
    first: dict = field(default_factory=dict)   # key -> 'r' | 'w' (first access inside the loop)
    keys: set = field(default_factory=set)
    if_depth: int = 0


@dataclass
class Liveness:
    """``first[key]``/``last[key]``: program points; keys are ``('buf', name)`` and
    ``('var', def point)``. ``starts[p]``/``ends[p]``: keys allocated before / freed after
    point ``p``. ``roles[name]``: uses of a buffer. ``headers[name]``: ``(space, memory
    buffer name, kind)`` of the sends whose address a header buffer holds."""

    first: dict
    last: dict
    starts: dict
    ends: dict
    roles: dict
    headers: dict
    var_keys: dict          # id(Let/For node) at its def point -> key
    points: int
    allocs: dict            # grf buffer name -> its Alloc statement
    free: set               # names read without a binding (thread and group ids, arguments)
    signals: bool = False   # the kernel signals a barrier (its message header is built once)
    block2d: frozenset = frozenset()   # the surfaces and blocks of the 2D block loads (sends.block2d_constants)
    aliases: frozenset = frozenset()   # (id(Let), point) of the lets that read their buffer's registers
    slm: dict = field(default_factory=dict)     # SLM buffer name -> (base byte, size), in allocation order
    heads: dict = field(default_factory=dict)   # let key -> (SLM base, kind) of a SIMD1 header's address
    held: dict = field(default_factory=dict)    # store point -> key of the register its header's sends read
    bare: frozenset = frozenset()   # header buffers every store of which is held: no registers of their own
    extent: dict = field(default_factory=dict)  # grf buffer -> bytes its scalar loads and stores reach, or None
    offsets: dict = field(default_factory=dict)  # let key -> (let key, c): the let is that one plus c
    unread: frozenset = frozenset()   # keys of the loop variables their bodies never read (counters only)
    readers: dict = field(default_factory=dict)  # header store point -> masks of the sends reading it, or None


def analyze(root, global_names: set[str], remat: frozenset = frozenset(), compact: bool = False) -> Liveness:
    """Live ranges of ``root``'s register values. Lets named in ``remat`` get no register:
    their value is recomputed at every use, so its operands are read there instead. ``compact`` (the
    roomy allocation's first attempt, ``allocation.with_remat``) finds the lets SIMD1 SLM messages read as
    their headers (``_header_lets``) and the buffers whose scalar accesses reach only their first bytes
    (``extent``)."""
    first: dict = {}
    last: dict = {}
    roles: dict[str, set] = {}
    headers: dict[str, tuple] = {}
    grf: set[str] = set()
    scope: dict[str, list] = {}
    var_keys: dict = {}
    loops: list[_Loop] = []
    counters: list = []                  # keys of the loop variables
    allocs: dict = {}
    free: set[str] = set()
    accesses: dict[str, list] = {}       # buffer -> [(point, mode, written range, if depth)]
    extended: set = set()
    if_depth = [0]
    signals = False
    block2d: set = set()
    copies: dict[int, tuple] = {}        # point -> (let, buffer) of a let copying a register buffer
    stores: dict[int, Store] = {}        # point -> store into a register buffer
    call_written: set[str] = set()       # register buffers some call writes
    slm: dict[str, tuple] = {}
    lets: dict = {}                      # let key -> its Let
    reads: dict = {}                     # let key -> reads of the variable
    offsets: dict = {}                   # let key -> (let key, c) of a let that is another plus a constant
    head_stores: list = []               # (point, buffer, let key, innermost loop's start) of `hdr[0] = v`
    extent: dict = {}                    # grf buffer -> the bytes its accesses reach (None: calls, run-time offsets)

    def reach(name, end):
        if name in extent:
            extent[name] = None if end is None or extent[name] is None else max(extent[name], end)
        else:
            extent[name] = end

    def touch_buf(name, p, mode, rng=None):
        touch(("buf", name), p, mode)
        accesses.setdefault(name, []).append((p, mode, rng, if_depth[0]))

    def touch(key, p, mode):
        if key not in first:
            first[key] = p
        last[key] = p
        for lp in loops:
            lp.keys.add(key)
            if key not in lp.first:
                lp.first[key] = "w" if mode == "w" and lp.if_depth == 0 else "r"

    def read_expr(e, p):
        stack = [e]
        while stack:
            x = stack.pop()
            t = type(x)
            if t is Var:
                keys = scope.get(x.name)
                if not keys:
                    free.add(x.name)
                else:
                    if keys[-1][0] == "remat":
                        stack.append(keys[-1][1])
                    else:
                        touch(keys[-1], p, "r")
                        reads[keys[-1]] = reads.get(keys[-1], 0) + 1
                continue
            if t is Load and x.buf.name in grf:
                touch_buf(x.buf.name, p, "r")
                scalar = type(x.offset) is IntImm and x.type.lanes == 1 and not x.type.is_bool
                reach(x.buf.name, x.offset.value + x.type.scalar.size if scalar else None)
                stack.append(x.offset)
                continue
            stack.extend(x.children())

    def define(node, name, p):
        key = ("var", p)
        scope.setdefault(name, []).append(key)
        var_keys[id(node), p] = key
        touch(key, p, "w")

    p = -1
    readers: dict = {}      # header store point -> the masks of the sends that read what it stored
    unread_store: dict = {}  # register buffer -> its last store point, while every read of it is seen
    for p, (kind, x) in enumerate(events(root)):
        if kind in _FLOW:
            for q in unread_store.values():   # a read past a jump or a label may be any
                readers[q] = None
            unread_store.clear()
        if kind == "let":
            if x.var.name in remat:
                scope.setdefault(x.var.name, []).append(("remat", x.value))
                continue
            read_expr(x.value, p)
            off = _offset_of(x.value, scope)
            define(x, x.var.name, p)
            lets[("var", p)] = x
            if off is not None:
                offsets["var", p] = off
            v = x.value
            if type(v) is Load and v.buf.name in grf and isinstance(v.offset, IntImm) and not v.type.is_bool:
                copies[p] = (x, v.buf.name)
        elif kind == "end_let":
            scope[x.var.name].pop()
        elif kind == "for":
            read_expr(x.init, p)
            read_expr(x.bound, p)
            define(x, x.var.name, p)
            loops.append(_Loop(p))
            key = scope[x.var.name][-1]
            counters.append(key)
            loops[-1].first[key] = "r"
        elif kind == "end_for":
            key = scope[x.var.name][-1]
            touch(key, p, "r")
            lp = loops.pop()
            for k in lp.keys:
                if first[k] < lp.start or lp.first.get(k) == "r":
                    extended.add(k)
                    first[k] = min(first[k], lp.start)
                    last[k] = max(last[k], p)
            scope[x.var.name].pop()
        elif kind == "if":
            read_expr(x.cond, p)
            if_depth[0] += 1
            for lp in loops:
                lp.if_depth += 1
        elif kind == "end_if":
            if_depth[0] -= 1
            for lp in loops:
                lp.if_depth -= 1
        elif kind == "alloc":
            if x.kind is MemKind.GRF:
                grf.add(x.buf.name)
                allocs[x.buf.name] = x
            elif x.kind is MemKind.SLM:   # each buffer after the last, on 64 bytes
                used = max((b + n for b, n in slm.values()), default=0)
                slm[x.buf.name] = (-(-used // 64) * 64, x.size)
        elif kind == "store":
            read_expr(x.offset, p)
            read_expr(x.value, p)
            if x.mask is not None:
                read_expr(x.mask, p)
            if x.buf.name in grf:
                rng = None
                if isinstance(x.offset, IntImm) and x.mask is None:
                    lanes = x.value.type.lanes
                    rng = (x.offset.value, x.offset.value + (lanes - 1) * x.stride + x.value.type.scalar.size)
                touch_buf(x.buf.name, p, "w", rng)
                reach(x.buf.name, None if rng is None or x.value.type.is_bool else rng[1])
                stores[p] = x
                unread_store[x.buf.name] = p
                readers[p] = []
                v = x.value
                if type(v) is Var and x.mask is None and rng == (0, 4) and scope.get(v.name) \
                        and scope[v.name][-1][0] == "var":
                    head_stores.append((p, x.buf.name, scope[v.name][-1], loops[-1].start if loops else None))
        elif kind == "call":
            bufs, exprs = call_buffers(x)
            for e in exprs:
                read_expr(e, p)
            for name, mode, rng in bufs:
                if name in grf:
                    touch_buf(name, p, mode, rng)
                    reach(name, None)
                    if mode == "w":
                        call_written.add(name)
            _record_roles(x, roles, headers, grf)
            if isinstance(x.func, Send) and isinstance(x.ops[1], Load):
                q = unread_store.get(x.ops[1].buf.name)
                if q is not None:
                    readers[q].append(x.ops[4])
            signals = signals or isinstance(x.func, (Barrier, BarrierSignal))
            if isinstance(x.func, Send2D):
                block2d.add(_block2d_shape(x))
    aliases = _aliases(copies, stores, call_written, accesses, last, extended, allocs)
    for name, acc in accesses.items():
        key = ("buf", name)
        if key in extended:
            continue
        for i, (lo, hi) in enumerate(_segments(acc)):
            first[key + (i,)] = lo
            last[key + (i,)] = hi
        del first[key], last[key]
    for name in headers:    # a message reads its header's whole registers
        extent[name] = None
    heads, held, bare = {}, {}, frozenset()
    if not compact:
        extent.clear()
    else:
        heads, held, bare = _header_lets(head_stores, headers, slm, lets, reads, offsets, aliases, accesses, first,
                                         last)
    starts: dict[int, list] = {}
    ends: dict[int, list] = {}
    for k, v in first.items():
        starts.setdefault(v, []).append(k)
    for k, v in last.items():
        ends.setdefault(v, []).append(k)
    unread = frozenset(k for k in counters if not reads.get(k))
    return Liveness(first, last, starts, ends, roles, headers, var_keys, p + 1, allocs, free, signals,
                    frozenset(block2d), aliases, slm, heads, held, bare, extent, offsets, unread, readers)


def _block2d_shape(call: FuncCall) -> tuple:
    """A 2D block load's surface (width, height, pitch: constants or expressions) and block (width,
    height, array): the fields of its header that do not move with the block."""
    f, a = call.func, call.ops
    sizes = tuple(_const(e) if _const(e) is not None else e for e in (a.surface_width, a.surface_height, a.pitch))
    return sizes + (f.width, f.height, f.array)


def _offset_of(value, scope) -> tuple | None:
    """``(key, c)`` where ``value`` is a let variable plus a constant (``v``, ``v + c``, ``c + v``)."""
    var, c = value, 0
    if type(value) is Binary and value.op is Op.ADD:
        if type(value.b) is IntImm and type(value.a) is Var:
            var, c = value.a, value.b.value
        elif type(value.a) is IntImm and type(value.b) is Var:
            var, c = value.b, value.a.value
    keys = scope.get(var.name) if type(var) is Var else None
    return (keys[-1], c) if keys and keys[-1][0] == "var" else None


def _header_lets(head_stores, headers, slm, lets, reads, offsets, aliases, accesses, first, last):
    """The scalar lets whose registers SIMD1 SLM messages read as their header (oneDNN keeps such
    address payloads live instead of rebuilding them per message): a transposed message reads its address
    from dword 0 of its header register only, so a let placed at dword 0 of a register (the other dwords
    stay free for other scalars) is the header, and the store ``hdr[0] = v`` costs nothing.

    The SLM base of the message's buffer is part of the address, so such a let holds its value plus the
    base (*biased*) where every read of it is such a header store or another biased let of the same
    base that adds a constant to it (``u = v + 256``: ``u``'s register is then ``v``'s plus 256, the base
    carried along; the first of a chain adds the base once). A let read elsewhere too gets a *twin*
    at dword 0 holding value + base, computed once where the let is, where a header store reads it in a
    loop the let is defined outside of (else the add stays where the header is stored).

    Returns ``(heads, held, bare)``: let key -> ``(base, kind)``, ``kind`` one of ``head`` (a biased let,
    or one of base 0, that headers read: at dword 0 of a register), ``carry`` (a biased let only biased
    lets read) and ``twin``; store point -> the key of the register (the let's, or ``('twin', let
    point)``) its sends read, held live to the header's last read; the header buffers all of whose
    stores are held, which need no registers of their own."""
    uses: dict = {}
    for p, name, key, loop in head_stores:
        hdr = headers.get(name)
        let = lets.get(key)
        if hdr is None or hdr[0] != "slm" or hdr[2] != "block" or let is None or (id(let), key[1]) in aliases:
            continue
        t = let.var.type
        if t.lanes != 1 or t.is_bool or t.is_float or t.scalar.bits != 32 or isinstance(let.value, IntImm):
            continue
        uses.setdefault(key, []).append((p, name, slm[hdr[1]][0], loop))
    readers: dict = {}     # let key -> the lets that add a constant to it
    for key, (src, _) in offsets.items():
        readers.setdefault(src, []).append(key)
    # the largest set of lets whose reads are all its members' add-a-constant lets and header stores of
    # one base: start from every candidate and drop those that break it until none does
    biased = {k for k in set(uses) | set(readers) if k in lets and not lets[k].var.type.is_bool
              and lets[k].var.type.lanes == 1 and (id(lets[k]), k[1]) not in aliases}
    base_of: dict = {}
    changed = True
    while changed:
        changed = False
        for k in sorted(biased):
            inner = [r for r in readers.get(k, ()) if r in biased]
            bases = {u[2] for u in uses.get(k, ())} | {base_of[r] for r in inner if r in base_of}
            if reads.get(k, 0) != len(uses.get(k, ())) + len(inner) or len(bases) > 1 or not bases \
                    and not inner:
                biased.discard(k)
                base_of.pop(k, None)
                changed = True
            elif bases and base_of.get(k) != min(bases):
                base_of[k] = min(bases)
                changed = True
    heads, held = {}, {}
    for k in biased:
        if k in base_of:
            heads[k] = (base_of[k], "head" if k in uses else "carry")
    for key, kuses in uses.items():
        bases = {u[2] for u in kuses}
        if key in heads or len(bases) != 1:
            continue
        if bases == {0}:
            heads[key] = (0, "head")
        elif any(loop is not None and loop > key[1] for *_, loop in kuses):
            heads[key] = (bases.pop(), "twin")
            first["twin", key[1]], last["twin", key[1]] = key[1], last[key]
    segments: dict = {}     # header buffer -> its live segments' keys
    for k in first:
        if k[0] == "buf" and k[1] in headers:
            segments.setdefault(k[1], []).append(k)
    for key, kuses in uses.items():
        if key not in heads:
            continue
        reg = ("twin", key[1]) if heads[key][1] == "twin" else key
        for p, name, *_ in kuses:
            held[p] = reg
            seg = next(k for k in segments[name] if first[k] <= p <= last[k])
            last[reg] = max(last[reg], last[seg])   # the register holds the header until its last send
    bare = set()
    for name, acc in accesses.items():
        writes = [a[0] for a in acc if a[1] == "w"]
        if name in headers and writes and all(p in held for p in writes):
            bare.add(name)
    return heads, held, frozenset(bare)


# Operators whose lowering is one instruction (per register piece) reading every operand before it
# writes its destination: a store of such a value may overwrite the registers a let it reads aliases.
_ONE_INSTRUCTION = {Op.ADD, Op.SUB, Op.BIT_AND, Op.BIT_OR, Op.BIT_XOR, Op.AND, Op.OR, Op.MIN, Op.MAX, Op.SHL,
                    Op.SHR}


def _reads_before_write(value) -> bool:
    if isinstance(value, (Var, Load, IntImm)):
        return True
    if value.type.scalar.bits > 32:
        return False
    return (isinstance(value, Binary) and value.op in _ONE_INSTRUCTION) or \
        (isinstance(value, Ternary) and value.op in (Op.IIF, Op.ADD3, Op.MAD))


def _aliases(copies: dict, stores: dict, call_written: set, accesses: dict, last: dict, extended: set,
             allocs: dict) -> frozenset:
    """The lets (``(id(let), point)``) that can read their buffer's registers instead of a copy: no call
    writes the buffer, no store writes it while the let is live, except the let's last read being a
    store into it whose one instruction reads before it writes; and the buffer is no larger than the
    let's value or live over a loop that holds the let's last use anyway (holding a large buffer
    longer than before would cost more registers than the copy). Each such buffer is made live to the
    let's last use (its accesses get a read there)."""
    out = set()
    for p, (let, name) in copies.items():
        if name in call_written:
            continue
        end = last[("var", p)]
        key = ("buf", name)
        value_bytes = let.value.type.lanes * let.value.type.scalar.size
        if allocs[name].size > value_bytes and not (key in extended and last[key] >= end):
            continue
        writes = [a[0] for a in accesses[name] if a[1] == "w" and p < a[0] <= end]
        if writes and (writes != [end] or not _reads_before_write(stores[end].value)):
            continue
        out.add((id(let), p))
        acc = accesses[name]
        at = next((i for i, a in enumerate(acc) if a[0] >= end), len(acc))
        acc.insert(at, (end, "r", None, max(a[3] for a in acc)))  # before a store there: no new segment
        if key in extended:
            last[key] = max(last[key], end)
    return frozenset(out)


def _segments(acc: list) -> list[tuple[int, int]]:
    """Live ranges ``(first, last)`` of one buffer accessed only in straight-line order: a new range
    starts at a write after which no byte written before it is read again. Reads count as reading
    the whole buffer; writes kill only their known range and only when not more conditional than
    the buffer's outermost access."""
    full = 0    # every byte ever written: what a read may need
    for a in acc:
        if a[2] is None and a[1] == "w":
            return [(acc[0][0], acc[-1][0])]
        if a[2] is not None:
            full |= ((1 << (a[2][1] - a[2][0])) - 1) << a[2][0]
    top = min(a[3] for a in acc)
    live = 0
    breaks = []
    for i in range(len(acc) - 1, -1, -1):
        p, mode, rng, depth = acc[i]
        if mode == "r":
            live = full
        elif rng is not None and depth == top:
            live &= ~(((1 << (rng[1] - rng[0])) - 1) << rng[0])
            earlier_same_point = i > 0 and acc[i - 1][0] == p
            if live == 0 and i > 0 and not earlier_same_point:
                breaks.append(i)
    cuts = [0] + sorted(breaks) + [len(acc)]
    return [(acc[a][0], acc[b - 1][0]) for a, b in zip(cuts, cuts[1:]) if b > a]


def _record_roles(call: FuncCall, roles: dict, headers: dict, grf: set) -> None:
    f, a = call.func, call.ops

    def add(name, role):
        roles.setdefault(name, set()).add(role)
    if isinstance(f, Send):
        add(a.reg.name, f"{f.op.value}_{f.space}")
        off = a.mem_offset
        if isinstance(off, Load) and off.buf.name in grf:
            add(off.buf.name, "header")
            if f.op is SendOp.PREFETCH:
                add(off.buf.name, "prefetch header")
            want = (f.space, a.mem.name, f.kind.value)
            have = headers.setdefault(off.buf.name, want)
            if have != want:
                headers[off.buf.name] = ("mixed",) + want[1:]
    elif isinstance(f, Send2D):
        add(a.reg.name, f"load_{f.space}")
    elif isinstance(f, (Dpas, Mad, Dp4a)):
        add(a.dst.name, "acc")
        add(a.src1.name, "b")
        add(a.src2.name, "a")
    elif isinstance(f, (Reorder, Reduce)):
        add(a.dst.name, "reorder")
