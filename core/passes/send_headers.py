"""Send lowering: a send's byte offset becomes what the target's message reads its address from.

The builder's sends carry a plain byte offset expression. Targets address
memory differently (``Target.addressing``):

- **Xe** (``xehpg``, ``xehpc``): a send reads its address from a *message
  header*, a GRF the kernel writes before the send. Each send gets one:
  ``alloc.grf <buf>_hdr[..] { <buf>_hdr.T[0] = offset; send(<buf>, <buf>_hdr.T[0], ...) }``.
  ``T`` is the offset's type: an ``s32`` offset is a 32-bit surface-relative
  (A32 stateful) address, an ``s64`` one (widened by the overflow pass) a
  64-bit (A64) one. A scattered send's header holds one address per element.
  The header occupies whole registers. With ``options["reuse_headers"]``
  (the config's ``P=r``) each header is allocated around its send, so the
  allocator can reuse header registers (more header writes, fewer
  registers); without it the header allocations are lifted to the top of the
  kernel body, one register range per send for the whole kernel.
- **sm_90**: PTX addresses are ``[reg + imm]``. The offset is split into its
  variable part, bound to an *address register* (a ``let <buf>_addr``), and
  its constant part, left as an immediate: ``send(<buf>, <buf>_addr + 96, ...)``.
  A send whose offset is a constant needs no register.

A lowered send carries the attribute ``addr=header`` or ``addr=reg`` so the
pass can tell it is done (running it twice changes nothing). Register-side
offsets are untouched. Values are unchanged: a header holds exactly the
offset, and ``reg + imm`` is the offset's linear form regrouped.
"""
from __future__ import annotations

from math import ceil
from typing import Any, Mapping

from ..ir.expr import IntImm, Load, Var
from ..ir.funcs import Send, SendKind
from ..ir.node import Node
from ..ir.stmt import Alloc, FuncCall, Group, Let, MemKind, Seq, Stmt, Store, seq
from ..ir.types import u64
from ..ir.visitor import IRMutator
from .options import target_of
from .forms import Forms
from ..ir.names import Names

ADDR_ATTR = "addr"


def _lowered(call: FuncCall) -> bool:
    return any(k == ADDR_ATTR for k, _ in call.attrs)


class _Headers(IRMutator):
    def __init__(self, names: Names, reg_bytes: int, local: bool):
        self.names, self.reg_bytes, self.local = names, reg_bytes, local
        self.lifted: list[tuple[Var, int]] = []

    def mutate_FuncCall(self, old: FuncCall, new: FuncCall):
        if not isinstance(new.func, Send) or _lowered(new):
            return new
        off = new.ops.mem_offset
        hdr = self.names.fresh(f"{new.ops.mem.name}_hdr", u64)
        size = self.reg_bytes * ceil(off.type.size / self.reg_bytes)
        call = new.with_ops(attrs=new.attrs + ((ADDR_ATTR, "header"),), mem_offset=Load.make(off.type, hdr, 0))
        body = seq(Store.make(hdr, 0, off, origin=new.origin), call)
        if not self.local:
            self.lifted.append((hdr, size))
            return body
        return Alloc.make(hdr, size, MemKind.GRF, body, origin=new.origin)

    def mutate_Seq(self, old, new):
        if self.local:
            return new
        return _share_headers(new, self.lifted)


def _share_headers(body: Seq, lifted: list[tuple[Var, int]]) -> Seq:
    """A send right after another one with the same address in the same memory (an SLM store and its
    store of zeros) reads the first one's header: no second header write, no second header register. (A
    global load and the SLM store of what it loaded may have equal offsets; Xe addresses the two spaces
    from headers of their own.)"""
    stmts = Seq.make(body.stmts).stmts  # the lowered sends' own sequences flattened
    out: list[Stmt] = []
    dropped: set[str] = set()
    i = 0
    while i < len(stmts):
        k = stmts[i]
        call = stmts[i + 1] if i + 1 < len(stmts) else None
        if isinstance(k, Store) and call is not None and header_of(call) == k.buf.name and len(out) >= 2 \
                and isinstance(out[-2], Store) and header_of(out[-1]) == out[-2].buf.name \
                and k.value.is_equal(out[-2].value) and call.func.space == out[-1].func.space:
            dropped.add(k.buf.name)
            out.append(call.with_ops(mem_offset=out[-1].ops.mem_offset))
            i += 2
            continue
        out.append(k)
        i += 1
    if not dropped:
        return body
    lifted[:] = [(b, n) for b, n in lifted if b.name not in dropped]
    return Seq.make(out, origin=body.origin)


def header_of(s: Node) -> str | None:
    """The header buffer that lowered send ``s`` reads its address from (None: not such a send)."""
    if isinstance(s, FuncCall) and isinstance(s.func, Send) and (ADDR_ATTR, "header") in s.attrs \
            and isinstance(s.ops.mem_offset, Load):
        return s.ops.mem_offset.buf.name
    return None


class _Registers(IRMutator):
    def __init__(self, names: Names):
        self.names = names
        self.forms = Forms()

    def mutate_FuncCall(self, old: FuncCall, new: FuncCall):
        if not isinstance(new.func, Send) or _lowered(new):
            return new
        off = new.ops.mem_offset
        if isinstance(off, IntImm):
            return new
        if off.type.lanes == 1 and new.func.kind is SendKind.BLOCK:
            lf = self.forms.of(off)
            variable, imm = self.forms.build(lf.type, dict(lf.terms), 0), lf.const
        else:
            variable, imm = off, 0
        addr = self.names.fresh(f"{new.ops.mem.name}_addr", off.type)
        call = new.with_ops(attrs=new.attrs + ((ADDR_ATTR, "reg"),),
                            mem_offset=addr + IntImm.make(off.type.base, imm) if imm else addr)
        return Let.make(addr, variable, call, origin=new.origin)


def lower_sends(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` with every send addressed the way ``options["target"]`` reads addresses."""
    options = options or {}
    target = target_of(options)
    if target is None or not isinstance(ir, Stmt):
        return ir
    form = target.addressing
    names = Names.of(ir)
    if form.kind == "reg":
        return _Registers(names).mutate(ir)
    headers = _Headers(names, int(options.get("reg_bytes") or 32), bool(options.get("reuse_headers")))
    out = headers.mutate(ir)
    if not headers.lifted:
        return out
    if isinstance(out, Group):  # keep the kernel's labelled group outermost
        return Group.make(out.label, _alloc_all(headers.lifted, out.body), origin=out.origin)
    return _alloc_all(headers.lifted, out)


def _alloc_all(allocs: list[tuple[Var, int]], body: Stmt) -> Stmt:
    for buf, size in reversed(allocs):
        body = Alloc.make(buf, size, MemKind.GRF, body)
    return body

