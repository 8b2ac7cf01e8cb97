"""Views (seed 000): a "virtual" tensor described by how its elements are read from a real one.

A :class:`View` has dims ``v0 .. v(m-1)`` with GEMM kinds (B, M, N, K), an
underlying tensor with dims ``t0 .. t(n-1)`` (and usually its memory
:class:`~kdd.core.layout.layout.Layout`), one IR expression per tensor dim
``t_j = F_j(v0, ..., v(m-1))`` over the view dims' variables, and one optional
access mask per tensor dim. Where any mask is false the element reads as zero
(and a store to it is dropped). Convolution's padding (``0 <= ih < IH``) and
the stride condition of backward-by-data are such masks.

View dim variables are ``s32`` variables named after the dims; a builder
substitutes its own index expressions for them (:meth:`View.tensor_index`).
:meth:`View.table` evaluates the mapping over every view index with numpy, the
brute-force form tests compare against.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import cache
from typing import TYPE_CHECKING, Mapping, Sequence

from kdd.core.ir.expr import (Binary, BoolImm, Expr, IntImm, Op, Ternary, Unary, Var, land,
                              var)
from kdd.core.ir.c_arith import c_div_array, c_mod_array, div_up_array
from kdd.core.ir.types import s32
from kdd.core.ir.visitor import free_vars, post_order, substitute

from .layout import Layout

if TYPE_CHECKING:  # numpy is imported where arrays are made, so an Xe compile does not load it
    import numpy as np


class DimKind(Enum):
    """GEMM role of a view dim: batch, shared by A and C (M), by B and C (N), by A and B (K)."""

    B = "b"
    M = "m"
    N = "n"
    K = "k"


@dataclass(frozen=True)
class ViewDim:
    """One view dim: its name (a problem dim such as ``oh``), size and GEMM kind."""

    name: str
    size: int
    kind: DimKind

    def __post_init__(self):
        if self.size < 1:
            raise ValueError(f"view dim {self.name} must have a positive size, got {self.size}")

    @property
    def var(self) -> Var:
        """The variable standing for this dim's index in mapping and mask expressions."""
        return var(self.name, s32)


@dataclass(frozen=True)
class View:
    """A virtual tensor over ``dims`` reading tensor ``tensor`` (see module doc).

    ``tensor_dims`` are the ``(name, size)`` logical dims of the underlying
    tensor, ``mapping[j]`` its index along ``tensor_dims[j]`` and ``masks[j]``
    the condition for that index to be a real element (``None``: always).
    ``layout``, when given, is the tensor's memory layout (its dims are
    ``tensor_dims``' sizes).
    """

    name: str
    tensor: str
    dims: tuple[ViewDim, ...]
    tensor_dims: tuple[tuple[str, int], ...]
    mapping: tuple[Expr, ...]
    masks: tuple[Expr | None, ...]
    layout: Layout | None = None

    def __post_init__(self):
        for f in ("dims", "tensor_dims", "mapping", "masks"):
            object.__setattr__(self, f, tuple(getattr(self, f)))
        names = [d.name for d in self.dims]
        if len(set(names)) != len(names):
            raise ValueError(f"view {self.name} repeats a dim: {names}")
        n = len(self.tensor_dims)
        if len(self.mapping) != n or len(self.masks) != n:
            raise ValueError(f"view {self.name}: {n} tensor dims need {n} mappings and masks, "
                             f"got {len(self.mapping)} and {len(self.masks)}")
        known = {d.var for d in self.dims}
        for j, e in enumerate(self.mapping + tuple(m for m in self.masks if m is not None)):
            stray = free_vars(e) - known
            if stray:
                raise ValueError(f"view {self.name}: expression {e} uses {sorted(v.name for v in stray)}, "
                                 f"which are not view dims")
        if self.layout is not None and self.layout.dims != tuple(s for _, s in self.tensor_dims):
            raise ValueError(f"view {self.name}: layout dims {self.layout.dims} differ from tensor dims "
                             f"{self.tensor_dims}")

    # -- structure -------------------------------------------------------------------------
    def dim(self, name: str) -> ViewDim:
        for d in self.dims:
            if d.name == name:
                return d
        raise KeyError(f"view {self.name} has no dim {name!r} (dims: {' '.join(self.dim_names)})")

    @property
    def dim_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.dims)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(d.size for d in self.dims)

    def dims_of(self, kind: DimKind) -> tuple[ViewDim, ...]:
        return tuple(d for d in self.dims if d.kind is kind)

    def tensor_dim_index(self, name: str) -> int:
        for j, (n, _) in enumerate(self.tensor_dims):
            if n == name:
                return j
        raise KeyError(f"tensor {self.tensor} has no dim {name!r}")

    def with_layout(self, layout: Layout) -> "View":
        return View(self.name, self.tensor, self.dims, self.tensor_dims, self.mapping, self.masks, layout)

    # -- expressions over given view indices -----------------------------------------------
    def _bind(self, values: Mapping[str, Expr | int]) -> dict:
        missing = [d.name for d in self.dims if d.name not in values]
        if missing:
            raise KeyError(f"view {self.name}: no index given for dim(s) {' '.join(missing)}")
        return {d.var: _as_expr(values[d.name]) for d in self.dims}

    def tensor_index(self, values: Mapping[str, Expr | int]) -> tuple[Expr, ...]:
        """The tensor index (one expression per tensor dim) of view index ``values`` (dim name -> expr)."""
        env = self._bind(values)
        return tuple(substitute(e, env) for e in self.mapping)

    def mask(self, values: Mapping[str, Expr | int]) -> Expr | None:
        """The conjunction of all masks at view index ``values``; ``None`` when the view has none."""
        env = self._bind(values)
        terms = [substitute(m, env) for m in self.masks if m is not None]
        return land(*terms) if terms else None

    def depends_on(self, dim: str) -> tuple[int, ...]:
        """Tensor dims whose mapping or mask uses view dim ``dim``."""
        v = self.dim(dim).var
        return tuple(j for j, (e, m) in enumerate(zip(self.mapping, self.masks))
                     if v in free_vars(e) or (m is not None and v in free_vars(m)))

    # -- brute force -----------------------------------------------------------------------
    def table(self) -> tuple[np.ndarray, np.ndarray]:
        """Tensor index and mask of every view index, by numpy evaluation of the expressions.

        Returns ``(index, mask)``: ``index`` has shape ``self.shape + (len(tensor_dims),)``
        and ``mask`` has shape ``self.shape`` (true where the element is real).
        """
        import numpy as np
        grids = np.indices(self.shape, dtype=np.int64)
        env = {d.var: grids[i] for i, d in enumerate(self.dims)}
        index = np.stack([np.broadcast_to(eval_numpy(e, env), self.shape) for e in self.mapping], axis=-1) \
            if self.mapping else np.zeros(self.shape + (0,), dtype=np.int64)
        mask = np.ones(self.shape, dtype=bool)
        for m in self.masks:
            if m is not None:
                mask &= np.broadcast_to(eval_numpy(m, env), self.shape)
        return index, mask


