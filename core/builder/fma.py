"""Multiplication decomposition: a per-thread ``C(b, m, n) += A(b, m, k) * B(b, k, n)`` as FMA calls.

Each instruction kind fixes a granularity (the tile is padded to it; padding
is loaded as zeros and never stored) and the register layouts its operands
need (``docs/ir-semantics.md`` gives the operand forms):

- ``mad`` (Xe ``mad``, sm_90 ``fma``): ``simd`` lanes along N; B and C rows
  are N-contiguous, A elements are broadcast scalars (any A layout).
  With the lanes along the batch instead (depthwise), A, B and C are batch-innermost vectors.
- ``dp4a``: as ``mad`` over K quads: B packs 4 consecutive K per lane (VNNI).
- ``dpas.8xR``: C blocks of ``R x simd``, A blocks of ``R x K`` row-major,
  B blocks of ``K x simd`` packed as 8 rows of ``simd`` dwords (VNNI); in the
  transposed form (``C^T = B^T A^T``) A is the VNNI operand, B the rows and C
  blocks of ``R`` columns of ``simd`` rows.
- ``mma.m16n8k16`` / ``m16n8k32`` (sm_90): A, B and C in the PTX fragment
  layouts, fragment register ``r`` of lane ``l`` at byte ``r*128 + 4*l``.

All layouts are :class:`Layout` objects over the matrix dims ``(b, x, y)``.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import partial
from math import prod

from kdd.core.config.buildable import dpas_rcount, unbuilt_reason
from kdd.core.ir import operators
from kdd.core.ir.funcs import Dp4a, Dpas, Mad, Mma
from kdd.core.ir.names import Names
from kdd.core.ir.stmt import FuncCall, Stmt
from kdd.core.ir.types import Type
from kdd.core.layout.layout import Block, Layout
from kdd.core.targets import FmaShape

from . import arith
from .errors import BuildError
from .loops import nest
from .origin import Origin
from .tile import RegTensor, row_major

# Every refusal of this module is about the fma knob.
_fma_error = partial(BuildError, knob="fma")

B, X, Y = 0, 1, 2


def _up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def _tiled(frag: list[tuple[int, int, int]], frag_elems: int, tiles: list[tuple[int, int]],
           bt: int) -> list[Block]:
    """Fragment blocks, then fragment tiles ``(dim, count)`` inner to outer, then the batch."""
    blocks = [Block(d, s, st) for d, s, st in frag]
    stride = frag_elems
    for dim, count in tiles:
        blocks.append(Block(dim, count, stride))
        stride *= count
    blocks.append(Block(B, bt, stride))
    return blocks


@dataclass(frozen=True)
class FmaKind(ABC):
    """One instruction kind with its operand types and SIMD width."""

    a: Type
    b: Type
    acc: Type
    simd: int

    name = "fma"

    @property
    @abstractmethod
    def unit(self) -> tuple[int, int, int]:
        """Granularity ``(m, n, k)`` a tile is padded to."""

    def padded(self, m: int, n: int, k: int) -> tuple[int, int, int]:
        um, un, uk = self.unit
        return _up(m, um), _up(n, un), _up(k, uk)

    @abstractmethod
    def a_layout(self, bt: int, m: int, k: int, k_inner: bool) -> Layout:
        """A's layout over ``(b, m, k)``; ``k_inner`` says which dim memory prefers innermost."""

    def a_layouts(self, bt: int, m: int, k: int, k_inner: bool) -> tuple[Layout, ...]:
        """The A layouts the instructions read alike, :meth:`a_layout` first (the builder may pick the one
        its loads fill with the fewest messages)."""
        return (self.a_layout(bt, m, k, k_inner),)

    @abstractmethod
    def b_layout(self, bt: int, k: int, n: int) -> Layout: ...

    @abstractmethod
    def c_layout(self, bt: int, m: int, n: int) -> Layout: ...

    @abstractmethod
    def emit(self, a: RegTensor, b: RegTensor, c: RegTensor, names: Names, origin: Origin) -> Stmt:
        """The calls computing ``c += a * b`` over the whole (padded) tiles."""


