"""Sends: LSC loads, stores and atomics on global memory and SLM, fences, and gateway messages.

Payload layouts (what the descriptor's fields say, :mod:`.messages`):

- transposed (block) messages are SIMD1: one address in the first element of
  ``src0`` (a 64-bit ``uq`` for ``a64``, a ``ud`` for ``a32``); ``vector``
  consecutive elements go to (come from) consecutive register bytes;
- scattered messages have one address per channel, packed in ``src0``; vector
  component ``v`` of channel ``c`` is at memory ``addr + v * size`` and in the
  register block ``v`` (each block whole registers) at slot ``c``; ``d16u32``
  and ``d8u32`` move 16/8-bit memory elements through 32-bit slots, the
  loaded slots' upper bits being undefined (the simulator fills them with
  a pattern, so a program that reads them fails);
- ``mlen``/``rlen`` and the ``src1`` length must match these sizes, a scattered
  message's payloads being sized for at least the native SIMD, 8 channels on
  Xe-HPG and 16 on Xe-HPC (fewer channels still send that wide a payload, as
  IGA's message decoder expects).

A predicated message skips disabled channels (loads leave their registers
as they were).

``load_block2d`` (Xe-HPC) is SIMD1 with a one-register header: 64-bit surface
base (``uq`` 0), surface width - 1 (bytes), height - 1 (rows), pitch - 1
(bytes) in ``ud`` 2-4, block start column (elements) and row in ``ud`` 5-6
(signed), and ``width - 1 | height - 1 << 8 | array - 1 << 16`` in ``ud`` 7.
Element ``(a, r, c)`` goes to register byte ``a * A + r * R + c * size``, ``R``
the row's bytes rounded up to a power of two and ``A`` the block's bytes
rounded up to whole registers; elements outside the surface read as zero.
Only the plain (not transposed, not VNNI) form is simulated.
"""
from __future__ import annotations

import numpy as np

from . import messages
from .errors import Fault, SimulatorGap
from .program import Instr

UNDEFINED_HIGH = 0xA5A5


def gateway(m, ins: Instr, rows) -> None:
    op = messages.bits(ins.desc, 0, 4)
    r = m.rows_array(rows)
    if ins.eot:
        if op != messages.GATEWAY_EOT:
            raise SimulatorGap(ins.line, ins.text, f"end of thread on gateway message {op}")
        m.done[r] = True
        return
    if op == messages.GATEWAY_BARRIER:
        from .machine import _signal

        _signal(m, ins, r)
        m.pc[r] += 1
        return
    raise SimulatorGap(ins.line, ins.text, f"gateway message {op:#x}")


def min_payload_lanes(rb: int) -> int:
    """The fewest lanes a scattered payload covers: the native SIMD, one register of dwords (IGA's
    decoder: a SIMD1 or SIMD4 A64 address takes 2 GRFs on Xe-HPG, "Src0.Length: should be 2", and a
    SIMD1 or SIMD8 one 2 GRFs on Xe-HPC)."""
    return rb // 4


