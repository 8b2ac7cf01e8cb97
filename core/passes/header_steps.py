"""Global message headers stepped from their last value (Xe).

A global message's header holds a 64-bit address, ``argument + offset``; the
code generator builds it from the 32-bit offset the IR stores (on Xe-HPG,
without 64-bit integer ALU: the offset's sum, then ``addc`` and ``add`` per 8
lanes). In an unrolled loop the same header is stored once per copy, with
offsets that differ by a constant: ``hdr = base + k + 768``, then, a copy
later, ``hdr = base + k + 1152``. The second store becomes ``hdr = hdr + 384``:
the code generator steps the 64-bit address in place (``addc`` + ``add``, no
sum), as oneDNN's generator keeps address payloads live and advances them.

A store is stepped only where the result is exact and the header still holds
the earlier value:

- both stores are in one straight-line run (no loop or branch between: a
  loop's first copy is reached from the loop's entry and its back edge);
- the terms other than the constant are the same values: the same
  expressions of the same let bindings, or lets copying the same register
  buffer bytes with no store to that buffer between;
- the step is positive and a message read the earlier value unmasked in
  between, so that offset was in bounds (``docs/ir-semantics.md``: only a
  masked-off element goes unchecked): the earlier offset is not negative,
  and the address the code generator made of it is exactly argument plus
  offset, whatever the argument's low dword;
- every message that reads the header is an unmasked load or store of global
  memory (a prefetch is not bounds-checked; a masked lane's address may be out
  of bounds and must not be stepped from);

Back to back (the last message before the store is the header's own: an
epilogue's stores, a loop's row messages) a header stepped in place would wait
for that message to read its address (a header written anew rotates to other
registers, ``allocation``). There the step goes into a twin header allocated
beside it (``hdr_next = hdr + 1920``) and the messages up to the next store
read the twin; the next back-to-back step goes back. Only for headers every
message of which reads a store made before it in its own straight-line run,
so that the twin never holds the value across a loop's or a branch's edge.

The IR keeps its meaning (the header buffer holds the offset; the interpreter
adds the step to it), so every stage before the code generator checks alike.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Mapping

from ..ir.expr import Binary, Broadcast, BoolImm, Expr, IntImm, Load, Op, Var, summands
from ..ir.funcs import Barrier, BarrierSignal, Fence, Send, Send2D, SendOp
from ..ir.node import Node
from ..ir.names import Names
from ..ir.stmt import Alloc, For, FuncCall, If, Let, Stmt, Store
from ..ir.visitor import IRMutator, IRVisitor, statements, walk
from .options import target_of


def step_headers(ir: Node, options: Mapping[str, Any]) -> Node:
    """``ir`` with the global header stores that repeat an earlier one plus a positive constant written
    as that step (see the module docstring); the same object when none qualifies or the target is not Xe."""
    target = target_of(options)
    if target is None or target.xe is None:
        return ir
    headers = steppable_headers(ir)
    if not headers:
        return ir
    steps = _Steps(headers, covered_headers(ir, headers), Names.of(ir))
    out = steps.mutate(ir)
    if not steps.twins:
        return out
    wrap = _WithTwins(steps.twins)
    out = wrap.mutate(out)
    return out if wrap.placed == set(steps.twins) else ir    # a header allocated elsewhere: left as it was


class _WithTwins(IRMutator):
    """Each header's twin allocated beside it, in the same scope."""

    def __init__(self, twins: dict[str, Var]):
        self.twins = twins
        self.placed: set[str] = set()

    def mutate_Alloc(self, old: Alloc, new: Alloc) -> Stmt:
        twin = self.twins.get(new.buf.name)
        if twin is None:
            return new
        self.placed.add(new.buf.name)
        return Alloc.make(new.buf, new.size, new.kind, Alloc.make(twin, new.size, new.kind, new.body),
                          new.attrs, origin=new.origin)


class _Covered(IRVisitor):
    """The headers some message reads with no store of the header before it in its straight-line run
    (a header stored before a loop, read in it; any message under a branch)."""

    statements_only = True

    def __init__(self, headers: frozenset[str]):
        self.headers = headers
        self.stored: set[str] = set()
        self.bare: set[str] = set()
        self.branches = 0

    def visit_Store(self, s: Store):
        self.stored.add(s.buf.name)

    def visit_FuncCall(self, s: FuncCall):
        if isinstance(s.func, Send) and isinstance(s.ops.mem_offset, Load):
            name = s.ops.mem_offset.buf.name
            if name in self.headers and (self.branches or name not in self.stored):
                self.bare.add(name)

    def visit_For(self, s: Stmt):
        self.stored.clear()

    def visit_If(self, s: If):
        self.stored.clear()
        self.branches += 1

    def leave_If(self, s: If):
        self.stored.clear()
        self.branches -= 1

    leave_For = visit_For


def covered_headers(ir: Node, headers: frozenset[str]) -> frozenset[str]:
    """The headers every message of which reads a store made before it in its own straight-line run: a
    twin can hold their value up to their next store (see ``_Steps``)."""
    walk = _Covered(headers)
    walk.visit(ir)
    return headers - walk.bare


def _is_message(func) -> bool:
    """Whether a call is a message (a send, a 2D block load, a fence or a barrier's signal)."""
    return isinstance(func, (Send, Send2D, Fence, Barrier, BarrierSignal))


def _unmasked(mask) -> bool:
    return isinstance(mask, BoolImm) and mask.value or \
        isinstance(mask, Broadcast) and isinstance(mask.a, BoolImm) and mask.a.value


