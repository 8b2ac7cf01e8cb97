"""LSC messages: global and SLM loads and stores, block and scattered, and their headers.

A send of the IR carries ``("addr", "header")``: its memory offset is read from
a header buffer the kernel stored the offset into just before. Here a store
into a header buffer becomes the address the message needs: for global memory
the 64-bit address ``argument + offset`` (``addc``/``add`` on Xe-HPG, one
``add`` where 64-bit integers are native), for SLM the 32-bit offset plus the
buffer's place in SLM. Block messages move ``d32 x N`` transposed dwords from
one address, and the last 1-3 bytes of a block that is not whole dwords as
SIMD1 scattered ``d8u32``/``d16u32`` messages; scattered ones one element per
lane (16- and 8-bit data in 32-bit slots, packed or unpacked with a ``mov``). A masked-off load leaves its
destination unchanged, on the hardware as in the IR (the builder zero-fills
where padding needs zeros).

A 2D block load (``Send2D``, Xe-HPC) builds its own header in a temporary
register: the 64-bit surface address (argument + base), the surface's width,
height and pitch less one, the block's start column and row, and its shape
(``width - 1 | height - 1 << 8 | array - 1 << 16``), then
``load_block2d.ugm.dN.a64`` fills its registers in the IR's order.
"""
from __future__ import annotations

from dataclasses import replace

from kdd.core.ir.expr import Binary, BoolImm, Broadcast, IntImm, Load, Op, Ramp, Ternary, Var, summands
from kdd.core.ir.funcs import Send2D, SendKind, SendOp
from kdd.core.ir.types import s32, u8, u16, u32, u64
from kdd.core.ir.visitor import walk

from ..errors import CodegenUnsupported
from . import addresses, isa
from .liveness import events
from .operand import Imm, Reg

BLOCK_DWORDS = (1, 2, 3, 4, 8, 16, 32, 64)
SCATTERED_DATA = {8: "d64", 4: "d32", 2: "d16u32", 1: "d8u32"}
VECTOR_DATA = {4: "d32", 8: "d64"}  # vectors of 8- and 16-bit data are not messages (target data)
NARROW = {2: u16, 1: u8}


def store_header(cg, x, p: int) -> None:
    """A store into a header buffer at point ``p``: the address the header's sends need (none where the
    sends read the stored let's own register, ``liveness._header_lets``)."""
    held = cg.live.held.get(p)
    if held is not None:
        cg.header_in[x.buf.name] = Reg(cg.keys[held].start, u32, 1)
        return
    space, mem, kind = cg.live.headers[x.buf.name]
    if space == "mixed":
        raise CodegenUnsupported(f"header {x.buf.name} addresses both global memory and SLM")
    if not isinstance(x.offset, IntImm) or x.offset.value != 0:
        raise CodegenUnsupported(f"header {x.buf.name} written at offset {x.offset}")
    hdr = cg.buf(x.buf.name)
    lanes = x.value.type.lanes
    cg.header_in.pop(x.buf.name, None)
    if space == "slm":
        base = cg.slm_base[mem][0]
        dst = Reg(hdr.start, x.value.type.base, 1)
        held = _held_payload(cg, x, hdr) if base == 0 else None
        if held is not None:
            cg.header_in[x.buf.name] = held
        elif base == 0:
            isa.evaluate(cg, x.value, dst)
        else:
            off = isa.value(cg, x.value)
            if isinstance(off, Imm):
                isa.move(cg, dst, Imm(off.value + base, off.type), lanes)
            else:
                isa.alu(cg, "add", lanes, dst, [off, Imm(base, s32)])
        return
    arg = cg.arg_regs.get(mem)
    if arg is None:
        raise CodegenUnsupported(f"send to {mem}, which is not a kernel argument")
    step = _step(cg, x, mem)
    if step is not None:    # ``hdr = h + d`` (passes/header_steps.py): the address in ``h`` stepped
        isa.step64(cg, Reg(hdr.start, u32, 2), Reg(cg.buf(step[0]).start, u32, 2), step[1], lanes)
        return
    if x.value.type.scalar.bits == 64:
        raise CodegenUnsupported("64-bit message offsets are not lowered yet")
    # A lane that loads, stores or adds reads its buffer in bounds (docs/ir-semantics.md: only a
    # masked-off element goes unchecked, and its address is never used), so its offset is not negative
    # and the high dword takes only the carry. A prefetch is not bounds-checked: its offset keeps its sign.
    signed = "prefetch header" in cg.live.roles.get(x.buf.name, ())
    dst = Reg(hdr.start, u64, 1)
    parts = addresses.terms(cg, x.value)
    key = (mem, lanes, parts[0]) if parts else None
    near = cg.addresses.near(cg, key, parts[1], dst, lanes, cg.live.readers.get(p)) if parts else None
    if near is not None:
        isa.step64(cg, dst, near[0], near[1], lanes)
    elif parts and parts[2] is not None and cg.xe.native_int64 and -2**31 <= parts[1] < 2**31:
        # one register plus a constant: the register's address, then the constant added in 64 bits (as
        # many instructions as the 32-bit sum and its address; the sum may be a let kept as its value)
        isa.add64(cg, Reg(hdr.start, u32, 2), arg, parts[2], lanes)
        isa.step64(cg, dst, dst, parts[1], lanes)
    else:
        isa.add64(cg, Reg(hdr.start, u32, 2), arg, isa.value(cg, _flattened(cg, x.value)), lanes, signed=signed)
    if parts:
        exact = near[2] if near is not None else False
        cg.addresses.record(cg, key, parts[1], dst, cg.xe.native_int64 or signed or exact)


