"""Per-thread tiles as matrices: which view elements a register buffer holds, and where.

A GEMM operand tile is a batch of matrices: A is ``(b, m, k)``, B ``(b, k, n)``,
C ``(b, m, n)``. Each matrix dim flattens one or more view dims
(:class:`MatrixDim`, last dim innermost), so the tile ``oh4 ow8 x ic16`` of
a convolution's A is a ``1 x 32 x 16`` matrix. A :class:`RegTensor` is a
register buffer holding such a matrix in a :class:`Layout` over the three
matrix dims (padded to the FMA instruction's granularity); a
:class:`TileAccess` says where the tile lives in memory: a view, the buffer
behind it, and the tile's origin in view coordinates.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

from kdd.core.ir import operators
from kdd.core.ir.expr import Expr, Ramp, Var
from kdd.core.ir.types import Type
from kdd.core.layout.layout import Block, Layout
from kdd.core.layout.view import View

from . import arith


@dataclass(frozen=True)
class MatrixDim:
    """View dims flattened into one matrix dim, ``(name, extent)`` pairs, last innermost."""

    dims: tuple[tuple[str, int], ...] = ()

    @property
    def size(self) -> int:
        return math.prod(e for _, e in self.dims)

    def digits(self, flat: Expr | int, bound: int | None = None) -> dict[str, Expr]:
        """Per view dim, its index inside the tile at flat index ``flat`` (``< bound``)."""
        out: dict[str, Expr] = {}
        inner = 1
        for name, extent in reversed(self.dims):
            out[name] = arith.digit(flat, inner, extent, bound)
            inner *= extent
        return out

    def innermost(self) -> tuple[str, int] | None:
        """The innermost view dim with extent > 1."""
        for name, extent in reversed(self.dims):
            if extent > 1:
                return name, extent
        return None


@dataclass(frozen=True)
class RegTensor:
    """A register buffer ``buf`` holding a ``(b, x, y)`` matrix in ``layout`` from byte ``offset``."""

    buf: Var
    layout: Layout
    offset: Expr | int = 0
    roles: tuple[str, str, str] = ("b", "x", "y")

    @property
    def dtype(self) -> Type:
        return self.layout.dtype

    @property
    def elems(self) -> int:
        """Elements the buffer region spans (dense layouts: every padded element)."""
        return self.layout.padded_elems()

    @property
    def bytes(self) -> int:
        return self.layout.size_bytes()

    def offset_of(self, index: tuple, unit: tuple[int, int, int] = (1, 1, 1)) -> Expr:
        """Byte offset of the element at ``index[d] * unit[d]`` along each matrix dim ``d``.

        ``unit`` is a tile size (an FMA fragment, a SIMD chunk); the index
        steps whole tiles, so the offset is linear in it: each dim's step is
        found in the one layout block the unit falls into.
        """
        terms = [self.offset]
        for dim, (idx, u) in enumerate(zip(index, unit)):
            if operators.is_const(idx, 0):
                continue
            terms.append(operators.mul(idx, self.step_bytes(dim, u)))
        return operators.add(*terms)

    def step_bytes(self, dim: int, unit: int) -> int:
        """The bytes between the tiles of ``unit`` elements along matrix dim ``dim`` (one layout block holds
        the step: see :meth:`offset_of`)."""
        return self._step(dim, unit) * self.dtype.size

    def _step(self, dim: int, unit: int) -> int:
        inner = 1
        for blk in self.layout.blocks:
            if blk.dim != dim or blk.size == 1:
                continue
            if inner <= unit < inner * blk.size:
                if unit % inner:
                    break
                return unit // inner * blk.stride
            inner *= blk.size
        raise ValueError(f"a step of {unit} along dim {dim} is not a stride of layout {self.layout.blocks}")

    def rows(self, dim: int, start: Expr | int, count: int) -> "RegTensor":
        """Indices ``[start*count, (start+1)*count)`` along ``dim``: a strided view of the same buffer."""
        blocks, inner = [], 1
        for blk in self.layout.blocks:
            if blk.dim != dim:
                blocks.append(blk)
                continue
            if inner < count:
                take = min(blk.size, count // inner)
                if count % inner or (take < blk.size and inner * take != count):
                    raise ValueError(f"{count} indices along dim {dim} do not align with {self.layout.blocks}")
                blocks.append(Block(dim, take, blk.stride))
            inner *= blk.size
        dims = list(self.layout.dims)
        dims[dim] = count
        index, unit = [0, 0, 0], [1, 1, 1]
        index[dim], unit[dim] = start, count
        return RegTensor(self.buf, Layout(self.dtype, tuple(dims), tuple(blocks)),
                         self.offset_of(tuple(index), tuple(unit)), self.roles)

    def decode(self, e: Expr | int, bound: int | None = None) -> tuple[Expr, Expr, Expr]:
        """The matrix index ``(b, x, y)`` held at element position ``e`` (``0 <= e < bound``).

        The layout is dense, so its blocks sorted by stride are the digits of
        ``e``; each digit weighs the sizes of the inner blocks of its own dim.
        """
        weight: dict[int, int] = {}
        seen = [1, 1, 1]
        for k, blk in enumerate(self.layout.blocks):
            weight[k] = seen[blk.dim]
            seen[blk.dim] *= blk.size
        idx: list[list[Expr]] = [[], [], []]
        order = sorted(range(len(self.layout.blocks)), key=lambda k: self.layout.blocks[k].stride)
        for k in order:
            blk = self.layout.blocks[k]
            if blk.size == 1:
                continue
            d = arith.digit(e, blk.stride, blk.size, bound)
            idx[blk.dim].append(operators.mul(d, weight[k]))
        return tuple(operators.add(*parts) for parts in idx)

    def decode_ramp(self, base: Expr, stride: int, lanes: int, align: int,
                    bound: int | None = None) -> tuple[Expr, Expr, Expr] | None:
        """``decode`` of the positions ``base + l*stride`` (``l < lanes``, ``base`` a known multiple of
        ``align``, 0 for any) as the scalar index of ``base`` plus a constant ramp along one dim, where
        the lanes step one digit of the layout without carrying: its block has stride ``stride``, a
        size ``lanes`` divides, and ``base`` is a multiple of ``stride * lanes``. Vector division and
        modulus then never arise (a vector gather's lanes walking rows of K); None where they would."""
        if align % (stride * lanes):
            return None
        seen = [1, 1, 1]
        for blk in self.layout.blocks:
            if blk.stride == stride and blk.size > 1 and blk.size % lanes == 0:
                idx = list(self.decode(base, bound))
                idx[blk.dim] = operators.add(idx[blk.dim], Ramp.make(arith.const(0), seen[blk.dim], lanes))
                return tuple(idx)
            seen[blk.dim] *= blk.size
        return None

    def with_dtype(self, dtype: Type, buf: Var) -> "RegTensor":
        """The same element order in another type and buffer (conversions, epilogue tensors)."""
        return RegTensor(buf, Layout(dtype, self.layout.dims, self.layout.blocks), 0, self.roles)

    def inner_block(self) -> Block | None:
        """The stride-1 block when it is its dim's innermost: consecutive register elements
        then hold consecutive indices of one matrix dim."""
        for blk in self.layout.blocks:
            if blk.size == 1:
                continue
            first_of_dim = next(b for b in self.layout.blocks if b.dim == blk.dim and b.size > 1)
            if blk.stride == 1:
                return blk if blk is first_of_dim else None
        return None


def row_major(dtype: Type, sizes: tuple[int, int, int], order: tuple[int, int, int] = (0, 1, 2)) -> Layout:
    """A dense layout over matrix dims ``(b, x, y)``; ``order`` lists dims outer to inner."""
    return Layout.dense(dtype, sizes, [(d, sizes[d]) for d in order if sizes[d] > 1])


@dataclass(frozen=True)
class TileAccess:
    """Where a tile's elements live: ``view`` over buffer ``mem`` in ``space`` (global or slm).

    ``roles`` flattens view dims into the matrix dims ``(b, x, y)``;
    ``starts`` gives the tile origin of *every* view dim (dims outside the
    tile are fixed at their start); ``bounded`` lists view dims whose index
    may reach the view size (tails), so loads mask them. ``base`` offsets the
    register tensor inside the tile's matrix (subtiles hold part of a tile).
    ``facts`` are known multiples of the variables in ``starts``.
    """

    view: View
    mem: Var
    space: str
    roles: tuple[MatrixDim, MatrixDim, MatrixDim]
    starts: Mapping[str, Expr]
    bounded: frozenset[str] = frozenset()
    facts: Mapping[Var, int] = field(default_factory=dict)
    base: tuple = (0, 0, 0)

    @property
    def real(self) -> tuple[int, int, int]:
        """Unpadded matrix sizes."""
        return tuple(r.size for r in self.roles)

    def view_index(self, bxy: tuple[Expr, Expr, Expr], bounds: tuple) -> dict[str, Expr]:
        """View index of matrix element ``bxy`` (each below its ``bounds``)."""
        local: dict[str, Expr] = {}
        for role, flat, bound in zip(self.roles, bxy, bounds):
            local.update(role.digits(flat, bound))
        out = {}
        for d in self.view.dims:
            start = self.starts[d.name]
            out[d.name] = operators.add(start, local[d.name]) if d.name in local else start
        return out