def _as_expr(value: Expr | int) -> Expr:
    return value if isinstance(value, Expr) else IntImm.make(s32, int(value))


# -- expression construction with trivial folding ---------------------------------------------
# Views are built from problem constants (strides, paddings); folding the trivial cases keeps
# the mappings as short as the seed writes them (``ih = oh + kh - 1`` for stride 1, dilation 0).

def add(a: Expr, b: Expr | int) -> Expr:
    if isinstance(b, int):
        if b == 0:
            return a
        return a - (-b) if b < 0 else a + b
    return a + b


def mul(a: Expr, c: int) -> Expr:
    if c == 1:
        return a
    if c == 0:
        return IntImm.make(s32, 0)
    return a * c


# -- numpy evaluation ---------------------------------------------------------------------------

@cache
def _numpy_binary() -> dict:
    """Each binary operator's numpy function (numpy imported on first use: start-up)."""
    import numpy as np
    return {
        Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply,
        Op.DIV: c_div_array, Op.MOD: c_mod_array, Op.DIV_UP: div_up_array,
        Op.MIN: np.minimum, Op.MAX: np.maximum,
        Op.EQ: np.equal, Op.NE: np.not_equal, Op.LT: np.less, Op.LE: np.less_equal,
        Op.GT: np.greater, Op.GE: np.greater_equal,
        Op.AND: np.logical_and, Op.OR: np.logical_or,
        Op.BIT_AND: np.bitwise_and, Op.BIT_OR: np.bitwise_or, Op.BIT_XOR: np.bitwise_xor,
    }


def eval_numpy(e: Expr, env: Mapping[Var, np.ndarray]) -> np.ndarray:
    """Vectorized value of an integer/bool index expression (C division semantics, int64).

    Supports what view mappings and masks use: variables, integer and bool
    immediates, arithmetic, comparisons, logic and ``iif``. Values are not
    wrapped to 32 bits; index expressions of small problems never overflow.
    """
    import numpy as np
    binary = _numpy_binary()
    values: dict[int, np.ndarray] = {}
    for node in post_order(e, done=values):
        if isinstance(node, Var):
            try:
                out = np.asarray(env[node])
            except KeyError:
                raise KeyError(f"no value for variable {node.name!r}") from None
        elif isinstance(node, IntImm):
            out = np.int64(node.value)
        elif isinstance(node, BoolImm):
            out = np.bool_(node.value)
        elif isinstance(node, Binary) and node.op in binary:
            out = binary[node.op](values[id(node.a)], values[id(node.b)])
        elif isinstance(node, Unary) and node.op in (Op.NEG, Op.NOT):
            a = values[id(node.a)]
            out = np.logical_not(a) if node.op is Op.NOT else -a
        elif isinstance(node, Ternary) and node.op is Op.IIF:
            out = np.where(values[id(node.a)], values[id(node.b)], values[id(node.c)])
        else:
            raise TypeError(f"eval_numpy cannot evaluate {node}")
        values[id(node)] = out
    return values[id(e)]


def offset_expr(layout: Layout, index: Sequence[Expr], scale: int = 1) -> Expr:
    """Element offset of tensor ``index`` (one expression per dim) in ``layout``, as IR, times ``scale``
    (the element size, for a byte offset: multiplied into every term).

    The IR form of :meth:`Layout.offset_of`: each block contributes
    ``digit * stride`` where the digit is the dim's index divided by the sizes
    of its inner blocks, modulo the block size (the outermost block of a dim
    takes no modulo, so indices past the padded size stay distinct).
    """
    if len(index) != layout.ndims:
        raise ValueError(f"index has {len(index)} dims, layout has {layout.ndims}")
    outermost = {}
    for k, b in enumerate(layout.blocks):
        outermost[b.dim] = k
    inner = [1] * layout.ndims
    terms: list[Expr] = []
    for k, b in enumerate(layout.blocks):
        if b.size == 1 and outermost[b.dim] != k:
            continue
        d = index[b.dim]
        if inner[b.dim] > 1:
            d = d / inner[b.dim]
        if outermost[b.dim] != k:
            d = d % b.size
        inner[b.dim] *= b.size
        terms.append(mul(d, b.stride * scale))
    out: Expr = IntImm.make(s32, layout.offset * scale)
    for t in terms:
        out = t if (isinstance(out, IntImm) and out.value == 0) else add(out, t)
    return out
