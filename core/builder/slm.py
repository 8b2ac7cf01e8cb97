"""Single SLM buffering (seed 000): a thread group stages an operand's group tile in SLM.

Per reduction iteration the group tile is loaded from global memory
cooperatively (each thread takes a run of consecutive messages, the last
threads guarded where the messages run out), written to SLM between two
barriers, and every thread then reads its own tile from SLM. The SLM layout
is the group tile as a dense matrix with the memory-contiguous matrix dim
innermost and, inside each matrix dim, the view dims the threads split
outermost; masked elements (tails, padding) are stored as zeros, so SLM
reads need no masks. So a thread's staged messages are one contiguous piece
of SLM (stored with the largest block messages), and where its own tile is
one contiguous piece in its register order too, it reads it with
full-size block messages.

**FMA-ready layout.** When the thread's register layout (``fma_layout``, the
FMA operand layout such as dpas's VNNI-packed B) differs from that dense
order and the group tile is the thread tiles side by side along one view
dim, the SLM holds the thread tiles one after another, each already in the
register layout (oneDNN's FMA-ready SLM layout): the reorder happens once,
as the cooperative stores scatter each element to its place, and every
thread reads its tile with a few full-size block messages straight into its
operand registers (no staging buffer, no reorder in the main loop).

**Copies in the FMA-ready order.** Where memory already holds the group tile in
the FMA-ready layout (``wei = any`` blocked as dpas's B, ``layouts``), a thread's
run of that layout is contiguous in memory too: block loads and block stores to
the same place in SLM, no reorder (``_direct_copy``).

**Copies in columns.** Where a thread's rows of the memory-contiguous dim are
no contiguous piece of the FMA-ready layout (dpas's VNNI B pairs two K rows in
a dword, and a thread of the cooperative copy holds one K row of 128 output
channels), the copy is taken in columns instead: its messages are short rows
of one column chunk (8 channels) with K fastest, so a thread's run is a box
of K rows by one chunk, which vector messages gather (a lane a row), one
reorder packs and one block message stores (``_column_copy``).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from kdd.core.ir import operators
from kdd.core.ir.expr import Broadcast, BoolImm, Expr, Op, Ramp, Unary, Var
from kdd.core.ir.funcs import Barrier, Fence, Reorder, Send, SendKind, SendOp
from kdd.core.ir.names import Names
from kdd.core.ir.stmt import For, FuncCall, If, Let, Stmt, seq
from kdd.core.ir.types import u32, u64
from kdd.core.layout.layout import Block, Layout
from kdd.core.layout.view import View, ViewDim, offset_expr

from . import arith
from .loads import (MessageMask, MessagePlan, MessageRules, TransferPlan, VectorPlan, contiguous_run, dword_strides,
                    inner_last, plan_messages, plan_vectors, same_placement, transfer, zero_fill)
from .origin import Origin
from .tile import MatrixDim, RegTensor, TileAccess, row_major


def slm_barrier(origin: Origin) -> Stmt:
    """A barrier that orders the SLM writes before it for the threads after it: the hardware's barrier
    does not wait for outstanding SLM stores, so an SLM fence completes them first (as oneDNN lowers it)."""
    return seq(FuncCall.make(Fence("slm"), origin=origin), FuncCall.make(Barrier(), origin=origin))


@dataclass(frozen=True)
class SlmStage:
    """One staged operand: its SLM and staging buffers and the statements around the barriers."""

    slm: Var
    slm_bytes: int
    staging: Var
    staging_bytes: int
    load: Stmt      # global -> staging registers (before the first barrier)
    store: Stmt     # staging registers -> SLM (between the barriers)
    access: TileAccess  # the thread's own tile, read from SLM
    tile_offset: Expr | None = None  # FMA-ready layout: byte offset of the thread's tile in SLM
    pack: Var | None = None  # registers (staging_bytes) holding the staged piece in the SLM layout
    zeros: "ZeroSource | None" = None  # the zeros the SLM stores write where the loads were masked off


@dataclass(frozen=True)
class ZeroSource:
    """Registers of zeros (one message's ``bytes``, cleared once before the reduction) that the SLM
    stores write in the lanes a masked-off load left alone (padding, tails): each mirrored store is
    predicated on its load's mask and followed by a store of zeros predicated on its negation, so the
    loads need no zero fill of the staging registers in every iteration."""

    buf: Var
    bytes: int
    mask: MessageMask  # the load's message mask

    def clear(self, names: Names, lanes: int, origin: Origin) -> Stmt:
        """The zero fill, before the reduction."""
        return zero_fill(RegTensor(self.buf, row_major(u32, (1, 1, self.bytes // 4))), lanes, names, origin)


def stage(name: str, group: TileAccess, thread_roles: tuple[MatrixDim, MatrixDim, MatrixDim],
          local_start: dict, inner: int, rules: MessageRules, names: Names,
          thread: Expr, threads: int, fma_layout: Layout | None = None, spare_bytes: int = 0,
          unread: frozenset[str] = frozenset(), direct_only: bool = False) -> SlmStage:
    """Stage ``group`` (the group's tile of an operand) in SLM; ``inner`` is the innermost matrix dim.

    ``fma_layout`` is the thread's register layout of the operand: given, the
    SLM takes the FMA-ready layout where the tiles allow it (module doc), and with
    ``direct_only`` only where memory holds it so (``_direct_copy``: no reorder, no pack buffer).
    ``spare_bytes``: registers the config's estimate leaves, which a ``ZeroSource`` may take.
    ``unread``: view dims whose masked-off elements no stored result reads (``TransferPlan.unread``).
    """
    group = _threads_outer(group, thread_roles, inner)
    view = group.view
    dtype = view.layout.dtype
    sizes = group.real
    order = inner_last(inner)
    tile = RegTensor(names.fresh(f"{name}_slm", u64), row_major(dtype, sizes, order))
    slm_view = _slm_view(view, group.roles, order, dtype)
    knob = Origin(f"slm.{name}", "slm")
    plan = plan_messages(group, tile, rules)
    staging = names.fresh(f"{name}_g2s", u64)
    rounds = -(-plan.count // threads)
    whole = rounds * threads == plan.count  # every thread has all its rounds
    vectors = plan_vectors(plan, rounds, dtype.size, rules) if whole else None

    def load(vectors, masks=None, rows=None):
        return transfer(SendOp.LOAD, group, tile, rules, names, knob,
                        TransferPlan(split=(thread, threads), staging=staging, vectors=vectors, plan=rows,
                                     masks=masks, unread=unread))

    def vector_copy(vectors, start, rows=None, placed=None):
        """The vector messages' loads and their mirrored (or ``placed``) SLM stores from ``start``."""
        masks: list[MessageMask] = []
        # Without room for the zeros' registers the loads keep their zero fills.
        loaded = load(vectors, masks if vectors.lanes * vectors.vec * 4 <= spare_bytes else None, rows)
        zeros = ZeroSource(names.fresh(f"{name}_zero", u64), vectors.lanes * vectors.vec * 4, masks[0]) \
            if masks else None
        return loaded, _vector_store(tile, staging, vectors, start, names, knob, zeros, placed), zeros

    starts = {d.name: local_start.get(d.name, arith.const(0)) for d in view.dims}
    access = TileAccess(slm_view, tile.buf, "slm", thread_roles, starts, frozenset(), group.facts)
    ready = _fma_ready(group, thread_roles, fma_layout, tile.layout)
    # Where the threads split the group tile, a thread copy of vector messages whose lanes can store their
    # pieces where the FMA-ready tile places them takes that copy (``_placed_pieces``): its per-lane
    # addresses are shifts and masks of the thread's ramp (``codegen/xe/ranges``: unsigned, one instruction
    # each), cheaper than a block copy's row messages and their headers (xehpc mb1 ic128ih512 ... i=ic32oc64ow32:
    # 16 loads of 64 bytes and 32 SLM stores of 32 a step -> a gather and a scatter, 5.6 -> 4.24 ALU per dpas;
    # seed002 base 2.17 -> 1.19) or the dense tile's 32-byte SLM reads and bounce moves (mb2 ic1280ih32 ...
    # i=ic32mb2oc64ow16: 7.25 -> 6.5). Elsewhere a split dim among several wide ones (``_threads_outer_m``)
    # takes the dense tile; a single one keeps the FMA-ready tile's block or column copy. A tile every
    # thread reads whole (the threads split the other operand) takes the placed copy too: the row copy
    # it replaces stored each 64-byte row as two 32-byte K halves through a bounce move (xehpc mb1
    # ic640iw4096 ... T=oc2 i=ic32oc32ow32: 66 -> 20 sends, 3.79 -> 0.52 ALU per dpas).
    split = ready is not None and ready[0] is not None
    placed = ready is not None and whole and vectors is not None and _placed_pieces(tile, ready[1], vectors)
    if split and not placed and sum(e > 1 for _, e in group.roles[ready[0]].dims) > 1:
        ready = None
    direct = None
    if ready is not None:
        direct = _direct_copy(group, RegTensor(tile.buf, ready[1]), plan, rules, names, knob, thread, threads,
                              staging, unread)
        if direct is None and direct_only:
            ready = None
    if ready is None:
        zeros, rows = None, None
        short = _short_rows(group, tile, plan, threads, rules) if vectors is None else None
        if short is not None:
            rows, vectors = short
            plan, rounds = rows, rows.count // threads
        if vectors is not None:
            loaded, store, zeros = vector_copy(vectors, operators.mul(thread, rounds * plan.elems * dtype.size), rows)
        else:
            loaded = load(vectors)
            store = _store(tile, staging, plan.elems, plan.count, rounds, thread, threads, rules, names, knob)
        offset = None
        if fma_layout is not None and _contiguous_thread_tile(group, thread_roles, order, fma_layout, tile.layout):
            index = [starts[d.name] for d in slm_view.dims]
            offset = operators.fold(operators.mul(offset_expr(slm_view.layout, index), dtype.size))
        return SlmStage(tile.buf, tile.bytes, staging, rounds * plan.elems * dtype.size, loaded, store,
                        access, offset, zeros=zeros)
    split, layout = ready
    index = [arith.const(0)] * 3
    if split is not None:
        # The thread's first row of the split matrix dim: its start in the one view dim the threads
        # split, times the dims inside it, which a thread holds whole (``_fma_ready``).
        extents = [(d, e) for d, e in group.roles[split].dims if e > 1]
        index[split] = operators.mul(starts[extents[0][0]], math.prod(e for _, e in extents[1:]))
    tile_offset = operators.fold(operators.mul(offset_expr(layout, index), dtype.size))
    if direct is not None:
        return SlmStage(tile.buf, tile.bytes, staging, direct[0], direct[1], direct[2], access, tile_offset)
    store, pack = None, None
    n = rounds * plan.elems
    if placed:
        loaded, store, zeros = vector_copy(vectors, operators.mul(thread, n * dtype.size), placed=layout)
        return SlmStage(tile.buf, tile.bytes, staging, n * dtype.size, loaded, store, access, tile_offset,
                        zeros=zeros)
    if not _scatter_shape(tile, layout, plan.elems).block and whole:
        piece = _packed_piece(tile, layout, order, thread, n)
        pack = names.fresh(f"{name}_pack", u64)
        packed = _pack(tile, piece, order, staging, pack, n, rules, knob, vectors) if piece is not None else None
        if packed is not None and packed[1] and vectors is not None:
            # The vector messages' registers (dword-major over the lanes) need a reorder anyway: rows
            # read by block messages reorder with whole-row moves, theirs element by element (xehpc
            # ic4 kw4: 546 -> 96 moves per step), which costs more than the messages they save.
            rows = _pack(tile, piece, order, staging, pack, n, rules, knob)
            packed, vectors = (rows, None) if rows is not None else (packed, vectors)
        if packed is not None:
            store, moved = packed
            pack = pack if moved else None
    if store is None:
        column = _column_copy(group, tile, layout, rules, names, knob, thread, threads, staging, f"{name}_pack",
                              unread)
        if column is not None:
            return SlmStage(tile.buf, tile.bytes, staging, *column[:3], access, tile_offset, column[3])
        pack, vectors = None, None
        store = _scatter(tile, layout, staging, plan.elems, plan.count, rounds, thread, threads, names, knob)
    return SlmStage(tile.buf, tile.bytes, staging, rounds * plan.elems * dtype.size, load(vectors), store, access,
                    tile_offset, pack)


def _short_rows(group: TileAccess, tile: RegTensor, plan: MessagePlan, threads: int,
                rules: MessageRules) -> tuple[MessagePlan, VectorPlan] | None:
    """Where ``plan`` scatters the tile an element a lane, its runs as rows shorter than any block message
    (a grouped convolution's 4 channels of a pixel: 8 bytes) and the vector messages that gather them, a
    run of dwords a lane: None where the runs are no whole dwords, the threads' shares differ or the
    vectors take no fewer messages."""
    size = tile.dtype.size
    run = contiguous_run(group, tile, rules.merged_runs)
    if plan.kind is not SendKind.SCATTERED or run < 2 or run * size % 4 or not dword_strides(group.view):
        return None
    rows = MessagePlan(SendKind.BLOCK, run, tile.elems // run)
    rounds = rows.count // threads
    vectors = plan_vectors(rows, rounds, size, rules) if rounds * threads == rows.count else None
    if vectors is None or vectors.count >= -(-plan.count // threads):
        return None
    return rows, vectors


def _direct_copy(group: TileAccess, ready: RegTensor, dense: MessagePlan, rules: MessageRules, names: Names,
                 origin: Origin, thread: Expr, threads: int, staging: Var,
                 unread: frozenset[str]) -> tuple[int, Stmt, Stmt] | None:
    """The cooperative copy in the FMA-ready order itself, where memory holds the group tile so (weights
    blocked as dpas's B, ``layouts``): block loads of a thread's run of the ``ready`` tile and block
    stores of it to the same place in SLM, no reorder. Returns the staging bytes, the load and the
    store, or None where that takes small messages or more of them than the dense copy's ``dense``."""
    plan = plan_messages(group, ready, rules)
    if plan.kind is not SendKind.BLOCK or plan.count > dense.count or plan.elems * ready.dtype.size < 4:
        return None
    rounds = -(-plan.count // threads)
    load = transfer(SendOp.LOAD, group, ready, rules, names, origin,
                    TransferPlan(split=(thread, threads), staging=staging, unread=unread))
    store = _store(ready, staging, plan.elems, plan.count, rounds, thread, threads, rules, names, origin)
    return rounds * plan.elems * ready.dtype.size, load, store


def _threads_outer(group: TileAccess, thread_roles, inner: int) -> TileAccess:
    """``group`` with the view dims that the threads split moved outermost in each matrix dim (keeping
    the innermost dim of the contiguous one): in the dense SLM tile each thread's tile then lies in
    one piece, and a thread's consecutive cooperative messages land next to each other."""
    thread = {n: e for r in thread_roles for n, e in r.dims}
    roles = []
    for d, role in enumerate(group.roles):
        split = [(n, e) for n, e in role.dims if thread.get(n, 1) < e]
        moved = MatrixDim(tuple(split + [(n, e) for n, e in role.dims if (n, e) not in split]))
        roles.append(role if d == inner and moved.innermost() != role.innermost() else moved)
    if tuple(roles) == tuple(group.roles):
        return group
    return TileAccess(group.view, group.mem, group.space, tuple(roles), group.starts, group.bounded, group.facts,
                      group.base)


def _contiguous_thread_tile(group: TileAccess, thread_roles, order, fma_layout: Layout, dense: Layout) -> bool:
    """Whether each thread's tile is one contiguous piece of the dense SLM tile, in the thread's register
    order (``fma_layout`` row-major over the same dims): then a thread reads it with full-size block
    messages straight into its operand registers."""
    thread = tuple(r.size for r in thread_roles)
    if tuple(fma_layout.dims) != thread or fma_layout.size_bytes() % 4 or not Layout(
            dense.dtype, thread, fma_layout.blocks).is_equal(row_major(dense.dtype, thread, _order(dense))):
        return False  # (block messages move whole dwords)
    extent = {n: e for r in thread_roles for n, e in r.dims}
    # Outer to inner over the dense tile: dims the thread holds one index of, then at most one it
    # holds part of, then dims it holds whole.
    dims = [(n, e, extent.get(n, 1)) for k in order for n, e in group.roles[k].dims if e > 1]
    k = 0
    while k < len(dims) and dims[k][2] == 1:
        k += 1
    if k < len(dims) and dims[k][2] < dims[k][1]:
        k += 1
    if any(t != e for _, e, t in dims[k:]):
        return False
    held = [n for n, e, t in dims if t > 1]
    mine = [n for k in order for n, e in thread_roles[k].dims if e > 1]
    return held == mine


def _fma_ready(group: TileAccess, thread_roles, fma_layout: Layout | None,
               dense: Layout) -> tuple[int | None, Layout] | None:
    """``(split matrix dim, group layout)`` of the FMA-ready SLM layout (split None: every thread
    reads the whole group tile), or None where it does not apply: the thread layout is the dense
    one already, the tile is padded, or the threads split the group tile other than along one
    view dim of one matrix dim."""
    if fma_layout is None or fma_layout.dtype != dense.dtype:
        return None
    thread = tuple(r.size for r in thread_roles)
    if tuple(fma_layout.dims) != thread or Layout(dense.dtype, thread, fma_layout.blocks).is_equal(
            row_major(dense.dtype, thread, _order(dense))):
        return None
    split = [d for d in range(3) if group.real[d] != thread[d]]
    if not split:
        return None, fma_layout
    if len(split) != 1:
        return None
    d = split[0]
    # The group's M (or N) index must be the thread's index outer, the thread's own inner: the one dim
    # the threads split outermost, the others held whole, the thread's wide dims in the group's order.
    wide = [(n, e) for n, e in group.roles[d].dims if e > 1]
    held = {n: e for n, e in thread_roles[d].dims}
    mine = [n for n, e in thread_roles[d].dims if e > 1]
    if not wide or any(held.get(n) != e for n, e in wide[1:]) \
            or mine != [n for n, e in wide if held.get(n, 1) > 1]:
        return None
    count = group.real[d] // thread[d]
    blocks = tuple(fma_layout.blocks) + (Block(d, count, fma_layout.padded_elems()),)
    return d, Layout(dense.dtype, group.real, blocks)


def _order(dense: Layout) -> tuple[int, int, int]:
    """The dims of a row-major layout, outer to inner (dims of size 1 first)."""
    inner = [b.dim for b in sorted(dense.blocks, key=lambda b: -b.stride) if b.size > 1]
    return tuple([d for d in range(3) if d not in inner] + inner)


@dataclass(frozen=True)
class _ScatterShape:
    """How ``_scatter`` stores one staged message: ``unit`` elements (one dword of VNNI pairs or quads,
    or one element) of type ``dtype`` per lane, ``lanes`` lanes ``step`` bytes apart; ``block``
    when those are contiguous whole dwords (block messages move dwords: a lone f16 of a depthwise
    tile is a one-lane scattered store)."""

    unit: int
    dtype: object
    lanes: int
    step: int
    first: Block

    @property
    def block(self) -> bool:
        contiguous = self.lanes == 1 or self.step == self.unit * self.dtype.size
        return contiguous and self.lanes * self.unit * self.dtype.size % 4 == 0


def _scatter_shape(tile: RegTensor, layout: Layout, elems: int) -> _ScatterShape:
    size, dim = tile.dtype.size, tile.inner_block().dim
    blocks = [b for b in layout.blocks if b.dim == dim and b.size > 1]
    unit, dtype = 1, tile.dtype
    if len(blocks) > 1 and blocks[0].stride == 1 and blocks[0].size * size == 4 and elems % blocks[0].size == 0:
        unit, dtype = blocks[0].size, u32
    first = blocks[1] if unit > 1 else blocks[0]
    return _ScatterShape(unit, dtype, math.gcd(elems // unit, first.size), first.stride * size, first)


def _packed_piece(tile: RegTensor, layout: Layout, order, thread: Expr, n: int) -> RegTensor | None:
    """The piece of ``layout`` (the FMA-ready SLM tile) a thread's ``n`` staged elements fill, where those
    elements (a run of the dense tile, the thread's messages) are one box of the matrix whose place in
    ``layout`` is one contiguous piece; None where they are not (then ``_scatter`` stores them element
    group by element group)."""
    sizes = tile.layout.dims
    inner, p = 1, None
    for d in reversed(order):
        if sizes[d] == 1:
            continue
        if n % (inner * sizes[d]) == 0:
            inner *= sizes[d]
            continue
        p = d
        break
    if p is None:  # the run is the whole tile: one thread's, a piece wherever the layout puts it
        piece = RegTensor(tile.buf, layout)
        return piece if _dense(piece.layout.blocks, n) else None
    if n % inner or sizes[p] % (n // inner):
        return None
    if any(sizes[d] > 1 for d in order[:order.index(p)]):
        return None
    try:
        piece = RegTensor(tile.buf, layout).rows(p, thread, n // inner)
    except ValueError:
        return None
    return piece if _dense(piece.layout.blocks, n) else None


def _mirrored(tile: RegTensor, piece: RegTensor, order, vectors: VectorPlan | None) -> bool:
    """Whether the vector messages that stage a thread's run (lane ``l`` of message ``q``: piece
    ``q * lanes + l`` of the run) can store it to ``piece`` mirrored, each lane its piece at the run's
    start plus a constant ramp: where ``piece`` holds the run in the dense tile's row-major order. The
    message then does the reorder a block store would need (the gather's dword-major registers into
    rows): xehpc's 16-byte pixel rows of A, 14 ``mov`` per 256 bytes."""
    if vectors is None or vectors.rows:
        return False
    box = piece.layout.dims
    return same_placement(row_major(tile.dtype, box, order), Layout(tile.dtype, box, piece.layout.blocks))


def _placed_pieces(tile: RegTensor, layout: Layout, vectors: VectorPlan | None) -> bool:
    """Whether each piece a lane of the vector messages moves (``vectors.vec`` dwords of the dense tile's
    run) is contiguous in the FMA-ready ``layout`` too, though the pieces are not in the dense order
    there: then each lane stores its piece where it belongs (``_vector_store`` with the layout), and
    the thread reads its tile with whole-register block messages (xehpc A of ``mb2 ow8`` under threads
    along ``ow``: a lane a 32-byte K chunk of a pixel row, rows two to a register)."""
    if vectors is None or vectors.rows or same_placement(tile.layout, layout):
        return False
    pe = vectors.vec * 4 // tile.dtype.size
    # plain integers, no numpy: loading it would cost an Xe compile more than these few thousand offsets
    index = sorted(itertools.product(*(range(n) for n in tile.layout.dims)), key=tile.layout.unchecked_offset)
    placed = [layout.unchecked_offset(i) for i in index]
    if len(placed) % pe:
        return False
    return all(placed[k + j] == placed[k] + j for k in range(0, len(placed), pe) for j in range(1, pe))


def _pack(tile: RegTensor, piece: RegTensor, order, staging: Var, pack: Var, n: int, rules: MessageRules,
          origin: Origin, vectors: VectorPlan | None = None) -> tuple[Stmt, bool] | None:
    """The SLM stores of a thread's ``n`` staged elements into ``piece`` (``_packed_piece``) as one
    register reorder into ``pack`` and the largest block messages. The flag says whether ``pack`` is
    used: vector messages (``vectors``) may have staged the box in ``piece``'s order already (a VNNI
    gather: lane ``n`` a row of K, vector element ``v`` its ``v``-th pair), and then the stores read
    the staging registers with no reorder.

    This is the FMA-ready layout's reorder done once per tile on the global -> SLM path: dpas's VNNI B
    from rows of K, 8 scattered stores -> one reorder and one 256-byte block store."""
    box = piece.layout.dims
    try:
        src = row_major(tile.dtype, box, order) if vectors is None else vectors.layout(tile.dtype, box, order)
    except ValueError:
        return None
    return _pack_stores(tile, piece, src, staging, pack, n, rules, origin)


def _pack_stores(tile: RegTensor, piece: RegTensor, src: Layout, staging: Var, pack: Var, n: int,
                 rules: MessageRules, origin: Origin) -> tuple[Stmt, bool] | None:
    """The staged ``n`` elements (laid out as ``src``) reordered into ``pack`` as ``piece`` (a
    contiguous piece of the SLM tile) lays them out, where the layouts differ, and stored with the
    largest block messages; the flag says whether ``pack`` is used. None where the piece's bytes
    make no whole dword messages."""
    size = tile.dtype.size
    nbytes = n * size
    step = max((b for b in (1 << i for i in range(nbytes.bit_length()))
                if nbytes % b == 0 and b <= rules.max_block_bytes), default=0)
    if step < 4:
        return None
    dst = Layout(tile.dtype, piece.layout.dims, piece.layout.blocks)
    moved = not same_placement(src, dst)
    move = FuncCall.make(Reorder(src, dst), [staging, arith.const(0), pack, arith.const(0)], origin=origin) \
        if moved else None
    func = Send(SendOp.STORE, SendKind.BLOCK, "slm", tile.dtype, step // size)
    stores = [FuncCall.make(func, [tile.buf, operators.add(piece.offset, k * step), pack if moved else staging,
                                   arith.const(k * step), BoolImm.make(True)], origin=origin)
              for k in range(nbytes // step)]
    return seq(move, *stores), moved


def _column_copy(group: TileAccess, tile: RegTensor, layout: Layout, rules: MessageRules, names: Names,
                 origin: Origin, thread: Expr, threads: int, staging: Var,
                 pack_name: str, unread: frozenset[str]) -> tuple[int, Stmt, Stmt, Var | None] | None:
    """The cooperative copy of a 2D group tile taken in columns, where the FMA-ready ``layout`` keeps
    rows of the other dim together (dpas's VNNI B pairs two K rows in a dword) so that a thread's rows
    of the memory-contiguous dim are no contiguous piece of it: messages are the layout's first
    column chunk of one row (8 columns of B), the other dim fastest, so a thread's run is a box
    of rows by one chunk, gathered by vector messages (a lane a row), reordered once and stored
    with block messages (res3's B: 16 two-byte scatters -> one 256-byte store). Returns the
    staging bytes, the load, the store and the pack buffer (None: unused), or None where the
    tile, the threads or the messages do not fit this."""
    shape = _column_shape(tile, layout, threads)
    if shape is None:
        return None
    dim, k, chunk, rows, cols, rounds = shape
    dims = tile.layout.dims
    column = RegTensor(tile.buf, Layout(tile.dtype, dims, (Block(dim, chunk, 1), Block(k, rows, chunk),
                                                            Block(dim, cols // chunk, chunk * rows))))
    run = contiguous_run(group, column)
    if run % chunk:
        return None
    n = rounds * chunk
    piece = _thread_piece(tile, layout, shape, thread, threads)
    if piece is None:
        return None
    order = tuple(d for d in range(3) if d not in (k, dim)) + (k, dim)
    nbytes = n * tile.dtype.size
    if run % n == 0 and nbytes <= rules.max_block_bytes and not nbytes & (nbytes - 1):
        # A thread's box is one piece of memory (weights blocked by the chunk, ``ABcd16b16a``: 8 K rows of
        # 16 channels, 256 bytes): one block message with one address instead of a lane a row, and the
        # pack reorders whole rows (a row's channels into every other word of the VNNI pairs).
        pack = names.fresh(pack_name, u64)
        packed = _pack_stores(tile, piece, row_major(tile.dtype, piece.layout.dims, order), staging, pack, n,
                              rules, origin)
        if packed is not None:
            plan = MessagePlan(SendKind.BLOCK, n, rows * cols // n)
            load = transfer(SendOp.LOAD, group, column, rules, names, origin,
                            TransferPlan(split=(thread, threads), staging=staging, plan=plan, unread=unread))
            store, moved = packed
            return nbytes, load, store, pack if moved else None
    plan = MessagePlan(SendKind.BLOCK, chunk, rows * cols // chunk)  # rows only vector messages move
    vectors = plan_vectors(plan, rounds, tile.dtype.size, rules)
    if vectors is None:
        return None
    try:
        src = vectors.layout(tile.dtype, piece.layout.dims, order)
    except ValueError:
        return None
    if _mirrored(tile, piece, order, vectors):
        store, pack, moved = _vector_store(tile, staging, vectors, piece.offset, names, origin), None, False
    else:
        pack = names.fresh(pack_name, u64)
        packed = _pack_stores(tile, piece, src, staging, pack, n, rules, origin)
        if packed is None:
            return None
        store, moved = packed
    load = transfer(SendOp.LOAD, group, column, rules, names, origin,
                    TransferPlan(split=(thread, threads), staging=staging, vectors=vectors, plan=plan,
                                 unread=unread))
    return n * tile.dtype.size, load, store, pack if moved else None


def _column_shape(tile: RegTensor, layout: Layout, threads: int):
    """``(dim, k, chunk, rows, cols, rounds)`` of a column copy: the memory-contiguous dim and the other
    one, the layout's column chunk, the tile's rows (of ``k``) and columns (of ``dim``), and the rows of
    a thread's run; None where the tile is not 2D or the threads' runs would not fit whole chunks."""
    dim = tile.inner_block().dim
    dims = tile.layout.dims
    others = [d for d in range(3) if d != dim and dims[d] > 1]
    if len(others) != 1:
        return None
    k = others[0]
    chunk = next((b.size for b in layout.blocks if b.dim == dim and b.size > 1), 0)
    rows, cols = dims[k], dims[dim]
    if chunk < 2 or cols % chunk or (rows * cols // chunk) % threads:
        return None
    rounds = rows * cols // chunk // threads
    if rows % rounds:
        return None  # a thread's run would cross a column chunk
    return dim, k, chunk, rows, cols, rounds


def _thread_piece(tile: RegTensor, layout: Layout, shape: tuple, thread: Expr, threads: int) -> RegTensor | None:
    """The piece of the FMA-ready tile ``thread`` stores (None: the threads' pieces do not tile it)."""
    dim, k, chunk, rows, _, rounds = shape
    per_chunk = rows // rounds
    n = rounds * chunk

    def piece_of(t: Expr | int) -> RegTensor:
        return RegTensor(tile.buf, layout).rows(dim, arith.div(t, per_chunk, threads), chunk) \
            .rows(k, arith.mod(t, per_chunk, threads), rounds)
    try:
        piece = piece_of(thread)
        # The layout's blocks need not nest chunk-major, so check that the threads' pieces tile the SLM
        # tile, each byte stored once (a piece is dense: it starts at its offset).
        starts = sorted(operators.value_of(piece_of(t).offset) for t in range(threads))
    except ValueError:
        return None
    if not _dense(piece.layout.blocks, n) or starts != [t * n * tile.dtype.size for t in range(threads)]:
        return None
    return piece


def _dense(blocks, n: int) -> bool:
    """Whether ``blocks`` place their ``n`` elements at offsets ``0 .. n-1``, each once."""
    offsets = [0]
    for b in blocks:
        offsets = [o + i * b.stride for o in offsets for i in range(b.size)]
    return len(offsets) == n and sorted(offsets) == list(range(n))


def _scatter(tile: RegTensor, layout: Layout, staging: Var, elems: int, count: int, rounds: int,
             thread: Expr, threads: int, names: Names, origin: Origin) -> Stmt:
    """SLM stores of the staged messages, each element to its place in ``layout``: the messages
    and staging slots of the cooperative load (``transfer`` with ``split``), mirrored.

    A staged message is a run along the tile's innermost dim. Where ``layout`` keeps a few of
    its elements together in one dword (VNNI pairs or quads), the dword is the unit a lane
    stores; a store takes as many units as the layout's next block of that dim holds, so its
    addresses are one base plus a constant ramp (a block message where they are contiguous)."""
    size, dim = tile.dtype.size, tile.inner_block().dim
    shape = _scatter_shape(tile, layout, elems)
    unit, dtype, lanes, step = shape.unit, shape.dtype, shape.lanes, shape.step
    j, h = names.fresh(f"{tile.buf.name}_st"), names.fresh(f"{tile.buf.name}_part")
    j_expr = j if rounds > 1 else arith.const(0)
    parts = elems // (lanes * unit)
    h_expr = h if parts > 1 else arith.const(0)
    r = operators.add(operators.mul(thread, rounds), j_expr)
    e0 = operators.add(operators.mul(r, elems), operators.mul(h_expr, lanes * unit))
    base = operators.fold(operators.mul(_coarse_offset(layout, dim, unit * lanes, tile.decode(e0, bound=tile.elems)), size))
    block = shape.block
    scalar = block or lanes == 1  # one address (a one-lane scattered store takes a scalar one, as loads do)
    offset = base if scalar else Ramp.make(base, step, lanes)
    func = Send(SendOp.STORE, SendKind.BLOCK if block else SendKind.SCATTERED, "slm", dtype, lanes)
    mask = BoolImm.make(True) if scalar else Broadcast.make(BoolImm.make(True), lanes)
    reg_off = operators.add(operators.mul(j_expr, elems * size), operators.mul(h_expr, lanes * unit * size))
    body: Stmt = FuncCall.make(func, [tile.buf, offset, staging, reg_off, mask], origin=origin)
    if parts > 1:
        body = For.make(h, 0, parts, body, origin=origin)
    if rounds * threads > count:
        body = If.make(r.lt(count), body, origin=origin)
    if rounds > 1:
        body = For.make(j, 0, rounds, body, origin=origin)
    return body


def _coarse_offset(layout: Layout, dim: int, run: int, index) -> Expr:
    """The offset of ``index`` whose index along ``dim`` is a multiple of ``run``, the product of
    that dim's inner blocks: those blocks contribute nothing, so the offset is taken in the layout
    without them (its bound then leaves room for the run)."""
    blocks, inner = [], 1
    for b in layout.blocks:
        if b.dim == dim and inner < run:
            inner *= b.size
            continue
        blocks.append(b)
    if inner != run:
        return offset_expr(layout, index)
    dims = list(layout.dims)
    dims[dim] = -(-dims[dim] // run)
    coarse = list(index)
    coarse[dim] = operators.fold(coarse[dim] / run) if not operators.is_const(coarse[dim]) else \
        arith.const(operators.value_of(coarse[dim]) // run)
    return offset_expr(Layout(layout.dtype, tuple(dims), tuple(blocks), layout.offset), coarse)


SLM_BLOCK_GRAIN = 4  # bytes: the smallest block every message kind moves (one dword)


def read_tile(stage_: SlmStage, reg: RegTensor, rules: MessageRules, names: Names, origin: Origin,
              start: Expr | None = None) -> Stmt:
    """The thread's tile of an FMA-ready stage, read into ``reg`` with the largest block messages;
    ``start``: the byte offset of ``reg``'s part in the tile (a subtile, see :func:`subtile_chunks`)."""
    nbytes, size = reg.bytes, reg.dtype.size
    assert nbytes % SLM_BLOCK_GRAIN == 0, "read_tile reads whole dwords"
    step = SLM_BLOCK_GRAIN  # a power of two of dwords: a block size every message kind has
    while step * 2 <= rules.max_block_bytes and nbytes % (step * 2) == 0:
        step *= 2
    j = names.fresh(f"{reg.buf.name}_blk")
    j_expr = j if nbytes > step else arith.const(0)
    func = Send(SendOp.LOAD, SendKind.BLOCK, "slm", reg.dtype, step // size)
    base = stage_.tile_offset if start is None else operators.add(stage_.tile_offset, start)
    body: Stmt = FuncCall.make(func, [stage_.slm, operators.add(base, operators.mul(j_expr, step)),
                                      reg.buf, operators.add(reg.offset, operators.mul(j_expr, step)),
                                      BoolImm.make(True)], origin=origin)
    return For.make(j, 0, nbytes // step, body, origin=origin) if nbytes > step else body


def subtile_chunks(full: Layout, sub: Layout, dim: int, parts: int) -> Layout | None:
    """The FMA-ready layout of a thread's whole operand tile whose ``parts`` subtiles along ``dim``, each in
    layout ``sub``, are its consecutive chunks: then a subtile is read from its chunk straight into the
    operand registers, with no staging buffer (oneDNN's A/B sub-tiles). ``full`` (the whole tile in its
    register layout) where its subtiles are its chunks already, else the subtiles one after another
    (dpas's VNNI B of 64 columns holds a 16-column subtile in 32 pieces of 32 bytes: side by side, each
    subtile is read with whole-register block messages); None where ``sub`` pads ``dim``. ``sub`` itself
    when ``parts`` is 1."""
    if parts == 1:
        return sub
    span = sub.size_bytes() // sub.dtype.size
    if full.size_bytes() != parts * sub.size_bytes() or full.padded_dims[dim] != parts * sub.padded_dims[dim] \
            or sub.dims[dim] != sub.padded_dims[dim]:
        return None
    dims = tuple(parts * n if d == dim else n for d, n in enumerate(sub.dims))
    chunks = Layout(sub.dtype, dims, tuple(sub.blocks) + (Block(dim, parts, span),), sub.offset)
    step = sub.padded_dims[dim]
    for idx in itertools.product(*(range(n) for n in sub.padded_dims)):   # plain integers: no numpy
        own = sub.unchecked_offset(idx)
        for s in range(parts):
            shifted = tuple(i + s * step if d == dim else i for d, i in enumerate(idx))
            if full.unchecked_offset(shifted) != own + s * span:
                return chunks
    return full


def _slm_view(view: View, roles, order, dtype) -> View:
    """The group tile in SLM as a view: identity mapping over the tile dims, no masks."""
    extent = {n: e for r in roles for n, e in r.dims}
    dims = tuple(ViewDim(d.name, extent.get(d.name, 1), d.kind) for d in view.dims)
    names = [d.name for d in dims]
    outer_to_inner = [(names.index(n), e) for k in order for n, e in roles[k].dims if e > 1]
    layout = Layout.dense(dtype, [d.size for d in dims], outer_to_inner)
    return View(f"{view.name}_slm", f"{view.tensor}_slm", dims, tuple((d.name, d.size) for d in dims),
                tuple(d.var for d in dims), (None,) * len(dims), layout)


def _vector_store(tile: RegTensor, staging: Var, vectors: VectorPlan, start: Expr, names: Names,
                  origin: Origin, zeros: ZeroSource | None = None, placed: Layout | None = None) -> Stmt:
    """SLM stores of a thread's staged elements that vector messages loaded: the same messages
    mirrored (lane ``l`` of message ``q`` stores its piece back in place in the thread's run, which
    starts at byte ``start`` of the SLM tile: addresses one base plus a constant ramp), as many as a
    block store takes. With ``zeros``, each store takes its load's mask and a store of zeros its
    negation. With ``placed`` (``_placed_pieces``), the run is the dense tile's from ``start`` and each
    lane's piece goes where that layout places it."""
    size = tile.dtype.size
    word = tile.dtype if size == 4 else u32
    lanes, piece = vectors.lanes, vectors.vec * 4
    j = names.fresh(f"{tile.buf.name}_st")
    j_expr = j if vectors.count > 1 else arith.const(0)
    base = operators.add(start, operators.mul(j_expr, lanes * piece))
    func = Send(SendOp.STORE, SendKind.SCATTERED, "slm", word, lanes * vectors.vec, vectors.vec)
    address = Ramp.make(base, piece, lanes)
    if placed is not None:  # the dense run's elements where ``placed`` puts them
        first = Ramp.make(operators.fold(arith.div(base, size)), piece // size, lanes)
        address = operators.fold(offset_expr(placed, tile.decode(first, bound=tile.elems), size))
    if zeros is None:
        body: Stmt = FuncCall.make(func, [tile.buf, address, staging, operators.mul(j_expr, lanes * piece),
                                          Broadcast.make(BoolImm.make(True), lanes)], origin=origin)
    else:
        lets, mask = zeros.mask.at(j_expr, names)
        body = seq(FuncCall.make(func, [tile.buf, address, staging, operators.mul(j_expr, lanes * piece), mask],
                                 origin=origin),
                   FuncCall.make(func, [tile.buf, address, zeros.buf, arith.const(0), Unary.make(Op.NOT, mask)],
                                 origin=origin))
        for x, value in reversed(lets):
            body = Let.make(x, value, body, origin=origin)
    return For.make(j, 0, vectors.count, body, origin=origin) if vectors.count > 1 else body


def _store(tile: RegTensor, staging: Var, elems: int, count: int, rounds: int, thread: Expr,
           threads: int, rules: MessageRules, names: Names, origin: Origin) -> Stmt:
    """SLM stores of the staged messages. A thread's messages are consecutive pieces of the dense tile
    (``transfer``'s split), so where every thread has all its rounds they go out as the largest block
    messages over the whole staging buffer."""
    size = tile.dtype.size
    if rounds > 1 and rounds * threads == count:
        total = rounds * elems * size
        step = max(b for b in (1 << i for i in range(total.bit_length()))
                   if total % b == 0 and b <= rules.max_block_bytes)
        if step >= max(4, elems * size):
            elems, rounds = step // size, total // step
            count, threads = rounds * threads, 1
    j = names.fresh(f"{tile.buf.name}_st")
    j_expr = j if rounds > 1 else arith.const(0)
    r = operators.add(operators.mul(thread, rounds), j_expr)
    func = Send(SendOp.STORE, SendKind.BLOCK, "slm", tile.dtype, elems)
    body: Stmt = FuncCall.make(func, [tile.buf, operators.mul(r, elems * size), staging,
                                      operators.mul(j_expr, elems * size), BoolImm.make(True)], origin=origin)
    if rounds * threads > count:
        body = If.make(r.lt(count), body, origin=origin)
    if rounds > 1:
        body = For.make(j, 0, rounds, body, origin=origin)
    return body
