"""If-conversion: a branch around messages becomes the messages' predicate.

The builder guards a cooperative copy a thread takes no part in (``if (t < 16) { load B }``), and
a message a tail leaves out, with an ``if``. In the assembly each such ``if`` is a compare and a jump
around the message, in every unrolled copy of the main loop, and its label ends what the code
generator may assume about flags (a flag set before it is set again after it). oneDNN's generator
predicates the message instead: its mask takes the condition, the flag is set once and read by every
message under it. Here::

    if (c) { hdr.s32[0] = off; send(buf, hdr.s32[0], reg, 0, m) }
      ->    hdr.s32[0] = off; send(buf, hdr.s32[0], reg, 0, c && m)

A masked-off message touches neither memory nor its registers (docs/ir-semantics.md), so the
predicated message does what the branch did. Only branches without ``else`` whose body is messages
and the stores of their own headers convert: a header store has no effect but its register, which only
the send right after it reads (send lowering pairs them; a header some send reads without its own store
before it is left alone). The pass runs after the unrolled copies are folded, so a test the peeled
copies decide (a pipelined loop's ``k < n - 2``) has gone before it would be turned into masks.
"""
from __future__ import annotations

from typing import Any, Mapping

from ..ir.expr import Broadcast, BoolImm, Expr, land
from ..ir.funcs import Send
from ..ir.node import Node
from ..ir.stmt import FuncCall, If, Seq, Stmt, Store, seq
from ..ir.visitor import IRMutator, statements
from .hoist import paired_headers
from .options import target_of
from .send_headers import header_of


def _messages(body: Stmt, paired: set[str]) -> list[Stmt] | None:
    """``body``'s statements when each is a send or the store of a paired header right before the send
    reading it, else None."""
    stmts = list(body.stmts) if isinstance(body, Seq) else [body]
    for i, s in enumerate(stmts):
        if isinstance(s, FuncCall) and isinstance(s.func, Send):
            continue
        if isinstance(s, Store) and s.buf.name in paired and s.mask is None and i + 1 < len(stmts) \
                and header_of(stmts[i + 1]) == s.buf.name:
            continue
        return None
    return stmts


def _predicated(call: FuncCall, cond: Expr) -> FuncCall:
    mask = call.ops.mask
    lanes = mask.type.lanes
    guard = Broadcast.make(cond, lanes) if lanes > 1 else cond
    if isinstance(mask, BoolImm) and mask.value:
        return call.with_ops(mask=guard)
    if isinstance(mask, Broadcast) and isinstance(mask.a, BoolImm) and mask.a.value:
        return call.with_ops(mask=guard)
    return call.with_ops(mask=land(guard, mask))


class _Convert(IRMutator):
    def __init__(self, paired: set[str]):
        self.paired = paired

    def mutate_If(self, old: If, new: If):
        if new.else_ is not None or new.cond.type.lanes != 1:
            return new
        stmts = _messages(new.then, self.paired)
        if stmts is None:
            return new
        return seq(*(_predicated(s, new.cond) if isinstance(s, FuncCall) else s for s in stmts))


def predicate_messages(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` with every ``if`` around messages (and their header stores) turned into the messages'
    predicate, on Xe targets (a message's predicate is a flag there); the same object when there is none."""
    target = target_of(options or {})
    if target is None or target.xe is None:
        return ir
    return _Convert(paired_headers(statements(ir))).mutate(ir)
