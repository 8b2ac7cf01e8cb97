"""Memory layouts: how the logical indices of a tensor map to element offsets.

A :class:`Layout` is the seed-000 layout: a data type, the logical dim sizes,
an offset (in elements) and a tuple of :class:`Block` stored **innermost
first**. Every dim is fully described by its blocks, outer blocks included:
``NChw32n32c`` for a 128x64x7x7 tensor is, innermost first, ``32c 32n 7w 7h
2c 4n`` (explicit form ``4n2c7h7w32n32c``, outer to inner).

The logical index ``i`` of dim ``d`` is split over the blocks of ``d`` as a
mixed-radix number whose least significant digit belongs to the innermost
block of ``d``; the element offset is ``offset + sum(digit * stride)`` over all
blocks. The product of the block sizes of a dim is its *padded* size, which
may exceed the logical size: oneDNN pads a dim that is not a multiple of its
blocking, and the padding is storage (it counts in :meth:`Layout.size_bytes`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Sequence

from kdd.core.ir.types import Type
from kdd.core.layout import tags

if TYPE_CHECKING:  # numpy is imported where arrays are made, so an Xe compile does not load it
    import numpy as np


@dataclass(frozen=True, slots=True)
class Block:
    """``size`` consecutive index values of dim ``dim``, ``stride`` elements apart."""

    dim: int
    size: int
    stride: int

    def __post_init__(self):
        if self.dim < 0 or self.size < 1 or self.stride < 0:
            raise ValueError(f"invalid block {self} (need dim >= 0, size >= 1, stride >= 0)")


@dataclass(frozen=True)
class Layout:
    """A memory layout: ``dtype``, logical ``dims``, ``blocks`` (innermost first), ``offset``."""

    dtype: Type
    dims: tuple[int, ...]
    blocks: tuple[Block, ...]
    offset: int = 0

    def __post_init__(self):
        object.__setattr__(self, "dims", tuple(self.dims))
        object.__setattr__(self, "blocks", tuple(self.blocks))
        if self.dtype.lanes != 1:
            raise ValueError(f"layout element type must be scalar, got {self.dtype}")
        if any(d < 1 for d in self.dims):
            raise ValueError(f"dims must be positive, got {self.dims}")
        if self.offset < 0:
            raise ValueError(f"offset must be >= 0, got {self.offset}")
        for b in self.blocks:
            if b.dim >= self.ndims:
                raise ValueError(f"block {b} names dim {b.dim} of a {self.ndims}-dim layout")
        for d, (size, padded) in enumerate(zip(self.dims, self.padded_dims)):
            if padded < size:
                raise ValueError(f"blocks of dim {d} cover {padded} elements, dim has {size}")

    @staticmethod
    def dense(
        dtype: Type | str,
        dims: Sequence[int],
        outer_to_inner: Sequence[tuple[int, int]],
        offset: int = 0,
    ) -> "Layout":
        """A dense layout with ``(dim, size)`` blocks listed outer to inner (as tags write them)."""
        dtype = Type.parse(dtype) if isinstance(dtype, str) else dtype
        blocks, stride = [], 1
        for dim, size in reversed(outer_to_inner):
            blocks.append(Block(dim, size, stride))
            stride *= size
        return Layout(dtype, tuple(dims), tuple(blocks), offset)

    @property
    def ndims(self) -> int:
        return len(self.dims)

    @property
    def padded_dims(self) -> tuple[int, ...]:
        """Per dim, the product of its block sizes (>= the logical size)."""
        return tuple(math.prod(b.size for b in self.blocks if b.dim == d) for d in range(self.ndims))

    def elems(self) -> int:
        """Number of logical elements (padding excluded)."""
        return math.prod(self.dims)

    def padded_elems(self) -> int:
        """Number of elements including padding."""
        return math.prod(self.padded_dims)

    def size_bytes(self) -> int:
        """Bytes a buffer needs to hold the layout from its start: offset, padding and holes included (a
        packed 4-bit type's elements two a byte)."""
        span = 1 + sum((b.size - 1) * b.stride for b in self.blocks)
        return -(-(self.offset + span) * self.dtype.scalar.bits // 8)

    def offset_of(self, idx: Sequence[int]) -> int:
        """Element offset of logical index ``idx`` (padded positions are valid indices)."""
        if len(idx) != self.ndims:
            raise ValueError(f"index {tuple(idx)} has {len(idx)} dims, layout has {self.ndims}")
        for i, p in zip(idx, self.padded_dims):
            if not 0 <= i < p:
                raise IndexError(f"index {tuple(idx)} out of bounds for padded dims {self.padded_dims}")
        return self.unchecked_offset(idx)

    def unchecked_offset(self, idx: Sequence[int]) -> int:
        """:meth:`offset_of` without bounds checks, in plain integers (no numpy: the Xe code generator
        maps a few hundred indices at a time, and loading numpy would cost more than all of them)."""
        rest = [int(i) for i in idx]
        out = self.offset
        for b in self.blocks:
            out += rest[b.dim] % b.size * b.stride
            rest[b.dim] //= b.size
        return out

    def offsets_of(self, indices: np.ndarray) -> np.ndarray:
        """Vectorized :meth:`offset_of` without bounds checks: ``(..., ndims)`` indices to ``(...)`` offsets."""
        import numpy as np
        indices = np.asarray(indices, dtype=np.int64)
        rest = [indices[..., d] for d in range(self.ndims)]
        out = np.full(indices.shape[:-1], self.offset, dtype=np.int64)
        for b in self.blocks:
            out += (rest[b.dim] % b.size) * b.stride
            rest[b.dim] = rest[b.dim] // b.size
        return out

    def is_dense(self) -> bool:
        """Whether the padded tensor fills ``padded_elems()`` consecutive elements (no holes, no overlaps)."""
        expected = 1
        for b in sorted(self.coalesce().blocks, key=lambda b: b.stride):
            if b.stride != expected:
                return False
            expected *= b.size
        return True

    def coalesce(self) -> "Layout":
        """The same mapping with size-1 blocks dropped and adjacent same-dim blocks merged.

        Two blocks merge when they are neighbours in the block list, belong to
        the same dim and the outer one continues the inner one
        (``outer.stride == inner.stride * inner.size``).
        """
        merged: list[Block] = []
        for b in self.blocks:
            if b.size == 1:
                continue
            top = merged[-1] if merged else None
            if top is not None and top.dim == b.dim and b.stride == top.stride * top.size:
                merged[-1] = Block(b.dim, top.size * b.size, top.stride)
            else:
                merged.append(b)
        return replace(self, blocks=tuple(merged))

    def is_equal(self, other: "Layout") -> bool:
        """Structural equality after :meth:`coalesce` (same type, dims, offset and mapping)."""
        return (
            self.dtype == other.dtype
            and self.dims == other.dims
            and self.offset == other.offset
            and self.coalesce().blocks == other.coalesce().blocks
        )

    def split(self, tile: Sequence[int]) -> tuple["Layout", np.ndarray]:
        """Split the padded tensor into tiles of ``tile`` elements per dim.

        Returns the layout of one tile (dims ``tile``, offset 0; the same for
        every tile) and the element offset of each tile's origin as an array
        over the tile grid (``padded_dims[d] // tile[d]`` tiles along dim
        ``d``), so ``offset_of(g * tile + i) == offsets[g] + sub.offset_of(i)``.
        Along each dim the tile must be a product of whole blocks, innermost
        first, times a divisor of the next block.
        """
        import numpy as np
        tile = tuple(tile)
        if len(tile) != self.ndims or any(t < 1 for t in tile):
            raise ValueError(f"tile {tile} does not fit a {self.ndims}-dim layout")
        left = list(tile)
        sub = []
        for b in self.blocks:
            take = math.gcd(left[b.dim], b.size)
            if take not in (b.size, left[b.dim]):
                sizes = tuple(x.size for x in self.blocks if x.dim == b.dim)
                raise ValueError(f"tile {tile[b.dim]} of dim {b.dim} does not align with its blocks {sizes}")
            if take > 1:
                sub.append(Block(b.dim, take, b.stride))
            left[b.dim] //= take
        if any(x != 1 for x in left):
            raise ValueError(f"tile {tile} exceeds padded dims {self.padded_dims}")
        grid = tuple(p // t for p, t in zip(self.padded_dims, tile))
        origins = np.moveaxis(np.indices(grid, dtype=np.int64), 0, -1) * np.asarray(tile)
        return Layout(self.dtype, tile, tuple(sub)), self.offsets_of(origins)

    def tag(self, dim_names: Sequence[str] | None = None) -> str | None:
        """The oneDNN tag of this layout, or None when no tag describes it.

        Letter form (``aBcd16b``) by default; with ``dim_names`` the named form
        (``nChw16c``) when every dim has a named letter (see
        :func:`kdd.core.layout.tags.named_letters`). The offset is not part of
        a tag. A layout parsed from a tag prints that tag back (``x`` expanded).
        """
        letters, names = _alphabet(dim_names)
        if self.ndims > len(letters):
            return None
        # The raw blocks reproduce a parsed tag exactly; the coalesced ones
        # find the tag of layouts built any other way.
        for layout in (self, self.coalesce()):
            outer, inner = _tag_structure(layout)
            text = tags.format_tag(outer, inner, letters)
            blocks = tags.tag_blocks(text, self.dims, names)
            if Layout.dense(self.dtype, self.dims, blocks, self.offset).is_equal(self):
                return text
        return None

    def cute(self) -> str:
        """``(shape):(stride)`` with one mode per logical dim, in dim order.

        A mode is the dim's blocks inner to outer: a plain ``size``/``stride``
        for one block, a nested tuple for several, ``1``/``0`` for a dim without
        blocks. ``NChw32n32c`` for 128x64x7x7 reads
        ``((32,4),(32,2),7,7):((32,100352),(1,50176),7168,1024)``. A non-zero
        offset is prefixed as ``offset + ``.
        """
        shapes, strides = [], []
        for d in range(self.ndims):
            blocks = [b for b in self.blocks if b.dim == d]
            shapes.append(_cute_mode([b.size for b in blocks], 1))
            strides.append(_cute_mode([b.stride for b in blocks], 0))
        text = f"({','.join(shapes)}):({','.join(strides)})"
        return f"{self.offset} + {text}" if self.offset else text

    def blocks_str(self, dim_names: Sequence[str] | None = None) -> str:
        """Explicit block form, outer to inner: ``4n2c7h7w32n32c`` (named) or ``4a2b7c7d32a32b``."""
        letters, _ = _alphabet(dim_names)
        return tags.format_blocks([(b.dim, b.size) for b in reversed(self.blocks)], letters)


def _cute_mode(values: Sequence[int], empty: int) -> str:
    """One dim's mode of the CuTe form: its blocks' sizes or strides, ``empty`` without blocks."""
    if not values:
        return str(empty)
    return str(values[0]) if len(values) == 1 else f"({','.join(map(str, values))})"


def _alphabet(dim_names: Sequence[str] | None) -> tuple[Sequence[str], Sequence[str] | None]:
    """Letters to print dims with, and the dim names that read those letters back."""
    named = tags.named_letters(dim_names) if dim_names is not None else None
    return (named, dim_names) if named else (tags.POSITIONAL, None)


def _tag_structure(layout: Layout) -> tuple[list[int], list[tuple[int, int]]]:
    """Outer dim order and inner blocks of a tag that may describe ``layout``.

    The outer part of a tag is the outermost run of blocks with distinct dims,
    cut at the first block whose size is not what the tag would give it
    (``ceil(dim / inner blocks)``: a padded dim whose outer block was
    coalesced away). Dims left without an outer block go before the first
    outer dim with a larger index.
    """
    outer_in = list(reversed(layout.blocks))
    run = 0
    while run < len(outer_in) and outer_in[run].dim not in {b.dim for b in outer_in[:run]}:
        run += 1
    for k, b in enumerate(outer_in[:run]):
        inner = math.prod(x.size for x in outer_in[run:] if x.dim == b.dim)
        if b.size != -(-layout.dims[b.dim] // inner):
            run = k
            break
    outer = [b.dim for b in outer_in[:run]]
    outer_in = outer_in[run:]
    for d in range(layout.ndims):
        if d not in outer:
            pos = next((k for k, o in enumerate(outer) if o > d), len(outer))
            outer.insert(pos, d)
    return outer, [(b.dim, b.size) for b in outer_in]


def parse_layout(
    tag: str,
    dims: Sequence[int],
    dtype: Type | str,
    *,
    dim_names: Sequence[str] | None = None,
    offset: int = 0,
) -> Layout:
    """The dense layout that oneDNN tag ``tag`` gives a tensor of logical sizes ``dims``.

    Accepts letter tags (``acdb``, ``ABcd8a16b2a``), meta-tags (``axb``,
    ``aBx16b``), named tags (``NChw32n32c``, resolved through ``dim_names``
    such as ``("mb", "ic", "ih", "iw")``, or by canonical position) and the
    explicit block form (``4n2c7h7w32n32c``); see :mod:`kdd.core.layout.tags`.
    Raises :class:`~kdd.core.layout.tags.LayoutTagError` with the offending
    token's span.
    """
    return Layout.dense(dtype, dims, tags.tag_blocks(tag, dims, dim_names), offset)