def steppable_headers(ir: Node, masked: bool = False) -> frozenset[str]:
    """The header buffers every message reading which is an unmasked global load or store (``masked``:
    masked ones too, for targets whose 64-bit adds sign-extend an offset)."""
    good: set[str] = set()
    bad: set[str] = set()
    for s in statements(ir):  # messages are statements: no expression walked
        if isinstance(s, FuncCall) and isinstance(s.func, Send) and isinstance(s.ops.mem_offset, Load):
            off = s.ops.mem_offset
            ok = s.func.space == "global" and s.func.op in (SendOp.LOAD, SendOp.STORE) \
                and (masked or _unmasked(s.ops.mask)) and isinstance(off.offset, IntImm) and off.offset.value == 0
            (good if ok else bad).add(off.buf.name)
    return frozenset(good - bad)


class _Steps(IRMutator):
    """Statements in program order: ``last[header] = [type, terms, constant, read since]`` of its last
    store in the current straight-line run (a loop's or a branch's edges end it; nothing is stepped
    inside a branch); ``epoch[buffer]`` counts what may have written a register buffer, so a let copying
    bytes of it equals another copy with no write between."""

    memoize = False

    def __init__(self, headers: frozenset[str], covered: frozenset[str], names: Names):
        self.headers, self.covered, self.names = headers, covered, names
        self.twins: dict[str, Var] = {}      # header -> the buffer a back-to-back step writes instead
        self.holder: dict[str, Var] = {}     # header -> the buffer its messages read now (its twin or itself)
        self.last: dict[str, list] = {}
        self.epoch: Counter = Counter()
        self.canon: dict[str, tuple] = {}
        self.lets = 0
        self.branches = 0
        self.previous: str | None = None     # the header the last message read (None: another message)

    def pre_Let(self, s: Let) -> None:
        self.lets += 1
        v = s.value
        if isinstance(v, Load) and isinstance(v.offset, IntImm):
            self.canon[s.var.name] = ("copy", v.buf.name, v.offset.value, v.type, self.epoch[v.buf.name])
        else:
            self.canon[s.var.name] = ("let", s.var.name, self.lets)

    def _edges(self, s: Stmt) -> None:
        """A loop's or a branch's edge: what it writes anywhere may differ on the other side."""
        self.last.clear()
        for n in statements(s):  # stores and calls are statements: no expression walked
            if isinstance(n, Store):
                self.epoch[n.buf.name] += 1
            elif isinstance(n, FuncCall):
                self._call_writes(n)

    def pre_For(self, s: For) -> None:
        self._edges(s)

    def mutate_For(self, old: For, new: For) -> Stmt:
        self._edges(old)
        return new

    def pre_If(self, s: If) -> None:
        self._edges(s)
        self.branches += 1

    def mutate_If(self, old: If, new: If) -> Stmt:
        self.branches -= 1
        self._edges(old)
        return new

    def _call_writes(self, s: FuncCall) -> None:
        for a in s.args:                 # what a call may write: the buffers it names
            if isinstance(a, Var):
                self.epoch[a.name] += 1

    def mutate_FuncCall(self, old: FuncCall, new: FuncCall) -> Stmt:
        self._call_writes(old)
        if isinstance(old.func, Send) and isinstance(old.ops.mem_offset, Load):
            off = old.ops.mem_offset
            self.previous = off.buf.name
            rec = self.last.get(self.previous)
            if rec is not None:
                rec[3] = True
            holder = self.holder.get(off.buf.name)
            if holder is not None and holder.name != off.buf.name:
                return new.with_ops(mem_offset=Load.make(off.type, holder, off.offset))
        elif _is_message(old.func):
            self.previous = None
        return new

    def mutate_Store(self, old: Store, s: Store) -> Stmt:
        name = s.buf.name
        self.epoch[name] += 1
        if name not in self.headers:
            return s
        form = self.form(s.value) if isinstance(s.offset, IntImm) and s.offset.value == 0 and s.mask is None \
            and not self.branches else None
        prev = self.last.pop(name, None)
        held = self.holder.pop(name, s.buf)
        if form is None:
            return s
        self.last[name] = [s.value.type, form[0], form[1], False]
        back_to_back = self.previous == name
        if prev is None or not prev[3] or prev[0] != s.value.type or prev[1] != form[0] or \
                (back_to_back and name not in self.covered):
            return s
        step = form[1] - prev[2]
        if not 0 < step < 2 ** 31:
            return s
        into = held
        if back_to_back:    # the message before reads ``held``: step into the other buffer (no wait)
            twin = self.twins.get(name)
            if twin is None:
                twin = self.twins[name] = self.names.fresh(f"{name}_next", s.buf.type)
            into = s.buf if held.name != name else twin
            self.holder[name] = into
        elif held.name != name:
            self.holder[name] = into
        t = s.value.type
        d = IntImm.make(t.base, step)
        value = Binary.make(Op.ADD, Load.make(t, held, IntImm.make(s.offset.type, 0)),
                            d if t.lanes == 1 else Broadcast.make(d, t.lanes))
        return Store.make(into, s.offset, value, s.stride, origin=s.origin)

    def form(self, e: Expr) -> tuple[frozenset, int] | None:
        """``e`` as (its terms other than constants, counted; the constants' sum), or None."""
        terms: Counter = Counter()
        parts, const = summands(e)
        for x in parts:
            if isinstance(x, Var):
                terms[self.canon.get(x.name, ("free", x.name))] += 1
            else:
                nodes = list(walk(x))
                names = [v.name for v in nodes if isinstance(v, Var)]
                if any(isinstance(v, Load) for v in nodes) or any(n not in self.canon for n in names):
                    return None     # a load, a loop variable or an argument inside: not compared
                terms[("expr", x, tuple(self.canon[n] for n in names))] += 1
        return frozenset(terms.items()), const