def _flattened(cg, e):
    """A header's scalar offset with the recomputed lets it sums (``allocation._AddressLets``: ``c = b +
    oc``, ``b = k + 819200``) read as what they sum, the constants folded: one ``add`` (``add3`` of two
    registers) for the 32-bit sum, not one per let. Any other offset as it is."""
    if e.type.lanes != 1:
        return e
    parts, const = summands(e)
    flat, recomputed = [], False
    while parts:
        x = parts.pop()
        op = cg.lookup(x.name) if isinstance(x, Var) else None
        if isinstance(op, isa.Remat) and op.value.type == e.type:
            more, c = summands(op.value)
            parts += more
            const += c
            recomputed = True
        else:
            flat.append(x)
    if not recomputed or not flat or len(flat) > 2 or not -2**31 <= const < 2**31:
        return e
    imm = IntImm.make(e.type, const)
    if len(flat) == 2:
        return Ternary.make(Op.ADD3, flat[0], flat[1], imm) if -2**15 <= const < 2**15 else \
            Binary.make(Op.ADD, Binary.make(Op.ADD, flat[0], flat[1]), imm)
    return Binary.make(Op.ADD, flat[0], imm) if const else flat[0]


def _step(cg, x, mem: str) -> tuple[str, int] | None:
    """``(h, d)`` of a header store ``hdr[0] = h[0] + d``: ``h`` a header of the same memory (``hdr`` itself,
    or the twin it alternates with) and ``d`` a constant; else None."""
    v = x.value
    if not (isinstance(v, Binary) and v.op is Op.ADD and isinstance(v.a, Load)
            and isinstance(v.a.offset, IntImm) and v.a.offset.value == 0):
        return None
    src = cg.live.headers.get(v.a.buf.name)
    d = v.b.a if isinstance(v.b, Broadcast) else v.b
    if src is None or src[:2] != ("global", mem) or not isinstance(d, IntImm):
        return None
    return v.a.buf.name, d.value


def evaluate_head(cg, x, p: int, dst: Reg) -> None:
    """Let ``x`` (defined at ``p``) that holds an SLM message's address (``liveness._header_lets``) into
    ``dst``: a biased let's value plus its buffer's SLM base, unless it adds a constant to a let that
    holds the base already; a ``twin`` gets value + base in its own register after the value."""
    live = cg.live
    key = live.var_keys[id(x), p]
    base, kind = live.heads[key]
    v = x.value
    if kind != "twin" and base:
        src = live.offsets.get(key)
        if src is None or live.heads.get(src[0]) not in ((base, "head"), (base, "carry")):
            far = isinstance(v, Binary) and v.op is Op.ADD and isinstance(v.b, IntImm)
            v = Binary.make(Op.ADD, v.a, IntImm.make(s32, v.b.value + base)) if far else \
                Binary.make(Op.ADD, v, IntImm.make(s32, base))   # the base folds into the last immediate add
    isa.evaluate(cg, v, dst)
    if kind == "twin":
        isa.alu(cg, "add", 1, Reg(cg.keys["twin", p].start, s32, 1), [dst.scalar(), Imm(base, s32)])


def _held_payload(cg, x, hdr) -> Reg | None:
    """The registers of the variable a header store copies, where its sends can read them instead (no
    copy): an SLM offset vector (a hoisted per-lane address) in registers of its own, starting on a
    register and covering the header, live at least as long as the header's value is read."""
    v = x.value
    if not isinstance(v, Var) or v.type.lanes * v.type.scalar.size < hdr.size:
        return None
    op = cg.lookup(v.name)
    if not isinstance(op, Reg) or op.byte % cg.rb or op.stride != 1:
        return None
    holder = next((k for k, a in cg.keys.items() if a.start <= op.byte < a.end), None)
    header = next((k for k, a in cg.keys.items() if a is hdr), None)
    if holder is None or holder[0] != "var" or header is None or cg.live.last[holder] < cg.live.last[header]:
        return None
    return Reg(op.byte, u32, 1)