def _regs(nbytes: int, rb: int) -> int:
    return -(-nbytes // rb)


def lsc(m, ins: Instr, rows) -> None:
    b2 = messages.decode_block2d(ins.desc)
    if b2 is not None:
        _block2d(m, ins, b2, m.rows_array(rows))
        return
    d = messages.decode_lsc(ins.desc)
    if isinstance(d, str):
        raise SimulatorGap(ins.line, ins.text, d)
    if ins.exdesc != 0:
        raise SimulatorGap(ins.line, ins.text, f"extended descriptor {ins.exdesc:#x}")
    rb = m.geo.reg_bytes
    r = m.rows_array(rows)
    if d.op == messages.FENCE:
        if ins.dst.kind != "null":
            m.file[r[:, None], ins.dst.reg * rb + np.arange(d.rlen * rb)[None, :]] = 0
        m.pc[r] += 1
        return
    n, data_regs = _payload(ins, d, rb)
    is_load = d.op == messages.LOAD
    is_atomic = d.op in (messages.ATOMIC_IADD, messages.ATOMIC_FADD)
    if is_load and ins.dst.kind == "null" and d.rlen == 0:
        # a prefetch: a load with no response only warms the caches (no register or memory changes,
        # and an address outside every buffer does not fault: prefetches drop what they cannot fetch)
        m.pc[r] += 1
        return
    if is_load or (is_atomic and ins.dst.kind != "null"):
        _expect(ins, "response length", d.rlen, data_regs)
    else:
        _expect(ins, "response length", d.rlen, 0)
    if not is_load:
        _expect(ins, "source-1 length", ins.srcs[1].length, data_regs)
    addr, enabled = _addresses(m, ins, d, r, n)
    if not enabled.any():
        m.pc[r] += 1
        return
    if d.transposed:
        _block(m, ins, d, r, addr[:, 0], enabled[:, 0], is_load)
    elif is_atomic:
        _atomic(m, ins, d, r, addr, enabled)
    else:
        _scattered(m, ins, d, r, addr, enabled, is_load)
    m.pc[r] += 1


def _payload(ins: Instr, d, rb: int) -> tuple[int, int]:
    """The addresses an LSC message carries and the registers of its data, after the checks of its form
    and of its address payload's length."""
    n = 1 if d.transposed else ins.exec_size
    if d.transposed and ins.exec_size != 1:
        raise Fault(ins.line, ins.text, "a transposed LSC message must be SIMD1")
    if not d.transposed and d.vector > messages.SCATTERED_VECTOR:
        raise Fault(ins.line, ins.text, f"a scattered {d.name} message: the hardware's non-transposed vectors "
                                        f"hold at most {messages.SCATTERED_VECTOR} elements")
    if not d.transposed and d.vector > 1 and d.mem_bytes != d.reg_bytes:
        raise Fault(ins.line, ins.text, f"{d.name}: 8- and 16-bit data in 32-bit slots is not a vector")
    width = 1 if d.transposed else max(n, min_payload_lanes(rb))
    _expect(ins, "message length", d.mlen, _regs(width * d.addr_bytes, rb))
    if not d.transposed:
        return n, d.vector * _regs(width * d.reg_bytes, rb)
    if d.mem_bytes != d.reg_bytes:
        raise SimulatorGap(ins.line, ins.text, f"transposed {d.name}")
    return n, _regs(d.vector * d.mem_bytes, rb)


def _addresses(m, ins: Instr, d, r: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``(rows, n)`` addresses of the message's lanes and which lanes its predicate enables."""
    rb, abytes = m.geo.reg_bytes, d.addr_bytes
    view = m.views["uq" if abytes == 8 else "ud"]
    start = ins.srcs[0].reg * rb // abytes
    addr = view[r[:, None], start + np.arange(n)[None, :]]
    enabled = np.ones((len(r), n), dtype=bool)
    if ins.pred is not None:
        reg, bit, inv = ins.pred
        enabled = m.flags[r, reg, bit: bit + n]
        enabled = ~enabled if inv else enabled
    return addr, enabled


def _block2d(m, ins: Instr, d, r: np.ndarray) -> None:
    if d.vnni or d.transposed or not d.elem_bytes:
        raise SimulatorGap(ins.line, ins.text, "a transposed, VNNI or unknown-size 2D block load")
    if ins.exec_size != 1 or ins.pred is not None:
        raise SimulatorGap(ins.line, ins.text, "a 2D block load that is not SIMD1 and unpredicated")
    if ins.exdesc != 0:
        raise SimulatorGap(ins.line, ins.text, f"extended descriptor {ins.exdesc:#x}")
    rb, size = m.geo.reg_bytes, d.elem_bytes
    _expect(ins, "message length", d.mlen, 1)
    hdr = ins.srcs[0].reg * rb
    ud = m.views["ud"][r[:, None], hdr // 4 + np.arange(8)[None, :]].astype(np.int64)   # (rows, 8)
    base = m.views["uq"][r, hdr // 8].astype(np.uint64)
    width, height, pitch = ud[:, 2] + 1, ud[:, 3] + 1, ud[:, 4] + 1
    x0, y0 = ud[:, 5].astype(np.int32).astype(np.int64), ud[:, 6].astype(np.int32).astype(np.int64)
    shape = ud[:, 7]
    if (shape != shape[0]).any():
        raise SimulatorGap(ins.line, ins.text, "threads of one instruction with different 2D block shapes")
    bw, bh, arr = (int(shape[0]) & 0xFF) + 1, (int(shape[0]) >> 8 & 0xFF) + 1, (int(shape[0]) >> 16 & 0xFF) + 1
    row_bytes = 1 << (bw * size - 1).bit_length()
    block_bytes = _regs(row_bytes * bh, rb) * rb
    _expect(ins, "response length", d.rlen, _regs(arr * block_bytes, rb))
    a, rr, c = (g.reshape(-1) for g in np.meshgrid(np.arange(arr), np.arange(bh), np.arange(bw), indexing="ij"))
    col = x0[:, None] + a * bw + c                                       # (rows, elems)
    row = y0[:, None] + rr
    inside = (col >= 0) & (row >= 0) & (col * size < width[:, None]) & (row < height[:, None])
    addr = base[:, None] + np.where(inside, row * pitch[:, None] + col * size, 0).astype(np.uint64)
    data = np.zeros(inside.shape + (size,), dtype=np.uint8)
    if inside.any():
        idx = m.memory.flat(addr[inside], size)
        if idx is None:
            raise Fault(ins.line, ins.text, "a 2D block load inside its surface reads outside every buffer")
        data[inside] = m.memory.data[idx]
    if ins.dst.kind != "null":
        dst = ins.dst.reg * rb + (a * block_bytes + rr * row_bytes + c * size)[:, None] + np.arange(size)
        m.file[r[:, None], dst.reshape(1, -1)] = data.reshape(len(r), -1)
    m.pc[r] += 1


def _expect(ins: Instr, what: str, got: int, want: int) -> None:
    if got != want:
        raise Fault(ins.line, ins.text, f"the descriptor's {what} is {got}; the payload needs {want}")


def _flat(m, ins: Instr, r: np.ndarray, addr: np.ndarray, nbytes: int) -> np.ndarray:
    """Flat byte indices of ``nbytes`` at each address of threads ``r`` (addr: (k,) per access row)."""
    if ins.sub == "ugm":
        idx = m.memory.flat(addr, nbytes)
        if idx is None:
            bad = [hex(int(a)) for a in np.atleast_1d(addr)[:4]]
            raise Fault(ins.line, ins.text, f"global access of {nbytes} bytes at {bad} is outside every buffer")
        return idx
    group = m.group[r]
    idx = m.slm.flat(group if addr.ndim == 1 else group[:, None], addr, nbytes)
    if idx is None:
        bad = sorted({int(a) for a in np.atleast_1d(addr).reshape(-1) if a < 0 or a + nbytes > m.slm.size})
        raise Fault(ins.line, ins.text, f"SLM access of {nbytes} bytes at {bad[:4]} is outside the group's "
                                        f"{m.slm.size} bytes")
    return idx


def _check_race(m, ins: Instr, r: np.ndarray, idx: np.ndarray, write: bool) -> None:
    if ins.sub != "slm" or m.geo.group_size == 1:      # a thread alone in its group races with no one
        return
    fn = m.slm.write_race if write else m.slm.read_race
    if fn(idx, r, m.sig[r], m.passed[r]):
        kind = "writes" if write else "reads"
        raise Fault(ins.line, ins.text, f"SLM race: a thread {kind} bytes another thread of its group accessed "
                                        "with no barrier between")


def _mem(m, ins: Instr):
    return m.memory if ins.sub == "ugm" else m.slm


def _block(m, ins: Instr, d, r: np.ndarray, addr: np.ndarray, enabled: np.ndarray, is_load: bool) -> None:
    r, addr = r[enabled], addr[enabled]
    nbytes = d.vector * d.mem_bytes
    idx = _flat(m, ins, r, addr, nbytes)
    _check_race(m, ins, r, idx, not is_load)
    rb = m.geo.reg_bytes
    mem = _mem(m, ins)
    if is_load:
        if ins.dst.kind != "null":
            m.file[r[:, None], ins.dst.reg * rb + np.arange(nbytes)[None, :]] = mem.data[idx]
        return
    mem.data[idx] = m.file[r[:, None], ins.srcs[1].reg * rb + np.arange(nbytes)[None, :]]
    _stored(m, ins, idx, r)


def _stored(m, ins: Instr, idx: np.ndarray, r: np.ndarray) -> None:
    if ins.sub == "ugm":
        m.memory.written[idx] = True
        if m.on_store is not None:
            m.on_store(ins, idx, r)


def _slots(m, ins: Instr, d, reg: int, n: int) -> np.ndarray:
    """Register byte offsets (vector, channel, byte) of the data of a scattered message."""
    rb = m.geo.reg_bytes
    block = _regs(max(n, min_payload_lanes(rb)) * d.reg_bytes, rb) * rb   # a vector component's registers
    v = np.arange(d.vector)[:, None, None]
    c = np.arange(n)[None, :, None]
    b = np.arange(d.mem_bytes)[None, None, :]
    return reg * rb + v * block + c * d.reg_bytes + b


def _scattered(m, ins: Instr, d, r: np.ndarray, addr: np.ndarray, enabled: np.ndarray, is_load: bool) -> None:
    n = addr.shape[1]
    nbytes = d.vector * d.mem_bytes
    rows, chans = np.nonzero(enabled)
    idx = _flat(m, ins, r[rows], addr[rows, chans], nbytes)      # (k, nbytes)
    _check_race(m, ins, r[rows], idx, not is_load)
    mem = _mem(m, ins)
    reg = (ins.dst if is_load else ins.srcs[1]).reg
    slots = _slots(m, ins, d, reg, n)                                        # (vector, n, mem_bytes)
    where = slots[:, chans, :].transpose(1, 0, 2).reshape(len(rows), nbytes)  # (k, nbytes)
    t = r[rows][:, None]
    if is_load:
        if ins.dst.kind == "null":
            return
        m.file[t, where] = mem.data[idx]
        if d.reg_bytes > d.mem_bytes:
            pad = d.reg_bytes - d.mem_bytes
            fill = np.frombuffer(np.full(pad // 2 or 1, UNDEFINED_HIGH, dtype=np.uint16).tobytes(), np.uint8)[:pad]
            high = (slots[:, chans, :1].transpose(1, 0, 2) + d.mem_bytes + np.arange(pad)).reshape(len(rows), -1)
            m.file[t, high] = np.resize(fill, high.shape[1])
        return
    mem.data[idx] = m.file[t, where]
    _stored(m, ins, idx, r[rows])


def _atomic(m, ins: Instr, d, r: np.ndarray, addr: np.ndarray, enabled: np.ndarray) -> None:
    if d.vector != 1 or d.mem_bytes not in (4, 8):
        raise SimulatorGap(ins.line, ins.text, f"atomic {d.name}")
    size = d.mem_bytes
    n = addr.shape[1]
    rows, chans = np.nonzero(enabled)
    idx = _flat(m, ins, r[rows], addr[rows, chans], size)   # atomics do not race with each other
    mem = _mem(m, ins)
    slots = _slots(m, ins, d, ins.srcs[1].reg, n)[0]                          # (n, size)
    src = m.file[r[rows][:, None], slots[chans]]                              # (k, size)
    if (addr[rows, chans].astype(np.uint64) % np.uint64(size)).any():     # the address, not the flat index
        raise Fault(ins.line, ins.text, f"an atomic address is not {size}-byte aligned")
    floats, ints = {4: (np.float32, np.int32), 8: (np.float64, np.int64)}[size]
    kind = floats if d.op == messages.ATOMIC_FADD else ints
    values = src.copy().view(kind).reshape(-1)
    old = np.empty((len(rows), size), dtype=np.uint8)
    for i in range(len(rows)):       # in channel order, one rounding per add; integer adds wrap
        old[i] = mem.data[idx[i]]
        cur = old[i].view(kind)[0]
        new = kind(cur + values[i]) if kind is floats else \
            np.array([(int(cur) + int(values[i])) % (1 << 8 * size)], dtype=np.uint64).astype(kind)[0]
        mem.data[idx[i]] = np.array([new], dtype=kind).view(np.uint8)
    if ins.dst.kind != "null":
        dst = _slots(m, ins, d, ins.dst.reg, n)[0]
        m.file[r[rows][:, None], dst[chans]] = old
    _stored(m, ins, idx, r[rows])
