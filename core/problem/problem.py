"""A kernel's problem: op, propagation kind, shape, data types, layouts and post-ops."""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from .conv_shape import ConvShape, parse_conv_shape
from .data_types import DataTypes, parse_data_types
from .decompression import Decompression
from .errors import MAX_SIZE
from .frozen_map import FrozenMap
from .gemm_dims import Dims, GemmDims, conv_gemm_dims, gemm_gemm_dims
from .gemm_shape import GemmShape, parse_gemm_shape
from .post_ops import POST_OP_TYPES, Bias, PostOp, format_post_ops, parse_post_op, parse_post_ops

OPS = ("conv", "gemm")
PROPS = ("fwd", "bwd_d", "bwd_w")
# One vocabulary for both ops: for GEMM, src/wei/dst are A, B and C.
TENSORS = ("src", "wei", "dst")
_SHAPE_TYPES = {"conv": ConvShape, "gemm": GemmShape}
_GEMM_START = re.compile(r"\s*(\d|[bmnk]\d)")


def _default_tags() -> FrozenMap:
    return FrozenMap({t: "any" for t in TENSORS})


@dataclass(frozen=True)
class Problem:
    """One convolution or GEMM problem, immutable and hashable.

    ``tags`` maps each of ``src``/``wei``/``dst`` to a layout tag string
    (``axb``, ``ab``, ``ba``, ``NChw32n32c``...; ``any`` when not given); the
    layout module interprets them. ``post_ops`` apply to forward problems;
    ``bwd_w`` accepts only :class:`Bias` (the bias gradient) and ``bwd_d`` none.
    ``decompression``: a GEMM's integer weights scaled (and shifted by zero points) per group and
    multiplied in a float type (:mod:`.decompression`); None for plain weights.
    """

    op: str
    prop: str
    shape: ConvShape | GemmShape
    types: DataTypes
    tags: Mapping[str, str] = field(default_factory=_default_tags)
    post_ops: tuple[PostOp, ...] = ()
    decompression: Decompression | None = None

    def __post_init__(self):
        if self.op not in OPS:
            raise ValueError(f"unknown op {self.op!r} (known: {', '.join(OPS)})")
        if not isinstance(self.shape, _SHAPE_TYPES[self.op]):
            raise ValueError(f"a {self.op} problem needs a {_SHAPE_TYPES[self.op].__name__}, "
                             f"got {type(self.shape).__name__}")
        if self.prop not in PROPS:
            raise ValueError(f"unknown propagation kind {self.prop!r} (known: {', '.join(PROPS)})")
        if self.op == "gemm" and self.prop != "fwd":
            raise ValueError(f"GEMM problems are forward only, got prop {self.prop!r}")
        if not isinstance(self.types, DataTypes):
            raise ValueError(f"types must be DataTypes, got {self.types!r}")
        unknown = set(self.tags) - set(TENSORS)
        if unknown:
            raise ValueError(f"unknown tensor(s) {', '.join(sorted(unknown))} in tags "
                             f"(tensors: {', '.join(TENSORS)})")
        tags = _default_tags().updated(self.tags)
        for tensor, tag in tags.items():
            if not isinstance(tag, str) or not tag:
                raise ValueError(f"layout tag of {tensor} must be a non-empty string, got {tag!r}")
        object.__setattr__(self, "tags", tags)
        object.__setattr__(self, "post_ops", tuple(self.post_ops))
        for op in self.post_ops:
            if not isinstance(op, POST_OP_TYPES):
                raise ValueError(f"not a post-op: {op!r}")
            if self.prop == "bwd_d" or (self.prop == "bwd_w" and not isinstance(op, Bias)):
                raise ValueError(f"post-op {op.canonical()!r} does not apply to {self.prop} problems")
        d = self.decompression
        for role in ("src", "dst"):  # 4-bit weights wait for the decompression the spec adds after
            if getattr(self.types, role).scalar.is_packed:
                raise ValueError(f"{role} of type {getattr(self.types, role)}: 4-bit types are the weights of a "
                                 f"decompressed problem only")
        if d is not None:
            if self.op == "conv" and (self.prop != "fwd" or not d.per_oc):
                raise ValueError("a convolution's weights take per_oc scales and zero points (benchdnn's conv: "
                                 "wei:per_oc:TYPE), not grouped per_ocic ones" if self.prop == "fwd" else
                                 f"weight decompression is generated for forward convolutions, not {self.prop}")
            if not self.types.wei.is_int or self.types.wei.scalar.bits > 8:
                raise ValueError(f"weight decompression needs 8- or 4-bit integer weights (u8, s8, u4, s4), not "
                                 f"{self.types.wei}")
            if self.types.src != d.math:
                raise ValueError(f"fpmath {d.math} multiplies the source as it is: types must give src "
                                 f"{d.math}, not {self.types.src}")

    def gemm_dims(self) -> GemmDims:
        """The named B/M/N/K dims of this problem (see :mod:`.gemm_dims`)."""
        return self._gemm_dims

    @cached_property
    def _gemm_dims(self) -> GemmDims:
        # Made once per problem: the defaults heuristic asks for them of every candidate tile it weighs
        # (~800 times in a compile). Not a field: equality, hashing and repr see the problem alone.
        if self.op == "conv":
            return conv_gemm_dims(self.shape, self.prop)
        return gemm_gemm_dims(self.shape)

    def tensor_dims(self, tensor: str) -> Dims:
        """Logical ``(name, size)`` dims of ``src``/``wei``/``dst`` in oneDNN order.

        Convolution: src ``mb, ic, [id, ih,] iw`` and dst ``mb, oc, [od, oh,] ow``
        (total channels, only the problem's spatial dims); wei
        ``[g,] oc, ic, [kd, kh,] kw`` with per-group channels and ``g`` only when
        g > 1. GEMM: src ``batch.., m, k``, wei ``batch.., k, n``, dst ``batch.., m, n``.
        """
        if tensor not in TENSORS:
            raise ValueError(f"unknown tensor {tensor!r} (tensors: {', '.join(TENSORS)})")
        s = self.shape
        if self.op == "gemm":
            batch = tuple((f"b{i}", size) for i, size in enumerate(s.batch))
            pairs = {"src": ("m", "k"), "wei": ("k", "n"), "dst": ("m", "n")}[tensor]
            return batch + tuple((d, getattr(s, d)) for d in pairs)

        def spatial(prefix):
            return tuple((prefix + a, getattr(s, prefix + a)) for a in s.used_axes)

        if tensor == "src":
            return (("mb", s.mb), ("ic", s.ic)) + spatial("i")
        if tensor == "dst":
            return (("mb", s.mb), ("oc", s.oc)) + spatial("o")
        group = (("g", s.g),) if s.g > 1 else ()
        return group + (("oc", s.oc // s.g), ("ic", s.ic // s.g)) + spatial("k")

    def tensor_bytes(self, tensor: str) -> int:
        """Bytes of ``tensor``'s logical elements (without the padding of blocked layouts)."""
        count = 1
        for _, size in self.tensor_dims(tensor):
            count *= size
        return count * getattr(self.types, tensor).size

    def index_width_error(self) -> str | None:
        """Why 32-bit index arithmetic cannot address this problem's tensors, or None when it can.

        Kernels compute offsets in ``s32``; a tensor of 2**31 bytes or more
        would wrap them.
        """
        for tensor in TENSORS:
            size = self.tensor_bytes(tensor)
            if size > MAX_SIZE:
                return (f"{tensor} holds {size} bytes; kernels address memory with 32-bit offsets "
                        f"(at most {MAX_SIZE} bytes a tensor)")
        return None

    def flops(self) -> int:
        """Floating-point (or integer) operations: 2 per multiply-accumulate.

        For convolutions only taps that read real input count, as benchdnn
        counts them, so padding does not inflate the figure; the count is the
        same for every propagation kind. Post-ops are not counted.
        """
        if self.op == "gemm":
            d = self.gemm_dims()
            return 2 * d.B * d.M * d.N * d.K
        s = self.shape
        return 2 * s.mb * s.oc * (s.ic // s.g) * s.spatial_taps()

    def to_dict(self) -> dict:
        """JSON-ready description: shape fields, types, tags, post-ops and GEMM dims."""
        return {"op": self.op, "prop": self.prop, "shape": self.shape.to_dict(),
                "types": self.types.to_dict(), "tags": dict(self.tags),
                "post_ops": format_post_ops(self.post_ops), "gemm": self.gemm_dims().to_dict(),
                "flops": self.flops()} | (
                    {"decompression": self.decompression.canonical()} if self.decompression else {})


def detect_op(text: str) -> str:
    """``gemm`` for ``MxK:KxN`` or ``m..n..k..`` text, else ``conv``."""
    return "gemm" if _GEMM_START.match(text) else "conv"


def parse_shape(text: str, op: str | None = None) -> ConvShape | GemmShape:
    """Parse a shape of ``op`` (detected from the text when ``None``)."""
    op = op or detect_op(text)
    if op == "conv":
        return parse_conv_shape(text)
    if op == "gemm":
        return parse_gemm_shape(text)
    raise ValueError(f"unknown op {op!r} (known: {', '.join(OPS)})")


def problem_from_text(shape: str, *, op: str | None = None, prop: str = "fwd", types: str = "f32",
                      tags: Mapping[str, str] | None = None,
                      post_ops: str | Sequence[str] = ()) -> Problem:
    """Build a :class:`Problem` from its text fields (post-ops as a chain or a list).

    Parse errors are :class:`~.errors.ProblemError` with spans into the field
    they came from; callers that need to tell fields apart parse them one by
    one with :func:`parse_shape`, :func:`~.data_types.parse_data_types` and
    :func:`~.post_ops.parse_post_op`.
    """
    ops = parse_post_ops(post_ops) if isinstance(post_ops, str) else tuple(map(parse_post_op, post_ops))
    return Problem(op=op or detect_op(shape), prop=prop, shape=parse_shape(shape, op),
                   types=parse_data_types(types), tags=tags or {}, post_ops=ops)