@dataclass(frozen=True)
class MadKind(FmaKind):
    """``mad``: one multiply-add per lane, SIMD lanes along N."""

    name = "mad"

    @property
    def unit(self):
        return 1, self.simd, 1

    def a_layout(self, bt, m, k, k_inner):
        return row_major(self.a, (bt, m, k), (B, X, Y) if k_inner else (B, Y, X))

    def b_layout(self, bt, k, n):
        return row_major(self.b, (bt, k, n))

    def c_layout(self, bt, m, n):
        return row_major(self.acc, (bt, m, n))

    def emit(self, a, b, c, names, origin):
        bt, m, n = c.layout.dims
        k = a.layout.dims[Y]
        func = Mad(self.simd, self.acc, self.b, self.a, 0)

        def call(ib, ik, im, jn):
            s = self.simd
            dst = c.offset_of((ib, im, jn), (1, 1, s))
            return FuncCall.make(func, [c.buf, dst, c.buf, dst, b.buf, b.offset_of((ib, ik, jn), (1, 1, s)),
                                        a.buf, a.offset_of((ib, im, ik))], origin=origin)
        return nest(names, [("b", bt), ("k", k), ("m", m), ("nb", n // self.simd)], call, origin)


@dataclass(frozen=True)
class MadBatchKind(FmaKind):
    """``mad`` with its lanes along the batch (oneDNN's depthwise form): lane ``i`` computes
    ``C(b+i, m, n) += A(b+i, m, k) * B(b+i, k, n)``, so A, B and C are all batch-innermost
    and A is read as a vector, not broadcast."""

    name = "mad"

    @property
    def unit(self):
        return 1, 1, 1

    def a_layout(self, bt, m, k, k_inner):
        return row_major(self.a, (bt, m, k), (X, Y, B))

    def b_layout(self, bt, k, n):
        return row_major(self.b, (bt, k, n), (X, Y, B))

    def c_layout(self, bt, m, n):
        return row_major(self.acc, (bt, m, n), (X, Y, B))

    def emit(self, a, b, c, names, origin):
        bt, m, n = c.layout.dims
        k = a.layout.dims[Y]
        s = self.simd
        func = Mad(s, self.acc, self.b, self.a, self.a.size)

        def call(ib, ik, im, jn):
            dst = c.offset_of((ib, im, jn), (s, 1, 1))
            return FuncCall.make(func, [c.buf, dst, c.buf, dst, b.buf, b.offset_of((ib, ik, jn), (s, 1, 1)),
                                        a.buf, a.offset_of((ib, im, ik), (s, 1, 1))], origin=origin)
        return nest(names, [("bb", bt // s), ("k", k), ("m", m), ("n", n)], call, origin)


@dataclass(frozen=True)
class Dp4aKind(FmaKind):
    """``dp4a``: four-element dot products per lane, SIMD lanes along N."""

    name = "dp4a"

    @property
    def unit(self):
        return 1, self.simd, 4

    def a_layout(self, bt, m, k, k_inner):
        return row_major(self.a, (bt, m, k))

    def b_layout(self, bt, k, n):
        # VNNI: each dword packs 4 consecutive K of one column.
        return Layout(self.b, (bt, k, n), (Block(X, 4, 1), Block(Y, n, 4), Block(X, k // 4, 4 * n),
                                             Block(B, bt, k * n)))

    def c_layout(self, bt, m, n):
        return row_major(self.acc, (bt, m, n))

    def emit(self, a, b, c, names, origin):
        bt, m, n = c.layout.dims
        k = a.layout.dims[Y]
        func = Dp4a(self.simd, self.b, self.a, 0)

        def call(ib, iq, im, jn):
            s = self.simd
            dst = c.offset_of((ib, im, jn), (1, 1, s))
            return FuncCall.make(func, [c.buf, dst, c.buf, dst, b.buf, b.offset_of((ib, iq, jn), (1, 4, s)),
                                        a.buf, a.offset_of((ib, im, iq), (1, 1, 4))], origin=origin)
        return nest(names, [("b", bt), ("kq", k // 4), ("m", m), ("nb", n // self.simd)], call, origin)


@dataclass(frozen=True)
class DpasKind(FmaKind):
    """``dpas.DxR``: systolic depth ``depth`` (the target's ``FmaShape.depth``), repeat count ``rcount``,
    ``ops = 4 / sizeof(A)`` K elements per dword.

    ``transposed``: the instruction computes ``C^T = B^T A^T``, M in its ``simd`` lanes and N in its
    ``rcount`` rows: A is the VNNI operand (``src1``: dword ``v`` of lane ``m`` is K pair ``v`` of row
    ``m``), B the row operand (``src2``: a row of K per column of N), C a block of N rows of M lanes.
    A gather whose lanes walk A's rows (one 32-byte pixel of channels a lane) then lands a whole
    operand per message where the plain form takes one block message per row (``build``'s choice)."""

    rcount: int = 8
    depth: int = 8
    transposed: bool = False
    name = "dpas"

    @property
    def ops(self) -> int:
        return 4 // self.a.size

    @property
    def unit(self):
        if self.transposed:
            return self.simd, self.rcount, self.depth * self.ops
        return self.rcount, self.simd, self.depth * self.ops

    def a_layout(self, bt, m, k, k_inner):
        if self.transposed:
            return _vnni(self.a, bt, k, m, self.depth, self.ops, self.simd, kdim=Y, lanes=X)
        return self._a_layout(bt, m, k, self.rcount)

    def a_layouts(self, bt, m, k, k_inner):
        """Each instruction reads ``rcount`` rows of ``K`` block as one piece; those pieces may lie in any
        order: here ``rows`` (a multiple of ``rcount`` dividing ``m``) consecutive rows of a K block lie
        together, so that a 2D block load of that many rows lands where the instructions read them."""
        if self.transposed:
            return (self.a_layout(bt, m, k, k_inner),)
        r = self.rcount
        return tuple(self._a_layout(bt, m, k, rows) for rows in range(r, m + 1, r) if m % rows == 0)

    def _a_layout(self, bt, m, k, rows):
        """``rows`` rows of one K block, row-major; then the K blocks, then the row groups."""
        kd = self.depth * self.ops
        return Layout(self.a, (bt, m, k), tuple(_tiled(
            [(Y, kd, 1), (X, rows, kd)], rows * kd, [(Y, k // kd), (X, m // rows)], bt)))

    def b_layout(self, bt, k, n):
        kd, r = self.depth * self.ops, self.rcount
        if self.transposed:  # rcount columns of one K block, a column's K row-major, as A's rows
            return Layout(self.b, (bt, k, n), tuple(_tiled(
                [(X, kd, 1), (Y, r, kd)], r * kd, [(X, k // kd), (Y, n // r)], bt)))
        return _vnni(self.b, bt, k, n, self.depth, self.ops, self.simd, kdim=X, lanes=Y)

    def c_layout(self, bt, m, n):
        r, s = self.rcount, self.simd
        if self.transposed:
            return Layout(self.acc, (bt, m, n), tuple(_tiled(
                [(X, s, 1), (Y, r, s)], r * s, [(X, m // s), (Y, n // r)], bt)))
        return Layout(self.acc, (bt, m, n), tuple(_tiled(
            [(Y, s, 1), (X, r, s)], r * s, [(Y, n // s), (X, m // r)], bt)))

    def emit(self, a, b, c, names, origin):
        if self.transposed:
            return self._emit_transposed(a, b, c, names, origin)
        bt, m, n = c.layout.dims
        k = a.layout.dims[Y]
        r, s, kd = self.rcount, self.simd, self.depth * self.ops
        rows = next(blk.size for blk in a.layout.blocks if blk.dim == X)  # rows of a K block together
        g, nb, kb = rows // r, n // s, k // kd
        func = Dpas(self.depth, r, s, self.acc, self.b, self.a)

        def within(t: RegTensor, ir):
            return operators.mul(ir, t.step_bytes(X, r)) if g > 1 else arith.const(0)

        def call(ib, ig, ir, jn, ik):
            # rows ig * rows + ir * r: row group ig, then the ir-th instruction's rows within it
            c_off = operators.add(c.offset_of((ib, ig, jn), (1, rows, s)), within(c, ir))
            a_off = operators.add(a.offset_of((ib, ig, ik), (1, rows, kd)), within(a, ir))
            return FuncCall.make(func, [c.buf, c_off, c.buf, c_off, b.buf, b.offset_of((ib, ik, jn), (1, kd, s)),
                                        a.buf, a_off], origin=origin)
        return nest(names, [("b", bt), ("mb", m // rows), ("mr", g), ("nb", nb), ("kb", kb)], call, origin)

    def _emit_transposed(self, a, b, c, names, origin):
        bt, m, n = c.layout.dims
        k = a.layout.dims[Y]
        r, s, kd = self.rcount, self.simd, self.depth * self.ops
        func = Dpas(self.depth, r, s, self.acc, self.a, self.b)

        def call(ib, jn, im, ik):  # the B columns outermost: each src2 read by the M blocks in turn
            c_off = c.offset_of((ib, im, jn), (1, s, r))
            return FuncCall.make(func, [c.buf, c_off, c.buf, c_off, a.buf, a.offset_of((ib, im, ik), (1, s, kd)),
                                        b.buf, b.offset_of((ib, ik, jn), (1, kd, r))], origin=origin)
        return nest(names, [("b", bt), ("nb", n // r), ("mb", m // s), ("kb", k // kd)], call, origin)


def _vnni(dtype: Type, bt: int, k: int, width: int, depth: int, ops: int, simd: int, kdim: int,
          lanes: int) -> Layout:
    """dpas's VNNI operand (``src1``) of ``k`` x ``width`` over matrix dims ``kdim`` (K) and ``lanes``
    (the ``simd`` lanes): ``ops`` K elements a dword, ``simd`` lanes, ``depth`` dwords of K; then the
    lane blocks, then the K blocks."""
    kd = depth * ops
    dims = (bt, k, width) if kdim == X else (bt, width, k)
    return Layout(dtype, dims, tuple(_tiled(
        [(kdim, ops, 1), (lanes, simd, ops), (kdim, depth, ops * simd)],
        kd * simd, [(lanes, width // simd), (kdim, k // kd)], bt)))


@dataclass(frozen=True)
class MmaKind(FmaKind):
    """sm_90 ``mma.sync.m16n8k{16,32}`` with the fragment layouts of the target's shape
    (``FmaShape.fragments``: 4-byte registers, 32 lanes)."""

    shape: FmaShape | None = None
    name = "mma"

    @property
    def kfrag(self) -> int:
        return self.shape.k  # 16 for 16-bit types, 32 for 8-bit

    @property
    def unit(self):
        return self.shape.m, self.shape.n, self.kfrag

    def _fragment(self, operand: str) -> tuple[list[tuple[int, int, int]], int]:
        """The operand's fragment blocks over this kind's (row, column) dims and its element count."""
        blocks = [(X if d == 0 else Y, size, stride) for d, size, stride in self.shape.fragment(operand)]
        return blocks, prod(size for _, size, _ in blocks)

    def a_layout(self, bt, m, k, k_inner):
        frag, elems = self._fragment("a")
        tiles = [(Y, k // self.kfrag), (X, m // self.shape.m)]
        return Layout(self.a, (bt, m, k), tuple(_tiled(frag, elems, tiles, bt)))

    def b_layout(self, bt, k, n):
        frag, elems = self._fragment("b")
        tiles = [(Y, n // self.shape.n), (X, k // self.kfrag)]
        return Layout(self.b, (bt, k, n), tuple(_tiled(frag, elems, tiles, bt)))

    def c_layout(self, bt, m, n):
        frag, elems = self._fragment("c")
        tiles = [(Y, n // self.shape.n), (X, m // self.shape.m)]
        return Layout(self.acc, (bt, m, n), tuple(_tiled(frag, elems, tiles, bt)))

    def emit(self, a, b, c, names, origin):
        bt, m, n = c.layout.dims
        k = a.layout.dims[Y]
        fm, fn, kf = self.shape.m, self.shape.n, self.kfrag
        mb, nb, kb = m // fm, n // fn, k // kf
        func = Mma(fm, fn, kf, self.a, self.b, self.acc)

        def call(ib, im, jn, ik):
            c_off = c.offset_of((ib, im, jn), (1, fm, fn))
            return FuncCall.make(func, [c.buf, c_off, a.buf, a.offset_of((ib, im, ik), (1, fm, kf)),
                                        b.buf, b.offset_of((ib, ik, jn), (1, kf, fn)), c.buf, c_off],
                                 origin=origin)
        return nest(names, [("b", bt), ("mb", mb), ("nb", nb), ("kb", kb)], call, origin)


def make_fma(fma: str, target, simd: int, a: Type, b: Type, acc: Type, m: int, over_batch: bool = False,
             transposed_n: int = 0) -> FmaKind:
    """The instruction kind for config knob ``fma`` on ``target`` (``m``: rows of the thread tile;
    ``over_batch``: a ``mad`` puts its lanes along the batch dims, see ``mad_over_batch``;
    ``transposed_n``: the thread tile's N where ``dpas`` takes the transposed form, its rows N)."""
    if fma in ("mad", "fma") and over_batch:
        return MadBatchKind(a, b, acc, simd)
    if fma in ("mad", "fma"):
        return MadKind(a, b, acc, simd)
    if fma == "dp4a":
        if a.size != 1 or b.size != 1:
            raise _fma_error(f"fma=dp4a multiplies 8-bit integers, not {a} x {b}; use fma=mad or dpas")
        return Dp4aKind(a, b, acc, simd)
    if fma in ("dpas", "dpasw"):
        if not target.shapes(fma="dpas"):
            raise _fma_error(f"fma={fma} is an Xe instruction; {target.name} has {', '.join(target.fma_kinds)}")
        shapes = target.shapes(fma="dpas", a=a, b=b)
        if not shapes:
            raise _fma_error(f"{target.name} has no dpas for {a} x {b}")
        if unbuilt_reason(shapes[0]):
            raise _fma_error(unbuilt_reason(shapes[0]))
        if simd != shapes[0].simd:
            raise _fma_error(f"fma={fma} on {target.name} needs simd={shapes[0].simd}, config has simd={simd}")
        shape = shapes[0]
        rows = transposed_n or m
        return DpasKind(a, b, acc, simd, dpas_rcount(shape, rows, target.registers.reg_bytes), shape.depth,
                        transposed=bool(transposed_n))
    if fma == "mma":
        if not target.shapes(fma="mma"):
            raise _fma_error(f"fma=mma is an sm_90 instruction; {target.name} has {', '.join(target.fma_kinds)}")
        shapes = target.shapes(fma="mma", a=a, b=b)
        if not shapes:
            raise _fma_error(f"{target.name} has no mma for {a} x {b}")
        if unbuilt_reason(shapes[0]):
            raise _fma_error(f"{unbuilt_reason(shapes[0])}; use fma=fma")
        shape = next((s for s in shapes if s.acc == acc), shapes[0])
        return MmaKind(a, b, acc, shape.simd, shape)
    raise _fma_error(f"unknown fma '{fma}'")