def payload_bytes(cg, lanes: int, size: int) -> int:
    """Bytes of a scattered message's payload of ``lanes`` addresses or data slots of ``size`` bytes: whole
    groups of the target's fewest message lanes (a SIMD4 A64 message still reads SIMD8 addresses on
    Xe-HPG, SIMD16 ones on Xe-HPC; the lanes past ``lanes`` are disabled)."""
    least = cg.xe.min_message_lanes
    return -(-lanes // least) * least * size


def _pred(cg, mask, lanes: int) -> str | None:
    if isinstance(mask, BoolImm) or (isinstance(mask, Broadcast) and isinstance(mask.a, BoolImm)):
        value = mask.value if isinstance(mask, BoolImm) else mask.a.value
        return None if value else "never"
    return isa.flag_of(cg, mask, lanes)


def _header(cg, mem_off) -> Reg:
    if not (isinstance(mem_off, Load) and mem_off.buf.name in cg.live.headers):
        raise CodegenUnsupported("a send whose address is not in a message header (run send lowering first)")
    held = cg.header_in.get(mem_off.buf.name)
    return held if held is not None else Reg(cg.buf(mem_off.buf.name).start, u32, 1)


def _copy(cg, dst: Reg, src: Reg, nbytes: int) -> None:
    """Byte-exact copy between register ranges, in dwords where both ranges are whole dwords."""
    if (nbytes | dst.byte | src.byte) % 4:
        isa.alu(cg, "mov", nbytes, dst.retype(u8), [src.retype(u8)])
    else:
        isa.alu(cg, "mov", nbytes // 4, dst.retype(u32), [src.retype(u32)])


def lower_send(cg, x) -> None:
    f = x.func
    mem, mem_off, reg, reg_off, mask = x.ops
    if f.op is SendOp.PREFETCH:
        return _prefetch(cg, f, mem_off)
    if not isinstance(reg_off, IntImm):
        raise CodegenUnsupported(f"{f}: register offset is not a constant")
    sfid = "ugm" if f.space == "global" else "slm"
    addr = "a64" if f.space == "global" else "a32"
    data = Reg(cg.buf(reg.name).start + reg_off.value, u32, 1)
    hdr = _header(cg, mem_off)
    pred = _pred(cg, mask, f.lanes)
    if pred == "never":
        return
    if f.space == "global":
        cg.addresses.sent(hdr, None if pred is None else mask)
    if f.op in (SendOp.ATOMIC_ADD, SendOp.ATOMIC_FETCH_ADD):
        _atomic_add(cg, f, sfid, addr, hdr, data, pred, mask)
    elif f.kind is SendKind.BLOCK:
        _block(cg, f, sfid, addr, hdr, data, pred)
    else:
        _scattered(cg, f, sfid, addr, hdr, data, pred)


def _head(pred):
    return f"(W&{pred})" if pred else "(W)"


def _block_data(nbytes: int) -> str | None:
    """The LSC data size of a transposed block of ``nbytes``: dwords (``d32xNt``), or qwords
    (``d64xNt``) for blocks beyond 64 dwords."""
    for unit, name in ((4, "d32"), (8, "d64")):
        if nbytes % unit == 0 and nbytes // unit in BLOCK_DWORDS:
            return f"{name}x{nbytes // unit}t"
    return None


def _pieces(nbytes: int) -> list[tuple[int, int]]:
    """``(offset, bytes)`` of the LSC block messages that move the whole dwords of ``nbytes``: one where
    a data size fits, else the largest dword vectors first (a 40-byte block is 32 + 8; a 7-byte one 4)."""
    if _block_data(nbytes) is not None:
        return [(0, nbytes)]
    out, off, whole = [], 0, nbytes - nbytes % 4
    while off < whole:
        n = max(d for d in BLOCK_DWORDS if d * 4 <= whole - off)
        out.append((off, n * 4))
        off += n * 4
    return out


def _block(cg, f, sfid, addr, hdr: Reg, data: Reg, pred) -> None:
    """Dword block messages, then the last 1-3 bytes (no transposed data size holds them) as SIMD1
    scattered messages of one 16-bit element where the type is that wide (so aligned), else one byte."""
    nbytes = f.elems * f.type.size
    abytes = 8 if addr == "a64" else 4
    for off, size in _pieces(nbytes):
        where = _address(cg, addr, hdr, off, cg.rb) if off else hdr
        _block_message(cg, f.op, _block_data(size), size, sfid, addr, where, Reg(data.byte + off, u32, 1), pred)
    step = min(f.type.size, 2)
    for off in range(nbytes - nbytes % 4, nbytes, step):
        where = _address(cg, addr, hdr, off, payload_bytes(cg, 1, abytes))
        _narrow_message(cg, f.op, step, sfid, addr, where, Reg(data.byte + off, NARROW[step], 1), pred)


def _address(cg, addr, hdr: Reg, off: int, nbytes: int) -> Reg:
    """A header temporary of ``nbytes`` (whole registers) whose first address is the header's plus ``off``."""
    where = cg.temp(u32, max(nbytes, cg.rb) // 4, whole=True, header=True)
    if addr == "a64":
        isa.add64(cg, Reg(where.byte, u32, 2), Reg(hdr.byte, u32, 0), Imm(off, s32), 1)
    else:
        isa.alu(cg, "add", 1, Reg(where.byte, u32, 1), [Reg(hdr.byte, u32, 0), Imm(off, s32)])
    return where


def _narrow_message(cg, op, size: int, sfid, addr, hdr: Reg, data: Reg, pred) -> None:
    """One ``size``-byte element at the header's first address, through the low bytes of lane 0's dword
    slot (``d8u32``/``d16u32``; the slot's upper bytes are undefined after a load and never read)."""
    rb = cg.rb
    aregs = -(-payload_bytes(cg, 1, 8 if addr == "a64" else 4) // rb)
    dregs = -(-payload_bytes(cg, 1, 4) // rb)
    slot = cg.temp(u32, dregs * rb // 4, whole=True)
    low = slot.retype(data.type)
    message = f"{sfid}.{SCATTERED_DATA[size]}.{addr} (1|M0)"
    if op is SendOp.LOAD:
        if pred:
            isa.alu(cg, "mov", 1, low, [data])  # a masked-off load keeps the destination's contents
        cg.em.raw(f"{_head(pred)} load.{message} r{slot.byte // rb}:{dregs} [r{hdr.byte // rb}:{aregs}]", "send")
        isa.alu(cg, "mov", 1, data, [low])
    else:
        isa.alu(cg, "mov", 1, low, [data])
        cg.em.raw(f"{_head(pred)} store.{message} [r{hdr.byte // rb}:{aregs}] r{slot.byte // rb}:{dregs}", "send")


def _block_message(cg, op, data_size: str, nbytes: int, sfid, addr, hdr: Reg, data: Reg, pred) -> None:
    rb = cg.rb
    nregs = -(-nbytes // rb)
    direct = data.byte % rb == 0
    where = data if direct else cg.temp(u32, nregs * rb // 4, whole=True)
    h = hdr.byte // rb
    if op is SendOp.LOAD:
        if pred and not direct:
            _copy(cg, where, data, nbytes)  # the masked-off bytes keep the destination's contents
        cg.em.raw(f"{_head(pred)} load.{sfid}.{data_size}.{addr} (1|M0) r{where.byte // rb}:{nregs} [r{h}:1]", "send")
        if not direct:
            _copy(cg, data, where, nbytes)
    else:
        if not direct:
            _copy(cg, where, data, nbytes)
        cg.em.raw(f"{_head(pred)} store.{sfid}.{data_size}.{addr} (1|M0) [r{h}:1] r{where.byte // rb}:{nregs}", "send")


def _scattered(cg, f, sfid, addr, hdr: Reg, data: Reg, pred, first: int = 0) -> None:
    """One address per lane. Vector element ``v`` of every lane fills its own whole registers (the
    IR's element ``v * lanes + l``): where those blocks are not the IR's dense order (a narrow type,
    fewer lanes than a register holds, an unaligned buffer), the data goes through a bounce buffer,
    one ``mov`` per vector element. More lanes than one message takes (32 on Xe-HPG) go as messages
    of ``max_exec`` lanes, each on its channel group (``M16``: flag bits 16-31); ``first`` is the
    message's first lane."""
    rb = cg.rb
    lanes, size, vec = f.lanes, f.type.size, f.vec
    kind = SCATTERED_DATA.get(size) if vec == 1 else VECTOR_DATA.get(size)
    step = cg.xe.max_exec
    if kind is not None and vec == 1 and lanes > step and lanes % step == 0:
        asize = 8 if addr == "a64" else 4
        for part in range(lanes // step):
            _scattered(cg, replace(f, elems=step), sfid, addr, Reg(hdr.byte + part * payload_bytes(cg, step, asize),
                       hdr.type, hdr.stride), Reg(data.byte + part * step * size, data.type, data.stride), pred,
                       first + part * step)
        return
    if kind is None or lanes > cg.xe.max_exec:
        raise CodegenUnsupported(f"{f}: no scattered LSC message for it")
    # A message's execution size is a power of two: 7 or 14 addresses go as 8 or 16 with the lanes
    # past them predicated off (their address payload exists: it covers whole groups of 8 lanes).
    sent = isa.padded_lanes(lanes)
    if sent != lanes:
        if sent > isa.FLAG_WORD:
            raise CodegenUnsupported(f"{f}: {lanes} addresses need a {sent}-lane message and a flag that wide")
        pred = _only_lanes(cg, pred, lanes)
    slot = max(size, 4)
    per = -(-payload_bytes(cg, sent, slot) // rb)  # registers of one vector element
    aregs = -(-payload_bytes(cg, sent, 8 if addr == "a64" else 4) // rb)
    h = hdr.byte // rb
    direct = size == slot and data.byte % rb == 0 and (vec == 1 or sent * slot % rb == 0) \
        and per == -(-lanes * slot // rb)
    where = data if direct else cg.temp(u32, vec * per * rb // 4, whole=True)
    data_size = kind if vec == 1 else f"{kind}x{vec}"
    message = f"{sfid}.{data_size}.{addr} ({sent}|M{first})"

    def bounce(to_where: bool) -> None:
        t = NARROW.get(size, u32)
        units = slot // t.size  # register units of ``t`` in one lane's slot
        for v in range(vec):
            packed = Reg(data.byte + v * lanes * size, t, 1)
            spread = Reg(where.byte + v * per * rb, t, 4 // size if size < 4 else 1)
            dst, src = (spread, packed) if to_where else (packed, spread)
            isa.alu(cg, "mov", lanes * units if size > 4 else lanes, dst, [src])

    if f.op is SendOp.LOAD:
        if pred and not direct:
            bounce(True)  # the masked-off lanes keep the destination's contents
        cg.em.raw(f"{_head(pred)} load.{message} r{where.byte // rb}:{vec * per} [r{h}:{aregs}]", "send")
        if not direct:
            bounce(False)
    else:
        if not direct:
            bounce(True)
        cg.em.raw(f"{_head(pred)} store.{message} [r{h}:{aregs}] r{where.byte // rb}:{vec * per}", "send")


def _only_lanes(cg, pred: str | None, lanes: int) -> str:
    """A predicate true in no lane at or past ``lanes``: ``pred`` with those bits cleared, or a flag
    holding the first ``lanes`` bits."""
    if pred is None:
        flag = cg.flags.take()
        cg.em.raw(f"(W) mov (1|M0) {flag}<1>:uw 0x{(1 << lanes) - 1:X}:uw", "int")
        cg.flags.clear_past[flag] = lanes
        return flag
    flag = pred.lstrip("~")
    isa.keep_lanes(cg, flag, lanes, negate=pred.startswith("~"))
    return flag


ATOMIC_ADD = {"f32": "atomic_fadd", "s32": "atomic_iadd", "u32": "atomic_iadd", "f64": "atomic_fadd",
              "s64": "atomic_iadd", "u64": "atomic_iadd"}


def _atomic_add(cg, f, sfid, addr, hdr: Reg, data: Reg, pred, mask) -> None:
    """Atomic adds are per-lane messages: a block atomic gets one address per element
    (the header's address plus the element's offset), ``max_exec`` lanes per message. A fetch-add
    receives the old values into a whole-register temporary and copies them over the added ones."""
    op = ATOMIC_ADD.get(str(f.type))
    fetch = f.op is SendOp.ATOMIC_FETCH_ADD
    if op is None or (fetch and op != "atomic_iadd"):
        raise CodegenUnsupported(f"{f}: no LSC atomic add of {f.type}")
    if pred is not None and fetch:
        raise CodegenUnsupported(f"{f}: a masked fetch-add")
    rb, size, top = cg.rb, f.type.size, cg.xe.max_exec
    abytes = 8 if addr == "a64" else 4
    kind = SCATTERED_DATA[size]
    for c in range(0, f.elems, top):
        lanes = min(top, f.elems - c)
        if f.kind is SendKind.BLOCK:
            where = cg.temp(u32, max(payload_bytes(cg, lanes, abytes), rb) // 4, whole=True, header=True)
            offs = cg.temp(s32, lanes)
            isa.evaluate(cg, Ramp.make(IntImm.make(s32, c * size), size, lanes), offs)
            if addr == "a64":
                isa.add64(cg, Reg(where.byte, u32, 2), Reg(hdr.byte, u32, 0), offs, lanes)
            else:
                isa.alu(cg, "add", lanes, where, [offs, Reg(hdr.byte, u32, 0)])
            areg = where.byte // rb
        else:
            areg = hdr.byte // rb + c * abytes // rb
        src = Reg(data.byte + c * size, u32, 1)  # element c of the data
        if src.byte % rb:
            moved = cg.temp(u32, max(lanes * size, rb) // 4, whole=True)
            _copy(cg, moved, src, lanes * size)
            src = moved
        aregs = -(-payload_bytes(cg, lanes, abytes) // rb)
        dregs = -(-payload_bytes(cg, lanes, size) // rb)
        if pred is not None and f.kind is SendKind.BLOCK:  # the block's one mask, on every lane's add
            pred = isa.flag_of(cg, Broadcast.make(mask, lanes), lanes)
        back = cg.temp(u32, dregs * rb // 4, whole=True) if fetch else None
        dst = f"r{back.byte // rb}:{dregs}" if fetch else "null:0"
        cg.em.raw(f"{_head(pred)} {op}.{sfid}.{kind}.{addr} ({lanes}|M0) {dst} [r{areg}:{aregs}] "
                  f"r{src.byte // rb}:{dregs}", "send")
        if fetch:
            _copy(cg, Reg(data.byte + c * size, u32, 1), back, lanes * size)


def _prefetch(cg, f, mem_off) -> None:
    if f.space != "global" or (f.kind is not SendKind.BLOCK and (f.vec == 1 or f.type.size not in VECTOR_DATA)):
        raise CodegenUnsupported(f"{f}: only global block and vector prefetches are lowered")
    hdr = _header(cg, mem_off)
    if f.kind is SendKind.SCATTERED:  # a vector gather to null: one address per lane, cached
        aregs = -(-payload_bytes(cg, f.lanes, 8) // cg.rb)
        cg.em.raw(f"(W) load.ugm.{VECTOR_DATA[f.type.size]}x{f.vec}.a64.ca.ca ({f.lanes}|M0) null:0 "
                  f"[r{hdr.byte // cg.rb}:{aregs}]", "send")
        return
    data_size = _block_data(f.elems * f.type.size)
    if data_size is None:
        raise CodegenUnsupported(f"{f}: a prefetch of {f.elems * f.type.size} bytes is not one LSC message")
    cg.em.raw(f"(W) load.ugm.{data_size}.a64.ca.ca (1|M0) null:0 [r{hdr.byte // cg.rb}:1]", "send")


BLOCK2D_DATA = {1: "d8", 2: "d16", 4: "d32", 8: "d64"}


def block2d_constants(cg, shape: tuple) -> list[tuple[int, Imm]]:
    """``(byte, value)`` of the header fields a 2D block load of ``shape`` (``liveness._block2d_shape``:
    constant surface sizes and the block) writes as immediates: the surface's width, height and pitch less
    one (width and height as one qword where 64-bit integers are native) and the block's shape
    (``width - 1 | height - 1 << 8 | array - 1 << 16``)."""
    width, height, pitch, bw, bh, array = shape
    shaped = (7 * 4, Imm((bw - 1) | (bh - 1) << 8 | (array - 1) << 16, u32))
    if cg.xe.native_int64:
        return [(8, Imm(width - 1 | (height - 1) << 32, u64)), (16, Imm(pitch - 1, u32)), shaped]
    return [(8, Imm(width - 1, u32)), (12, Imm(height - 1, u32)), (16, Imm(pitch - 1, u32)), shaped]


def block2d_prologue(cg) -> None:
    """The kernel's 2D block headers (``allocation``: where it has them), their fields that never change
    written once at the start where every 2D load of the kernel shares them (one surface and block shape)."""
    cg.block2d_fields = [{} for _ in cg.block2d_headers]
    shapes = cg.live.block2d
    if len(shapes) != 1 or not all(isinstance(v, int) for v in next(iter(shapes))):
        return
    for a, known in zip(cg.block2d_headers, cg.block2d_fields):
        for at, imm in block2d_constants(cg, next(iter(shapes))):
            isa.move(cg, Reg(a.start + at, imm.type, 1), imm, 1)
            known[at] = (imm, None)   # before any branch: holds for the whole kernel


def _block2d_fields(cg, x, arg, hdr: Reg) -> list[tuple]:
    """``(byte, key, write, expr)`` of each field of 2D block load ``x``'s header at ``hdr``: ``write()``
    writes the value ``key`` names (the IR expression ``expr``'s, else a constant)."""
    f, a = x.func, x.ops
    sizes = (a.surface_width, a.surface_height, a.pitch)
    shape = tuple(e.value for e in sizes) + (f.width, f.height, f.array)
    out = [(0, (a.mem.name, a.base), lambda: isa.add64(cg, Reg(hdr.byte, u32, 1), arg, isa.value(cg, a.base), 1),
            a.base)]
    out += [(at, imm, lambda at=at, imm=imm: isa.move(cg, Reg(hdr.byte + at, imm.type, 1), imm, 1), None)
            for at, imm in block2d_constants(cg, shape)]
    out.append((20, a.x, lambda: _block_field(cg, a.x, Reg(hdr.byte + 20, s32, 1)), a.x))
    out.append((24, a.y, lambda: _block_field(cg, a.y, Reg(hdr.byte + 24, s32, 1)), a.y))
    return out


def _block_field(cg, e, dst: Reg) -> None:
    """The block's x or y ``e`` written into header field ``dst``, unless ``e`` is a variable read from
    that field itself (a counter carried in the header, :func:`block2d_carry`)."""
    if isinstance(e, Var):
        now = cg.lookup(e.name)
        if isinstance(now, Reg) and now.byte == dst.byte and now.size == dst.size:
            return
    isa.evaluate(cg, e, dst)


class LoopHeld:
    """A 2D header field written before loop ``top`` and by nothing in it: it holds while the loop is open."""

    def __init__(self, top: str, expr):
        self.top, self.expr = top, expr

    def holds(self, cg) -> bool:
        return any(entry[2] == self.top for entry in cg.loop_stack)


def block2d_loop_fields(cg, loop, top: str) -> None:
    """Before loop ``loop`` (label ``top``): each field of a 2D block header to which every 2D load of the
    body that takes that header gives the same value, one that does not change in the loop (a constant,
    or an expression of variables bound outside it), is written here where the header does not hold it
    already, and held through the loop (oneDNN builds a 2D header once and moves only the block's x and y
    in the loop)."""
    if not cg.block2d_headers:
        return
    inside = {x.var.name for kind, x in events(loop.body) if kind in ("let", "for")}
    loads = [x for kind, x in events(loop.body) if kind == "call" and isinstance(x.func, Send2D)]
    n = len(cg.block2d_headers)
    fields: list[dict] = [{} for _ in range(n)]    # header -> byte -> (key, write, expr), None if they differ
    for i, x in enumerate(loads):
        turn = (cg.block2d_turn + 1 + i) % n
        arg = cg.arg_regs.get(x.ops.mem.name)
        if arg is None or not all(isinstance(e, IntImm) for e in (x.ops.surface_width, x.ops.surface_height,
                                                                   x.ops.pitch)):
            return
        hdr = Reg(cg.block2d_headers[turn].start, u32, 1)
        for at, key, write, expr in _block2d_fields(cg, x, arg, hdr):
            seen = fields[turn].get(at, (key, write, expr))
            fields[turn][at] = seen if seen is not None and seen[0] == key and _outside(cg, expr, inside) else None
    for turn, per in enumerate(fields):
        known = cg.block2d_fields[turn]
        for at, got in per.items():
            if got is None:
                continue
            key, write, expr = got
            now = known.get(at)
            if not (now is not None and now[0] == key and (now[1] is None or now[1].holds(cg))):
                write()
            known[at] = (key, LoopHeld(top, expr))


def block2d_carry(cg, loop, p: int, top: str) -> None:
    """Before loop ``loop`` (at point ``p``, label ``top``): a one-dword register buffer that the body only
    steps (stores of its first dword) and reads through lets that alias it, the block x of every 2D load of
    the body that takes one header, is moved into that header's x field for the loop (copied in here, back
    after it where it is read later, :func:`block2d_uncarry`): the counter's steps then step the field and
    no load copies it (oneDNN advances a 2D header's x in place). The loads take the headers in turn, so
    which one each takes is known here."""
    if not cg.block2d_headers:
        return
    body = list(enumerate(events(loop.body), p + 1))
    n = len(cg.block2d_headers)
    x_of: dict[int, list] = {}           # header turn -> the block x of each of its loads in the body
    loads = [x for _, (kind, x) in body if kind == "call" and isinstance(x.func, Send2D)]
    for i, x in enumerate(loads):
        x_of.setdefault((cg.block2d_turn + 1 + i) % n, []).append(x.ops.x)
    for turn, xs in x_of.items():
        if not all(isinstance(e, Var) and e.name == xs[0].name for e in xs):
            continue
        lets = [(q, x) for q, (kind, x) in body if kind == "let" and x.var.name == xs[0].name]
        name = lets[0][1].value.buf.name if lets and isinstance(lets[0][1].value, Load) else None
        if name not in cg.bufs or name in cg.live.headers or not all(
                (id(x), q) in cg.live.aliases and x.var.name not in cg.remat and _first_word(x.value, name)
                for q, x in lets):
            continue
        steps = [x for _, (kind, x) in body if kind == "store" and x.buf.name == name]
        if not all(isinstance(x.offset, IntImm) and x.offset.value == 0 and x.value.type.lanes == 1
                   and x.value.type.size == 4 and x.mask is None for x in steps):
            continue
        uses = sum(1 for node in walk(loop.body) if isinstance(node, Var) and node.name == name)
        if uses != len(lets) + len(steps):      # read otherwise: a vector, a call's operand
            continue
        home = cg.bufs[name]
        field = Reg(cg.block2d_headers[turn].start + 20, s32, 1)
        isa.move(cg, field, Reg(home.start, s32, 0), 1)
        cg.block2d_fields[turn].pop(20, None)
        cg.bufs[name] = replace(home, start=field.byte, size=4)
        cg.block2d_carried[top] = (name, home, turn)
        return


def _first_word(e, name: str) -> bool:
    """Whether ``e`` reads register buffer ``name``'s first dword as one 32-bit integer."""
    return (isinstance(e, Load) and e.buf.name == name and isinstance(e.offset, IntImm) and e.offset.value == 0
            and e.type.lanes == 1 and e.type.size == 4 and e.type.is_int)


def block2d_uncarry(cg, top: str, p: int) -> None:
    """After loop ``top`` (its end at point ``p``): a buffer :func:`block2d_carry` moved into a header field
    goes back to its registers, its value copied there where it is read after the loop."""
    got = cg.block2d_carried.pop(top, None)
    if got is None:
        return
    name, home, turn = got
    field = cg.bufs[name]
    cg.bufs[name] = home
    cg.block2d_fields[turn].pop(20, None)
    if any(k[:2] == ("buf", name) and cg.live.first[k] <= p < last for k, last in cg.live.last.items()):
        isa.move(cg, Reg(home.start, s32, 1), Reg(field.start, s32, 0), 1)


def block2d_loop_end(cg, top: str) -> None:
    """After loop ``top``: its held fields hold on in straight-line code (written before the loop, not in it)."""
    for known in cg.block2d_fields:
        for at, (key, since) in list(known.items()):
            if isinstance(since, LoopHeld) and since.top == top:
                now = isa.Known.now(cg, since.expr) if since.expr is not None else isa.Known(cg.em.flow, ())
                if now is None:
                    del known[at]
                else:
                    known[at] = (key, now)


def _outside(cg, expr, inside: set) -> bool:
    """Whether ``expr`` keeps its value through a loop whose body binds ``inside``: a constant, or variables
    bound now and not in the body, no memory read."""
    if expr is None:
        return True
    names = isa.reads_only_variables(expr)
    return names is not None and not names & inside and all(cg.env.get(n) for n in names)


def lower_send2d(cg, x) -> None:
    """``load_block2d``: its header, then one message into the destination registers. The header is one of
    the kernel's two 2D block header registers where it has them (the roomy allocation), in turn: a field
    is written only where it does not hold the value already (oneDNN rewrites only a 2D header's block x
    and y between loads; a loop's fields that do not change in it are written before it,
    :func:`block2d_loop_fields`); else a temporary built whole."""
    f = x.func
    a = x.ops
    rb = cg.rb
    arg = cg.arg_regs.get(a.mem.name)
    if arg is None:
        raise CodegenUnsupported(f"2D block load from {a.mem.name}, which is not a kernel argument")
    if not isinstance(a.reg_offset, IntImm):
        raise CodegenUnsupported(f"{f}: register offset is not a constant")
    data = cg.buf(a.reg.name).start + a.reg_offset.value
    if data % rb:
        raise CodegenUnsupported(f"{f}: destination at byte {data}, not on a register")
    sizes = (a.surface_width, a.surface_height, a.pitch)
    if not all(isinstance(e, IntImm) for e in sizes):
        raise CodegenUnsupported(f"{f}: a surface of non-constant size")
    if cg.block2d_headers:
        turn = cg.block2d_turn = (cg.block2d_turn + 1) % len(cg.block2d_headers)
        hdr, known = Reg(cg.block2d_headers[turn].start, u32, 1), cg.block2d_fields[turn]
    else:   # no registers of their own (a tight allocation): built in a temporary
        hdr, known = cg.temp(u32, rb // 4, whole=True, header=True), {}
    for at, key, write, expr in _block2d_fields(cg, x, arg, hdr):
        # written unless the register holds it already: written at the kernel's start, before a loop that
        # writes no other value into it, or in straight-line code since (a loop that may not run, a branch
        # not taken, writes nothing), the expression's variables bound as they were
        now = known.get(at)
        if now is not None and now[0] == key and (now[1] is None or now[1].holds(cg)):
            continue
        write()
        since = isa.Known.now(cg, expr) if expr is not None else isa.Known(cg.em.flow, ())
        if since is None:   # the expression reads memory: its value is not known to hold later
            known.pop(at, None)
        else:
            known[at] = (key, since)
    nregs = -(-f.elems * f.type.size // rb)
    cg.em.raw(f"(W) load_block2d.ugm.{BLOCK2D_DATA[f.type.size]}.a64 (1|M0) r{data // rb}:{nregs} "
              f"[r{hdr.byte // rb}:1]", "send")
