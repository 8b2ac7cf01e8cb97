"""K slicing (oneDNN's K in the thread group, ``T=ic4``): partial C tiles summed through SLM.

With ``tg`` over K dims, the threads of a group along ``thread_id2`` each
reduce one slice of every K block (see :mod:`.loop_nest`), so after the
reduction loop each holds a partial C tile. They are added before the
epilogue::

    if slice > 0: store the C tile to SLM slot (slice - 1, thread in the M x N grid)
    barrier
    if slice == 0: for every other slice: load its tile in message-sized pieces, add it to C
    if slice == 0: epilogue

The SLM slots hold the tile's register bytes as they are (same layout), so
every message is a block message and no view is involved.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

from kdd.core.ir import operators
from kdd.core.ir.expr import BoolImm, Expr, Var, var
from kdd.core.ir.funcs import Send, SendKind, SendOp
from kdd.core.ir.names import Names
from kdd.core.ir.stmt import FuncCall, If, Stmt, seq
from kdd.core.ir.types import s32, u64

from . import arith
from .elementwise import elementwise
from .loop_nest import THREAD_IDS
from .loops import nest
from .origin import Origin
from .slm import slm_barrier
from .tile import RegTensor, row_major

ORIGIN = Origin("k_slices.reduce", "tg")


@dataclass(frozen=True)
class KSlices:
    """The cross-slice reduction of one kernel: its SLM, its statements, and who runs the epilogue."""

    count: int
    slm: Var
    slm_bytes: int
    reduce: Stmt
    first: Expr                       # true on the slice that holds the sum and runs the epilogue
    part: RegTensor                   # registers receiving another slice's piece of C


def k_slices(c: RegTensor, tiling, names: Names, simd: int, max_message_bytes: int) -> KSlices | None:
    """The reduction of ``c`` across the group's K slices, or None when ``tiling`` has no K slicing."""
    count = prod(d.tg for d in tiling.role("k"))
    if count == 1:
        return None
    x, y, _ = tiling.tg_grid
    size = c.dtype.size
    piece = _piece(c.elems, size, max_message_bytes)
    pieces = c.elems // piece
    tid = [var(n, s32) for n in THREAD_IDS]
    slice_ = tid[2]
    mn_thread = operators.add(tid[0] if x > 1 else 0, operators.mul(tid[1], x) if y > 1 else 0)
    slm = names.fresh("c_slices", u64)
    part = RegTensor(names.fresh("c_part", u64), row_major(c.dtype, (1, 1, piece)), 0, c.roles)

    def slot(k: Expr) -> Expr:  # byte offset of slice k's tile (k >= 1)
        return operators.mul(operators.add(operators.mul(operators.add(k, -1), x * y), mn_thread), c.bytes)

    def send(op: SendOp, k: Expr, j: Expr, reg: Var, reg_off: Expr) -> Stmt:
        return FuncCall.make(Send(op, SendKind.BLOCK, "slm", c.dtype, piece),
                             [slm, operators.add(slot(k), operators.mul(j, piece * size)), reg, reg_off,
                              BoolImm.make(True)], origin=ORIGIN)

    store = nest(names, [("c_piece", pieces)],
                 lambda j: send(SendOp.STORE, slice_, j, c.buf, operators.add(c.offset, operators.mul(j, piece * size))),
                 ORIGIN)

    def add_piece(k: Expr, j: Expr) -> Stmt:
        dst = RegTensor(c.buf, row_major(c.dtype, (1, 1, piece)), operators.add(c.offset, operators.mul(j, piece * size)),
                        c.roles)
        return seq(send(SendOp.LOAD, k, j, part.buf, arith.const(0)),
                   elementwise(dst, [dst, part], lambda a, b: a + b, names, simd, ORIGIN))
    gather = nest(names, [("c_slice", count - 1), ("c_piece", pieces)],
                  lambda k, j: add_piece(operators.add(k, 1), j), ORIGIN)
    first = slice_.eq(0)
    reduce = seq(If.make(slice_.gt(0), store, origin=ORIGIN), slm_barrier(ORIGIN),
                 If.make(first, gather, origin=ORIGIN))
    return KSlices(count, slm, (count - 1) * x * y * c.bytes, reduce, first, part)


def _piece(elems: int, size: int, max_bytes: int) -> int:
    """Elements per message: the largest power of two dividing ``elems`` within ``max_bytes``."""
    n = 1
    while elems % (2 * n) == 0 and 2 * n * size <= max_bytes:
        n *= 2
    return n
