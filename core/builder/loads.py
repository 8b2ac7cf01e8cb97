"""Load/store decomposition: a tile transfer between memory and registers as Send messages.

A register tensor is filled (or written out) in register order: message ``r``
moves elements ``[r*n, (r+1)*n)`` of the buffer. For each element the
builder decodes its matrix index from the register layout, its view index
from the tile, its tensor index and mask from the view, and its byte offset
from the memory layout.

A message is a **block** message (one address, ``n`` consecutive elements,
one mask) when the ``n`` elements provably sit next to each other in memory
and share their mask: they run along the register layout's stride-1 block,
along one view dim that maps with coefficient 1 onto one tensor dim through
that dim's unit-stride layout block, the run cannot cross a layout block or
a tail, and no mask depends on that view dim. Otherwise it is a
**scattered** message of up to ``simd`` lanes, one address and one mask per
element (tails, padding, strides, blocked layouts).

A masked-off load leaves its register bytes unchanged (as the hardware
does), so a load whose mask is not always true is preceded by a zero fill of
its destination: padding and out-of-bounds elements read as zeros. A
cooperative SLM copy whose stores mirror its vector loads asks for the masks
instead (``masks``) and writes zeros from SLM stores of its own
(``slm.ZeroSource``): no fill in every iteration.

On targets with 2D block loads (``plan_block2d``), a global tile whose columns
are one view dim and whose rows' innermost view dim each walk one tensor dim
with unit steps (the columns unit-stride, the rows one pitch apart) is loaded
by ``load_block2d`` messages instead, each as many rows (and side-by-side
column blocks) as the register layout holds in the message's order: the
tensor's two dims are the message's surface, so its edges (a convolution's
padding along the row, a channel tail along the columns) read as zeros without
masks or fills, and a mask of the other dims (the kernel tap's input row, the
image of rows over ``mb ow``: a message stays inside one) holds for a whole
message, which then starts above the surface.

Byte offsets carry the element size in every term (``offset_expr``'s
``scale``), so the scalar part of a per-lane address is one sum of bytes.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from kdd.core.ir import operators
from kdd.core.ir.expr import Broadcast, BoolImm, Expr, Op, Ramp, Ternary, Var, land
from kdd.core.ir.funcs import Send, Send2D, SendKind, SendOp, always_enabled
from kdd.core.ir.names import Names
from kdd.core.ir.stmt import For, FuncCall, If, Let, Stmt, seq
from kdd.core.ir.types import Type, u32
from kdd.core.ir.visitor import free_vars, substitute
from kdd.core.layout.layout import Block, Layout
from kdd.core.layout.view import View, offset_expr
from kdd.core.targets.target import Block2D

from . import arith
from .elementwise import fill
from .origin import Origin
from .tile import MatrixDim, RegTensor, TileAccess, row_major


@dataclass(frozen=True)
class MessageRules:
    """Target limits on messages: scattered lanes, largest block, smallest block worth using; the
    vector sizes of scattered messages, the lanes one register holds a dword of (0: no vectors) and
    the most lanes a vector message takes (the ALU's width within the target's scattered lanes);
    whether a run goes on across view dims (Xe's messages fill registers in order; sm_90's per-lane
    loads keep their rows, which its mma fragments read with no reorder)."""

    simd: int
    max_block_bytes: int
    min_block_bytes: int = 32
    fill_lanes: int = 0  # dwords one zero-fill step writes (the ALU's width; 0: simd)
    vectors: tuple[int, ...] = (1,)
    vector_lanes: int = 0
    vector_max_lanes: int = 0  # most lanes of a vector message (0: simd)
    merged_runs: bool = True  # runs go on across a matrix dim's view dims (``_merged_run``)


@dataclass(frozen=True)
class MessagePlan:
    """``count`` messages of one kind, ``elems`` elements each."""

    kind: SendKind
    elems: int   # elements per message
    count: int   # messages


@dataclass(frozen=True)
class VectorPlan:
    """A thread's run of short block messages (rows) regrouped as vector scattered messages: each of
    ``lanes`` lanes moves ``vec`` dwords (a row, or a piece of one), ``count`` messages a thread.
    Lane ``l`` of message ``q`` moves piece ``q * lanes + l`` of the thread's run, so a lane's address
    is the run's start plus a constant ramp, and its data lands in the hardware's order: dword ``v``
    of lane ``l`` at dword ``(q * vec + v) * lanes + l`` of the staging registers. With ``rows`` (the
    run's rows) the lanes walk rows instead: message ``h * (rows / lanes) + b`` moves piece ``h`` of
    rows ``b * lanes + l`` (dpas's VNNI B from rows of 32 K: lane ``l`` is column ``l``)."""

    lanes: int
    vec: int
    count: int
    rows: int = 0  # with ``rows`` given, lanes walk the rows instead (below)

    def layout(self, dtype: Type, box: tuple[int, int, int], order: tuple[int, int, int]) -> Layout:
        """Where the staging registers hold the thread's run, the ``box`` matrix row-major in ``order``;
        ``ValueError`` where the messages' digits do not split the box's dims (then no such messages)."""
        pe = 4 // dtype.size
        msg = self.lanes * self.vec * pe
        if self.rows:  # piece h of row r: lane r % lanes of message h * (rows / lanes) + r // lanes
            blocks = self.rows // self.lanes
            flat = [(pe, 1), (self.vec, self.lanes * pe), (self.count // blocks, msg * blocks), (self.lanes, pe),
                    (blocks, msg)]
        else:
            flat = [(pe, 1), (self.vec, self.lanes * pe), (self.lanes, pe), (self.count, msg)]
        digits = [(d, box[d]) for d in reversed(order) if box[d] > 1]
        return Layout(dtype, box, tuple(_mixed_radix_blocks(flat, digits)))


def _mixed_radix_blocks(flat: list[tuple[int, int]], digits: list[tuple[int, int]]) -> list[Block]:
    """Blocks of a layout whose flat (row-major) index has the ``(size, stride)`` digits ``flat`` and
    whose dims are the ``(dim, size)`` digits ``digits`` of the same index (both inner first)."""
    flat = [f for f in flat if f[0] > 1]
    blocks, k = [], 0
    for dim, size in digits:
        while size > 1:
            fsize, fstride = flat[k]
            take = math.gcd(fsize, size)
            if take not in (fsize, size):
                raise ValueError(f"digits {flat} do not split dims {digits}")
            blocks.append(Block(dim, take, fstride))
            size //= take
            if take == fsize:
                k += 1
            else:
                flat[k] = (fsize // take, fstride * take)
    return blocks


def plan_vectors(plan: MessagePlan, rounds: int, size: int, rules: MessageRules,
                 by_rows: bool = False) -> VectorPlan | None:
    """Vector messages for a thread's ``rounds`` block messages of ``plan`` (rows of ``size``-byte
    elements), where they take fewer messages: rows shorter than the largest block, whole dwords,
    lanes filling whole registers (so the data needs no move), at most ``vector_max_lanes`` lanes
    (``simd`` where lanes walk rows). Largest messages first, then the longest vectors (fewer
    addresses). ``by_rows``: lanes walk rows."""
    row = plan.elems * size
    if plan.kind is not SendKind.BLOCK or not rules.vector_lanes or row % 4 or 4 % size \
            or row >= rules.max_block_bytes:
        return None
    dwords, best = row // 4, None
    # Lanes walking rows are dpas's B columns (``simd``); lanes walking pieces may reach the ALU's width,
    # where one instruction still computes all their addresses and mask (a copy's two 8-lane A messages
    # of 8 dwords -> one of 16 lanes: one header add and one mask ``&&`` instead of two).
    most = rules.simd if by_rows else max(rules.simd, rules.vector_max_lanes)
    for vec in rules.vectors:
        if vec == 1 or dwords % vec:
            continue
        pieces = rounds * (dwords // vec)
        walked = rounds if by_rows else pieces  # what the lanes of one message walk
        for lanes in range(rules.vector_lanes, min(most, walked) + 1, rules.vector_lanes):
            if walked % lanes == 0:
                cand = VectorPlan(lanes, vec, pieces // lanes, rounds if by_rows else 0)
                if best is None or (cand.count, -cand.vec) < (best.count, -best.vec):
                    best = cand
    return best if best is not None and best.count < rounds else None


def plan_messages(access: TileAccess, reg: RegTensor, rules: MessageRules, plain: bool = False) -> MessagePlan:
    """Block messages when the contiguity conditions of the module doc hold, else scattered ones
    (``plain``: runs continue through plain layouts too, ``contiguous_run``)."""
    total = reg.elems
    size = reg.dtype.size
    run = contiguous_run(access, reg, rules.merged_runs, plain)
    # A run as long as one scattered message's elements takes a block message too (one address instead of
    # one per lane: a depthwise tile's 8 channels of 16 bits), where every address is a whole dword.
    if run * size >= rules.min_block_bytes or (run * size >= rules.simd * size and run * size % 4 == 0
                                                and dword_strides(access.view)):
        n = max(d for d in _divisors(run) if d * size <= rules.max_block_bytes)
        return MessagePlan(SendKind.BLOCK, n, total // n)
    if total == 1:
        return MessagePlan(SendKind.BLOCK, 1, 1)
    n = max(d for d in _divisors(total) if d <= rules.simd)
    return MessagePlan(SendKind.SCATTERED, n, total // n)


def dword_strides(view: View) -> bool:
    """Whether every memory stride of the view's layout (but the unit one) is a whole number of dwords."""
    size = view.layout.dtype.size
    return all(b.stride == 1 or b.stride * size % 4 == 0 for b in view.layout.blocks if b.size > 1)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def unit_stride_dim(view: View, name: str) -> int | None:
    """The tensor dim that view dim ``name`` walks with unit stride in memory, if any.

    That is: exactly one tensor dim ``t`` depends on ``name``, as ``t = name +
    (terms without name)``, no mask depends on ``name``, and ``t``'s innermost
    layout block has stride 1.
    """
    v = view.dim(name).var
    deps = view.depends_on(name)
    if len(deps) != 1 or view.layout is None:
        return None
    t = deps[0]
    if view.masks[t] is not None and v in free_vars(view.masks[t]):
        return None
    if arith.linear_coeff(view.mapping[t], v) != 1:
        return None
    blocks = [b for b in view.layout.blocks if b.dim == t and b.size > 1]
    return t if blocks and blocks[0].stride == 1 else None


def contiguous_role(view: View, roles) -> int:
    """The matrix dim whose innermost view dim walks memory with unit stride: 2, else 1, else the
    batch 0 (a depthwise tile, whose groups are the channels), and 2 if none."""
    for role in (2, 1, 0):
        inner = roles[role].innermost()
        if inner is not None and unit_stride_dim(view, inner[0]) is not None:
            return role
    return 2


def inner_last(inner: int) -> tuple[int, int, int]:
    """The matrix dims outer to inner with ``inner`` innermost, the others in ``(b, x, y)`` order."""
    return tuple(d for d in range(3) if d != inner) + (inner,)


def memory_ordered(access: TileAccess, reg: RegTensor, rules: MessageRules, buf: Var,
                   real: bool = False) -> RegTensor | None:
    """``reg``'s matrix in ``buf``, row-major with the memory-contiguous matrix dim innermost, when
    that layout differs from ``reg``'s and moves the tile in block messages (None otherwise). With
    ``real`` (a load), where the padded tile's rows give no block messages, its real rows may: a short
    dim the tile holds whole (``oc6`` under an 8-wide tile: 16 rows of 12 bytes, one 192-byte run),
    moved by ``whole_dims(access)`` and reordered into ``reg``'s real rows (``real_rows``)."""
    order = inner_last(contiguous_role(access.view, access.roles))
    for dims_of in (access, whole_dims(access) if real else None):
        if dims_of is None:
            continue
        dims = reg.layout.dims if dims_of is access else dims_of.real
        layout = row_major(reg.dtype, dims, order)
        if layout.is_equal(reg.layout) or (dims_of is not access and real_rows(reg, dims) is None):
            continue
        candidate = RegTensor(buf, layout, 0, reg.roles)
        if plan_messages(dims_of, candidate, rules, plain=dims_of is not access).kind is SendKind.BLOCK:
            return candidate
    return None


def whole_dims(access: TileAccess) -> TileAccess | None:
    """``access`` with each tail dim the tile holds whole (it starts at 0 and its extent covers the
    view's size) cut to that size and no longer bounded: every element of it is in the view, so
    the real rows need no tail mask. Only the outermost dim of a matrix dim is cut, so that a
    flat matrix index below the cut size means the same element in the padded tile and the cut
    one. None where there is no such dim."""
    view = access.view
    cut = set()
    for role in access.roles:
        wide = [(n, e) for n, e in role.dims if e > 1]
        if not wide:
            continue
        n, extent = wide[0]
        if n in access.bounded and n in view.dim_names and operators.is_const(access.starts[n], 0) \
                and extent >= view.dim(n).size:
            cut.add(n)
    if not cut:
        return None
    roles = tuple(MatrixDim(tuple((n, access.view.dim(n).size if n in cut else e) for n, e in role.dims))
                  for role in access.roles)
    return replace(access, roles=roles, bounded=access.bounded - cut)


def real_rows(reg: RegTensor, dims: tuple) -> RegTensor | None:
    """``reg`` restricted to the first ``dims`` of each matrix dim (its padding left out), or None
    where its layout does not split there (``RegTensor.rows``) or ``dims`` pads nothing."""
    if tuple(dims) == tuple(reg.layout.dims) or any(d > p for d, p in zip(dims, reg.layout.dims)):
        return None
    out = reg
    try:
        for d, (n, p) in enumerate(zip(dims, reg.layout.dims)):
            if n < p:
                out = out.rows(d, 0, n)
    except ValueError:
        return None
    return out


def vector_gather(access: TileAccess, rows: RegTensor, reg: RegTensor, rules: MessageRules) -> VectorPlan | None:
    """Vector messages that load the tile straight into ``reg``'s layout: ``rows`` is the tile in
    memory order (``memory_ordered``), and the messages' register order of its run (lane ``l`` a row,
    vector element ``v`` its ``v``-th dword) is ``reg``'s layout, as for dpas's VNNI B from rows of K:
    no staging buffer, no reorder. None where no such messages exist."""
    if not operators.is_const(reg.offset, 0) or not operators.is_const(rows.offset, 0):
        return None
    plan = plan_messages(access, rows, rules)
    order = inner_last(contiguous_role(access.view, access.roles))
    for by_rows in (False, True):
        vectors = plan_vectors(plan, plan.count, rows.dtype.size, rules, by_rows)
        if vectors is None:
            continue
        try:
            layout = vectors.layout(rows.dtype, rows.layout.dims, order)
        except ValueError:
            continue
        if same_placement(layout, reg.layout):
            return vectors
    return None


def same_placement(a: Layout, b: Layout) -> bool:
    """Whether two layouts put every element at the same offset (whatever order the blocks of different
    dims are listed in): each dim's blocks, inner to outer, size-1 ones dropped and continuing ones
    merged, agree."""
    return a.dtype == b.dtype and tuple(a.dims) == tuple(b.dims) and _per_dim(a) == _per_dim(b)


def _per_dim(layout: Layout) -> list[list[tuple[int, int]]]:
    out = []
    for d in range(len(layout.dims)):
        merged: list[tuple[int, int]] = []
        for b in layout.blocks:
            if b.dim != d or b.size == 1:
                continue
            if merged and b.stride == merged[-1][0] * merged[-1][1]:
                merged[-1] = (merged[-1][0] * b.size, merged[-1][1])
            else:
                merged.append((b.size, b.stride))
        out.append(merged)
    return out


def contiguous_run(access: TileAccess, reg: RegTensor, merged: bool = True, plain: bool = False) -> int:
    """Length of the runs of register elements that are contiguous in memory (1: none); ``merged``: across
    view dims too (``MessageRules.merged_runs``); ``plain``: a whole block continues through the next
    dims of a plain layout too (``_continued_run``: the real rows of a short dim, ``whole_dims``)."""
    blk = reg.inner_block()
    if blk is None:
        return 1
    inner = access.roles[blk.dim].innermost()
    if inner is None:
        return 1
    name, extent = inner
    view = access.view
    t = unit_stride_dim(view, name)
    if t is None:
        return 1
    run = math.gcd(blk.size, extent)
    # A subtile starts inside the tile; the run must stay aligned to it.
    run = math.gcd(run, arith.alignment(operators.add(access.base[blk.dim]), access.facts))
    blocks = [b for b in view.layout.blocks if b.dim == t and b.size > 1]
    if len(blocks) > 1:  # the run must not cross the innermost block of a blocked dim
        run = math.gcd(run, blocks[0].size)
        start_t = substitute(view.mapping[t], {d.var: access.starts[d.name] for d in view.dims})
        if arith.alignment(start_t, access.facts) % run:
            return 1
    if name in access.bounded:  # nor a tail: runs as long as the size and the start are multiples of
        run = math.gcd(run, view.dim(name).size, arith.alignment(access.starts[name], access.facts))
    elif merged and run == extent < blk.size and len(blocks) == 1:
        run = _merged_run(access, blk, run)
    return _continued_run(access, reg, run, plain and merged) if run == blk.size else run


def _merged_run(access: TileAccess, blk: Block, run: int) -> int:
    """``run`` (the matrix dim's innermost view dim, walked whole) continued through the matrix dim's next
    view dims, as far as ``reg``'s innermost block ``blk`` goes, while memory goes on right after it: the
    next view dim walks a plain tensor dim whose stride is the elements inside (the group tile of
    ``ic8 kw4`` in SLM: a tap's 8 channels, then the next tap's)."""
    view = access.view
    dims = [(n, e) for n, e in access.roles[blk.dim].dims if e > 1]
    base = arith.alignment(operators.add(access.base[blk.dim]), access.facts)
    for name, extent in reversed(dims[:-1]):
        most, size = math.gcd(extent, blk.size // run), view.layout.dtype.size
        # a power of two of bytes: one message of the merged run, not two (48 B: d32x8 + d32x4)
        take = max((d for d in _divisors(most) if not run * d * size & (run * d * size - 1)), default=1)
        deps = view.depends_on(name)
        if take == 1 or len(deps) != 1 or name in access.bounded or base % (run * take):
            break
        t, v = deps[0], view.dim(name).var
        if arith.linear_coeff(view.mapping[t], v) != 1 or (view.masks[t] is not None
                                                           and v in free_vars(view.masks[t])):
            break
        blocks = [b for b in view.layout.blocks if b.dim == t and b.size > 1]
        if len(blocks) != 1 or blocks[0].stride != run:
            break
        run *= take
        if take < extent:
            break
    return run


def _continued_run(access: TileAccess, reg: RegTensor, run: int, plain: bool = False) -> int:
    """``run`` (``reg``'s whole innermost block) continued through its next blocks while each one walks
    memory right after the elements inside it: the block's matrix dim steps its innermost view dim,
    which indexes a blocked tensor dim directly, by an index step that the memory layout strides by
    ``run`` elements (weights blocked as the FMA's B read into that B: a thread's whole tile is one
    run; a tail of such a dim continues it where the problem's size is a multiple of the span walked, so
    the run is all in or all out and one mask serves it). Only blocked dims continue a run: tiles of
    plain layouts keep their row-long messages
    (sm_90's shared-memory reads among them, whose longer runs are not checked on a GPU yet), but where
    ``plain`` says the rows are a short dim's whole (``whole_dims``: ``oc6``'s 12-byte rows, one run)."""
    view = access.view
    blocks = sorted((b for b in reg.layout.blocks if b.size > 1), key=lambda b: b.stride)
    walked = {blocks[0].dim: run}  # matrix dim -> index span of its innermost view dim walked so far
    for blk in blocks[1:]:
        inner = access.roles[blk.dim].innermost()
        if blk.stride != run or inner is None:
            break
        name, extent = inner
        step = walked.get(blk.dim, 1)
        span = step * blk.size
        t = _direct_dim(view, name)
        if t is None or extent % span or arith.alignment(operators.add(access.base[blk.dim]), access.facts) % span \
                or arith.alignment(access.starts[name], access.facts) % span:
            break
        if name in access.bounded and view.dim(name).size % span:
            break  # a tail inside the run: its elements would not share the message's mask
        if (not plain and sum(b.dim == t and b.size > 1 for b in view.layout.blocks) < 2) \
                or _index_stride(view.layout, t, step, blk.size) != run:
            break
        walked[blk.dim] = span
        run *= blk.size
    return run


def _index_stride(layout: Layout, t: int, step: int, count: int) -> int | None:
    """The memory stride (elements) of index steps ``step`` of tensor dim ``t``, where ``count`` such
    steps from an aligned index stay inside one layout block of ``t`` (None elsewhere)."""
    inner = 1
    for b in layout.blocks:  # inner to outer
        if b.dim != t or b.size == 1:
            continue
        if step % inner == 0 and step < inner * b.size:
            within = step // inner
            return b.stride * within if b.size % (within * count) == 0 else None
        inner *= b.size
    return None


def tail_masks(view, index: dict, bounded) -> list[Expr]:
    """``index < size`` for the view dims whose tiles overhang the problem (tails)."""
    return [index[n].lt(view.dim(n).size) for n in sorted(bounded) if n in view.dim_names]


@dataclass(frozen=True)
class TransferPlan:
    """How :func:`transfer` moves a tile beyond one thread's plain messages (every part optional).

    With ``split = (thread, threads)`` the messages are shared by the threads
    of a group (cooperative loads): with ``rounds`` messages each, thread ``t``
    moves messages ``t*rounds``, ``t*rounds + 1``, ... (consecutive pieces of
    the tile, so the SLM stores that follow merge into large block messages)
    into consecutive slots of its ``staging`` buffer, guarded where the
    messages run out before the last threads. ``vectors`` (every thread
    having all its rounds) moves a thread's run (``reg`` in memory order) as
    the vector messages of ``plan_vectors`` instead, into the ``staging``
    registers in the messages' order (``vector_gather``: a layout that order is).
    ``plan``: the messages (rows) the vectors regroup, where they are not ``plan_messages``'s
    (rows shorter than the smallest block message, which only vector messages move).
    ``masks`` (a load): the masked-off lanes are the caller's to supply (``zero_stores``), so no
    zero fill precedes the messages; the message mask is appended to it when not always true.
    ``unread`` (a load): view dims whose masked-off elements no stored result reads (an FMA operand's
    M, N and batch dims: a tail or padding row of A reaches only rows of C that are never stored), so a
    mask testing none but them needs neither a zero fill nor the caller's zeros.
    """

    split: tuple[Expr, int] | None = None
    staging: Var | None = None
    vectors: VectorPlan | None = None
    plan: MessagePlan | None = None
    masks: list[MessageMask] | None = field(default=None, compare=False)
    unread: frozenset[str] = frozenset()


class _Elements(NamedTuple):
    """Which elements message ``j`` moves: ``msgs`` messages, ``j_expr`` (``j``, or 0 for one message),
    the first element ``e0`` and the lanes' elements ``e``, ``lanes``, the register-tile index of the
    lanes where vector messages decode it themselves (else None), and the round ``r`` of a thread's
    plain messages (None for vector messages)."""

    msgs: int
    j_expr: Expr
    e0: Expr
    e: Expr
    lanes: int
    lane_index: tuple | None
    r: Expr | None


def transfer(op: SendOp, access: TileAccess, reg: RegTensor, rules: MessageRules, names: Names,
             origin: Origin, how: TransferPlan = TransferPlan()) -> Stmt:
    """Send messages moving the tile ``access`` to (load) or from (store, atomic add) ``reg``, as ``how``
    says (:class:`TransferPlan`)."""
    view = access.view
    if view.layout is None:
        raise ValueError(f"view {view.name} has no memory layout")
    if view.layout.dtype != reg.dtype:
        raise ValueError(f"{view.tensor} holds {view.layout.dtype} but the register tensor {reg.buf.name} "
                         f"holds {reg.dtype}; convert in registers")
    plan = how.plan or plan_messages(access, reg, rules)
    rounds, threads = plan.count, 1
    if how.split is not None:
        threads = how.split[1]
        rounds = -(-plan.count // threads)
    label = (reg.buf if how.staging is None else how.staging).name
    j = names.fresh(f"{label}_msg")
    el = _elements(j, access, reg, plan, how, rounds, threads)
    bxy = el.lane_index or reg.decode(el.e, bound=reg.elems)
    bxy = tuple(operators.add(base, x) for base, x in zip(access.base, bxy))
    lets, bound_idx = _view_indices(access, reg, bxy, names, label)
    mask = _message_mask(access, bound_idx, bxy, reg.layout.dims, el.lanes)
    # The element size multiplies every term: a vector offset's scalar part is then one sum of bytes
    # (strength reduction carries it whole; the simplifier regroups only scalar sums).
    offset = operators.fold(offset_expr(view.layout, view.tensor_index(bound_idx), reg.dtype.size))
    if el.lanes > 1 and offset.type.lanes == 1:
        offset = Broadcast.make(offset, el.lanes)
    func, target, reg_off = _send(op, access, reg, plan, how, el)
    body: Stmt = FuncCall.make(func, [access.mem, offset, target, reg_off, mask], origin=origin)
    for x, value in reversed(lets):
        body = Let.make(x, value, body, origin=origin)
    if el.r is not None and how.split is not None and rounds * threads > plan.count:
        body = If.make(el.r.lt(plan.count), body, origin=origin)
    if el.msgs > 1:
        body = For.make(j, 0, el.msgs, body, origin=origin)
    zeros = op is SendOp.LOAD and not always_enabled(mask) and not masks_only_unread(access, reg.layout.dims,
                                                                                      how.unread)
    if zeros and how.masks is not None:
        how.masks.append(MessageMask(j if el.msgs > 1 else None, tuple(lets), mask))
    elif zeros:
        staging = how.staging
        dst = reg if staging is None else RegTensor(staging, row_major(reg.dtype, (1, 1, rounds * plan.elems)))
        lanes = rules.fill_lanes if rules.fill_lanes and (dst.bytes // 4) % rules.fill_lanes == 0 else rules.simd
        body = seq(zero_fill(dst, lanes, names, origin), body)
    return body


def _elements(j: Var, access: TileAccess, reg: RegTensor, plan: MessagePlan, how: TransferPlan, rounds: int,
              threads: int) -> _Elements:
    """The elements message ``j`` moves: a thread's run as vector messages, or its rounds of plain ones."""
    split, vectors = how.split, how.vectors
    if vectors is None:
        j_expr = j if rounds > 1 else arith.const(0)
        r = operators.add(operators.mul(split[0], rounds), j_expr) if split is not None else j_expr
        e0 = operators.mul(r, plan.elems)
        lanes = plan.elems if plan.kind is SendKind.SCATTERED else 1
        return _Elements(rounds, j_expr, e0, arith.ramp(e0, lanes), lanes, None, r)
    if how.staging is None or rounds * threads != plan.count:
        raise ValueError("vector messages move a thread's whole run into registers in their own order")
    piece, lanes = vectors.vec * 4 // reg.dtype.size, vectors.lanes  # elements a lane moves
    msgs = vectors.count
    j_expr = j if msgs > 1 else arith.const(0)
    first = operators.mul(split[0], rounds * plan.elems) if split is not None else arith.const(0)
    if vectors.rows:  # message j: piece j // blocks of rows (j % blocks) * lanes + l
        blocks = vectors.rows // lanes
        e0 = operators.add(first, operators.mul(arith.mod(j_expr, blocks, msgs), lanes * plan.elems),
                       operators.mul(arith.div(j_expr, blocks, msgs), piece))
        stride = plan.elems
    else:
        e0 = operators.add(first, operators.mul(j_expr, lanes * piece))
        stride = piece
    e = operators.fold(Ramp.make(e0, stride, lanes))
    lane_index = reg.decode_ramp(e0, stride, lanes, arith.alignment(e0, access.facts), bound=reg.elems)
    return _Elements(msgs, j_expr, e0, e, lanes, lane_index, None)


def _view_indices(access: TileAccess, reg: RegTensor, bxy: tuple, names: Names,
                  label: str) -> tuple[list[tuple[Var, Expr]], dict]:
    """The view index of every dim at the tile elements ``bxy``, those that vary inside the tile bound once
    by a let (the mapping and the masks both read them): ``(lets, index by dim name)``."""
    view = access.view
    vidx = access.view_index(bxy, tuple(p if operators.is_const(base, 0) else None
                                        for p, base in zip(reg.layout.dims, access.base)))
    lets: list[tuple[Var, Expr]] = []
    bound_idx = {}
    in_tile = {n for role in access.roles for n, ext in role.dims if ext > 1}
    for d in view.dims:
        value = operators.fold(vidx[d.name])
        if d.name in in_tile and not (operators.is_const(value) or isinstance(value, Var)):
            x = names.fresh(f"{label}_{d.name}", value.type)
            lets.append((x, value))
            bound_idx[d.name] = x
        else:
            bound_idx[d.name] = value
    return lets, bound_idx


def unread_dims(roles, labels: tuple[str, str, str]) -> frozenset[str]:
    """The view dims of an FMA operand's matrix dims other than the reduction (``labels``: the operand's
    ``("b", "m", "k")``-style roles), whose masked-off elements reach no stored result
    (``TransferPlan.unread``)."""
    return frozenset(n for role, label in zip(roles, labels) if label != "k" for n, _ in role.dims)


def masks_only_unread(access: TileAccess, padded: tuple, unread: frozenset[str]) -> bool:
    """Whether every lane a message mask of ``access`` (:func:`_message_mask`) can turn off is one no stored
    result reads: its tails and the matrix dims padded past the problem (or read at an offset into the
    tile) are all ``unread`` dims, and the view has no masks (a view mask's lanes are zeros of real
    elements, such as the rows bwd_d's strides skip, whatever dims it reads)."""
    if not unread or any(m is not None for m in access.view.masks):
        return False
    if any(n not in unread for n in access.bounded if n in access.view.dim_names):
        return False
    return all(all(n in unread for n, _ in role.dims)
               for role, real, pad, base in zip(access.roles, access.real, padded, access.base)
               if real < pad or not operators.is_const(base, 0))


def _message_mask(access: TileAccess, bound_idx: dict, bxy: tuple, padded: tuple, lanes: int) -> Expr:
    """The lanes a message moves: inside the view, inside the problem where the tile overhangs it (tails),
    and off the matrix padding (to the FMA granularity), which reads zeros and is never stored."""
    view = access.view
    conds: list[Expr | None] = [view.mask(bound_idx)]
    conds += tail_masks(view, bound_idx, access.bounded)
    for idx, real, pad, base in zip(bxy, access.real, padded, access.base):
        if real >= pad and operators.is_const(base, 0):
            continue
        if not operators.is_const(idx):
            conds.append(idx.lt(real))
        elif operators.value_of(idx) >= real:
            conds.append(BoolImm.make(False))
    mask = arith.conj(operators.fold(c) for c in conds if c is not None)
    if mask is None:
        return BoolImm.make(True) if lanes == 1 else Broadcast.make(BoolImm.make(True), lanes)
    if lanes > 1 and mask.type.lanes == 1:
        return Broadcast.make(mask, lanes)
    return mask


def _send(op: SendOp, access: TileAccess, reg: RegTensor, plan: MessagePlan, how: TransferPlan,
          el: _Elements) -> tuple[Send, Var, Expr]:
    """The message function and the registers it moves (buffer, byte offset): vector messages of dwords
    into ``staging``, plain messages into ``staging`` or straight into ``reg``."""
    size = reg.dtype.size
    if how.vectors is not None:
        vectors = how.vectors
        word = reg.dtype if size == 4 else u32  # narrower data moves as dwords
        func = Send(op, SendKind.SCATTERED, access.space, word, el.lanes * vectors.vec, vectors.vec)
        return func, how.staging, operators.mul(el.j_expr, el.lanes * vectors.vec * 4)
    func = Send(op, plan.kind, access.space, reg.dtype, plan.elems)
    if how.staging is not None:
        return func, how.staging, operators.mul(el.j_expr, plan.elems * size)
    return func, reg.buf, operators.add(reg.offset, operators.mul(el.e0, size))


@dataclass(frozen=True)
class MessageMask:
    """The mask of a load's message ``j`` (None: one message) over the lets it reads."""

    j: Var | None
    lets: tuple[tuple[Var, Expr], ...]
    mask: Expr

    def at(self, j: Expr, names: Names) -> tuple[list[tuple[Var, Expr]], Expr]:
        """The lets (fresh names) and the mask of message ``j``."""
        sub: dict = {self.j: j} if self.j is not None else {}
        lets = []
        for x, value in self.lets:
            y = names.fresh(x.name, x.type)
            lets.append((y, substitute(value, sub)))
            sub[x] = y
        return lets, substitute(self.mask, sub)


def zero_fill(reg: RegTensor, lanes: int, names: Names, origin: Origin) -> Stmt:
    """Every byte of ``reg`` set to zero, ``lanes`` dwords a step where the size allows."""
    if reg.bytes % 4:
        return fill(reg, 0, names, lanes, origin)
    words = RegTensor(reg.buf, row_major(u32, (1, 1, reg.bytes // 4)), reg.offset)
    return fill(words, 0, names, lanes, origin)


@dataclass(frozen=True)
class Block2DPlan:
    """``count`` 2D block messages of ``array`` blocks of ``width`` x ``height`` elements filling a register
    tensor in order (message ``q`` its elements ``[q * n, (q + 1) * n)``); matrix dim ``rows`` runs along the
    surface's rows, ``cols`` along its columns; the surface is tensor dims ``tensor_rows`` x ``tensor_cols``
    of the view's memory, view dims ``row_dim`` and ``col_dim`` indexing them."""

    width: int
    height: int
    array: int
    count: int
    rows: int
    cols: int
    row_dim: str
    col_dim: str
    tensor_rows: int
    tensor_cols: int

    @property
    def elems(self) -> int:
        return self.width * self.height * self.array


def _one_dim(role) -> str | None:
    """The one view dim of a matrix dim with extent > 1 (None: none or several)."""
    dims = [n for n, e in role.dims if e > 1]
    return dims[0] if len(dims) == 1 else None


def _direct_dim(view: View, name: str) -> int | None:
    """The tensor dim that view dim ``name`` indexes directly (``t = name``, the same size, no mask), if any."""
    deps = view.depends_on(name)
    if len(deps) != 1:
        return None
    t = deps[0]
    m = view.mapping[t]
    if not (isinstance(m, Var) and m.name == view.dim(name).var.name) or view.masks[t] is not None \
            or view.layout.dims[t] != view.dim(name).size:
        return None
    return t


def _surface_dim(view: View, name: str, bounded) -> int | None:
    """The tensor dim that view dim ``name`` walks with unit steps as a 2D block's rows or columns, if any:
    ``t = name + (terms without name)``, no other tensor dim reading ``name``, and a mask on ``t`` that is
    none or exactly ``0 <= t < size`` (a convolution's padding: the surface's edge reads the zeros).
    A tail of ``name`` (``bounded``) is the surface's edge only where ``t`` is ``name`` itself over the
    same size (view dims of size 1 read as 0: a one-group convolution's ``g * C + c``)."""
    deps = view.depends_on(name)
    if len(deps) != 1:
        return None
    t = deps[0]
    v, m, size = view.dim(name).var, view.mapping[t], view.layout.dims[t]
    if arith.linear_coeff(m, v) != 1:
        return None
    mask = view.masks[t]
    if mask is not None and not mask.is_equal(land(m.ge(0), m.lt(size))):
        return None
    if name in bounded:
        ones = {d.var: arith.const(0) for d in view.dims if d.size == 1}
        if not operators.is_const(operators.fold(substitute(m, {**ones, v: arith.const(0)})), 0) \
                or view.dim(name).size != size:
            return None
    return t


def _matrix_positions(layout: Layout) -> list[tuple[int, int, int]]:
    """The matrix index ``(b, x, y)`` held at every register element of a dense layout (padded positions,
    which hold no index, read as ``(-1, -1, -1)``). Plain integers: a tile has a few thousand elements at
    most, and loading numpy for them would cost a compile more than all of its passes."""
    # A layout's offset is a sum of one term per dim (each block reads its own dim's digits)
    terms = [[layout.unchecked_offset([i if d == dim else 0 for d in range(3)]) - layout.offset for i in range(n)]
             for dim, n in enumerate(layout.padded_dims)]
    pos = [(-1, -1, -1)] * layout.padded_elems()
    for (b, ob), (x, ox), (y, oy) in itertools.product(*(enumerate(t) for t in terms)):
        pos[ob + ox + oy] = (b, x, y)
    return pos


def _lands(pos: list[tuple[int, int, int]], along: list[tuple[int, ...]], w: int, h: int, a: int, rows: int,
           cols: int, size: int, span: int) -> bool:
    """Whether messages of ``a`` blocks of ``w`` x ``h`` elements, taking ``pos``'s elements in order, each
    start on a dword and hold the block's elements where the layout holds them: element ``(i, r, c)`` of a
    message the matrix index of its first one plus ``r`` along ``rows`` and ``i * w + c`` along ``cols``,
    its ``h`` rows inside one run of ``span`` (the surface's rows: the innermost view dim of the matrix's
    rows). ``along`` is ``pos`` by matrix dim (each dim's index at every element), so a block row compares
    as one slice."""
    n = w * h * a
    if any(pos[q][cols] * size % 4 for q in range(0, len(pos), n)):
        return False
    batch, row_at, col_at = along[0], along[rows], along[cols]
    for q in range(0, len(pos), n):
        b0, r0, c0 = pos[q][0], pos[q][rows], pos[q][cols]
        if r0 % span + h > span:
            return False
        e = q
        for i in range(a):
            want_cols = tuple(range(c0 + i * w, c0 + i * w + w))
            for r in range(h):
                if col_at[e:e + w] != want_cols or row_at[e:e + w] != (r0 + r,) * w or batch[e:e + w] != (b0,) * w:
                    return False
                e += w
    return True


def plan_block2d(access: TileAccess, reg: RegTensor, limits: Block2D | None, reg_bytes: int) -> Block2DPlan | None:
    """The fewest 2D block messages that load ``reg`` from global memory in its own layout (None where the
    target has none, the tile is not a plain matrix of the memory, or no block shape lands the rows where
    the layout holds them)."""
    view = access.view
    if limits is None or access.space != "global" or view.layout is None or reg.layout.dims[0] != 1:
        return None
    size = reg.dtype.size
    cols = contiguous_role(view, access.roles)
    if cols == 0:
        return None
    rows = 3 - cols
    # The rows may run over several view dims (``mb2 ow16``): the surface's rows are the innermost one's,
    # and each message stays inside one index of the outer ones (whose tensor index, masks and tails
    # then hold for the whole message, as those of any other dim do: ``load_block2d``).
    inner_row = access.roles[rows].innermost()
    row_dim, col_dim = inner_row[0] if inner_row else None, _one_dim(access.roles[cols])
    if row_dim is None or col_dim is None:
        return None
    span = inner_row[1]
    t_rows, t_cols = _surface_dim(view, row_dim, access.bounded), _surface_dim(view, col_dim, access.bounded)
    if t_rows is None or t_cols is None or t_rows == t_cols:
        return None
    if any(m is not None and {view.dim(row_dim).var, view.dim(col_dim).var} & free_vars(m)
           for t, m in enumerate(view.masks) if t not in (t_rows, t_cols)):
        return None  # a mask varying inside the block (the other masks and tails hold for a whole message)
    if any(real < pad for real, pad in zip(access.real, reg.layout.dims)):
        return None  # matrix padding past the problem's matrix needs zeros the surface does not give
    row_blocks = [b for b in view.layout.blocks if b.dim == t_rows and b.size > 1]
    col_blocks = [b for b in view.layout.blocks if b.dim == t_cols and b.size > 1]
    if len(row_blocks) != 1 or len(col_blocks) != 1 or col_blocks[0].stride != 1:
        return None
    width, height, pitch = view.layout.dims[t_cols] * size, view.layout.dims[t_rows], row_blocks[0].stride * size
    if limits.surface_problem(width, height, pitch) is not None:
        return None
    base = _surface_base(view, access.starts, t_rows, t_cols, size)
    # A message's surface starts where its index along the rows' outer view dims puts it: the base is
    # linear in that index, so aligned at the tile's start and one step on along each, it is at all of them.
    steps = [_surface_base(view, {**access.starts, n: operators.add(access.starts.get(n, arith.const(0)), 1)},
                           t_rows, t_cols, size) for n, e in access.roles[rows].dims if e > 1 and n != row_dim]
    if any(arith.alignment(b, access.facts) % limits.base_align for b in [base, *steps]):
        return None  # the surface starts off the hardware's alignment (kernel buffers are aligned)
    col_start = operators.add(view.tensor_index(access.starts)[t_cols], access.base[cols])
    if arith.alignment(operators.fold(col_start), access.facts) * size % 4:
        return None  # a block starts on a dword
    pos = _matrix_positions(reg.layout)
    along = list(zip(*pos))
    best = None
    for w in range(1, limits.max_row_bytes // size + 1):
        for h in range(1, limits.max_height + 1):
            for a in limits.arrays:
                n = w * h * a
                if len(pos) % n or (w * size) & (w * size - 1) or limits.block_problem(size, w, h, a, reg_bytes) \
                        or (a > 1 and w * h * size % reg_bytes) or (n < len(pos) and n * size % reg_bytes):
                    continue  # (each message lands on a register)
                if best is not None and (n, h) <= (best.elems, best.height):
                    continue
                if _lands(pos, along, w, h, a, rows, cols, size, span):
                    best = Block2DPlan(w, h, a, len(pos) // n, rows, cols, row_dim, col_dim, t_rows, t_cols)
    return best


def _surface_base(view: View, index: dict, t_rows: int, t_cols: int, size: int) -> Expr:
    """The byte offset of a 2D surface's first element: the tensor index at view ``index`` with its row and
    column dims at 0."""
    tensor = list(view.tensor_index(index))
    tensor[t_rows] = tensor[t_cols] = arith.const(0)
    return operators.fold(offset_expr(view.layout, tensor, size))


def load_block2d(access: TileAccess, reg: RegTensor, plan: Block2DPlan, names: Names, origin: Origin) -> Stmt:
    """The ``load_block2d`` messages of ``plan`` filling ``reg`` from the tile ``access``."""
    view, size = access.view, reg.dtype.size
    j = names.fresh(f"{reg.buf.name}_msg")
    j_expr = j if plan.count > 1 else arith.const(0)
    e0 = operators.mul(j_expr, plan.elems)
    bxy = tuple(operators.add(base, x) for base, x in zip(access.base, reg.decode(e0, bound=reg.elems)))
    vidx = access.view_index(bxy, tuple(p if operators.is_const(base, 0) else None
                                        for p, base in zip(reg.layout.dims, access.base)))
    base = _surface_base(view, vidx, plan.tensor_rows, plan.tensor_cols, size)
    layout = view.layout
    pitch = next(b for b in layout.blocks if b.dim == plan.tensor_rows and b.size > 1).stride * size
    func = Send2D(reg.dtype, plan.width, plan.height, plan.array)
    index = view.tensor_index(vidx)
    x, y = operators.fold(index[plan.tensor_cols]), operators.fold(index[plan.tensor_rows])
    # The masks of the other tensor dims and the tails of the other view dims hold for the whole message
    # (plan_block2d): where they fail, the block's rows start above the surface and read as zeros.
    others = [m for t, m in enumerate(view.masks) if m is not None and t not in (plan.tensor_rows, plan.tensor_cols)]
    mask = arith.conj([operators.fold(substitute(m, {d.var: vidx[d.name] for d in view.dims})) for m in others]
                      + tail_masks(view, vidx, access.bounded - {plan.row_dim, plan.col_dim}))
    if mask is not None:
        y = Ternary.make(Op.IIF, mask, y, arith.const(-plan.height))
    args = [access.mem, base, arith.const(layout.dims[plan.tensor_cols] * size),
            arith.const(layout.dims[plan.tensor_rows]), arith.const(pitch), x, y,
            reg.buf, operators.add(reg.offset, operators.mul(e0, size))]
    body: Stmt = FuncCall.make(func, args, origin=origin)
    return For.make(j, 0, plan.count, body, origin=origin) if plan.count > 1 else body
