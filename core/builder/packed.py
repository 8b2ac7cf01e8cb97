"""4-bit tensors (``u4``, ``s4``) as the bytes that hold them.

Two elements share a byte along the tensor's innermost memory dim, the even one in the low nibble (oneDNN's
and benchdnn's packing). Registers hold no nibble, so a kernel reads such a tensor through its *byte view*:
the same view with that dim (and the view dim walking it) halved, over ``u8`` memory, where one element is a
pair of the tensor's. :func:`byte_access` turns a tile access into it; the builder then unpacks the pairs
with shifts and masks (:mod:`.decompress`).
"""
from __future__ import annotations

from dataclasses import dataclass

from kdd.core.ir.expr import Binary, Expr, IntImm, Op, Var
from kdd.core.ir.types import u8
from kdd.core.layout.layout import Block, Layout
from kdd.core.layout.view import View, ViewDim

from . import arith
from .errors import BuildError
from .tile import MatrixDim, TileAccess


@dataclass(frozen=True)
class ByteAccess:
    """A 4-bit tile access as bytes: ``access`` reads pairs, ``role`` is the matrix dim whose coordinate
    ``i`` is byte ``i / 2`` of the tile and nibble ``i % 2`` of it."""

    access: TileAccess
    role: int


def byte_access(access: TileAccess, what: str) -> ByteAccess:
    """``access`` (a view over a packed 4-bit tensor) as an access to its bytes; ``what`` names the tensor
    in errors. The packed dim must be walked by one view dim alone, the innermost of its matrix dim, with
    even extents, so that every byte of the tile holds two of its elements."""
    view = access.view
    layout = view.layout
    inner = next((b for b in layout.blocks if b.stride == 1 and b.size > 1), None)
    if inner is None:
        raise BuildError(f"{what}: a 4-bit tensor needs a unit-stride dim to pack its pairs along")
    t = inner.dim
    name, size = view.tensor_dims[t]
    walker = _walker(view.mapping[t], view.dim_names)
    pairs = _halved(view.mapping[t], walker) if walker is not None else None
    if pairs is None:
        raise BuildError(f"{what}: its packed dim {name} must be one view dim plus even terms, not "
                         f"{view.mapping[t]}")
    role = next((r for r, m in enumerate(access.roles) if m.innermost() and m.innermost()[0] == walker.name), None)
    if role is None:
        raise BuildError(f"{what}: the packed dim {walker.name} must be the innermost of its tile dim")
    extent = dict(access.roles[role].dims)[walker.name]
    odd = [f"{label} {v}" for label, v in (("size", size), ("tile", extent), ("block", inner.size),
                                           ("offset", layout.offset)) if v % 2]
    odd += [f"stride {b.stride}" for b in layout.blocks if b is not inner and b.stride % 2]
    if odd:
        raise BuildError(f"{what}: 4-bit elements pair along {name}, which needs even sizes ({', '.join(odd)})",
                         knob="iter" if odd[0].startswith("tile") else None)
    blocks = tuple(Block(b.dim, b.size // 2, 1) if b is inner else Block(b.dim, b.size, b.stride // 2)
                   for b in layout.blocks)
    tensor_dims = tuple((n, s // 2) if j == t else (n, s) for j, (n, s) in enumerate(view.tensor_dims))
    dims = layout.dims[:t] + (size // 2,) + layout.dims[t + 1:]
    bytes_ = Layout(u8, dims, blocks, layout.offset // 2)
    vdims = tuple(ViewDim(d.name, d.size // 2, d.kind) if d.name == walker.name else d for d in view.dims)
    mapping = tuple(pairs if j == t else e for j, e in enumerate(view.mapping))
    bview = View(view.name, view.tensor, vdims, tensor_dims, mapping, view.masks, bytes_)
    roles = list(access.roles)
    roles[role] = MatrixDim(tuple((n, e // 2 if n == walker.name else e) for n, e in roles[role].dims))
    starts = dict(access.starts)
    starts[walker.name] = arith.div(starts[walker.name], 2)
    base = tuple(arith.div(b, 2) if r == role else b for r, b in enumerate(access.base))
    return ByteAccess(TileAccess(bview, access.mem, access.space, tuple(roles), starts, access.bounded,
                                 access.facts, base), role)


def _walker(e: Expr, dims: tuple[str, ...]) -> Var | None:
    """The view dim walking a packed tensor dim's index ``e``: its one term with coefficient 1."""
    if isinstance(e, Var):
        return e if e.name in dims else None
    if isinstance(e, Binary) and e.op is Op.ADD:
        found = [w for w in (_walker(e.a, dims), _walker(e.b, dims)) if w is not None]
        return found[0] if len(found) == 1 else None
    return None


def _halved(e: Expr, walker: Var) -> Expr | None:
    """The byte index of packed index ``e``: ``walker`` (then counting pairs) plus the other terms halved,
    which must be even (``g * 32 + oc`` -> ``g * 16 + oc``); None otherwise."""
    if e is walker:
        return e
    if isinstance(e, IntImm):
        return IntImm.make(e.type, e.value // 2) if e.value % 2 == 0 else None
    if isinstance(e, Binary) and e.op is Op.MUL and isinstance(e.b, IntImm) and e.b.value % 2 == 0:
        return e.a if e.b.value == 2 else Binary.make(Op.MUL, e.a, IntImm.make(e.b.type, e.b.value // 2))
    if isinstance(e, Binary) and e.op is Op.ADD:
        a, b = _halved(e.a, walker), _halved(e.b, walker)
        return None if a is None or b is None else a + b
    return None


def halved(dims: tuple[int, int, int], role: int) -> tuple[int, int, int]:
    """A tile's matrix dims with ``role`` counted in bytes of two 4-bit elements."""
    return tuple(d // 2 if r == role else d for r, d in enumerate(dims))
