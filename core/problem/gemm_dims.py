"""How a problem maps onto a batched GEMM: named B, M, N and K dimensions.

Every kernel in kdd is a batched GEMM ``C[b, m, n] += A[b, m, k] * B[b, k, n]``
over named problem dimensions. A convolution's group is the batch; its
channels per group (``ic = IC/g``, ``oc = OC/g``) and spatial dims fill M, N
and K according to the propagation kind:

======  ===========  ===============  =====  ===============
prop    B            M                N      K
======  ===========  ===============  =====  ===============
fwd     g            mb od oh ow      oc     ic kd kh kw
bwd_d   g            mb id ih iw      ic     oc kd kh kw
bwd_w   g            ic kd kh kw      oc     mb od oh ow
gemm    b0 b1 ...    m                n      k
======  ===========  ===============  =====  ===============

All three spatial dims are always listed, with size 1 where a 1D/2D problem
does not use them, so that tiles and loop nests have the same names for every
problem of an op.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

Dims = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class GemmDims:
    """Ordered ``(name, size)`` dims of each GEMM role; ``B``/``M``/``N``/``K`` are products."""

    b: Dims
    m: Dims
    n: Dims
    k: Dims

    @property
    def B(self) -> int:
        return prod(size for _, size in self.b)

    @property
    def M(self) -> int:
        return prod(size for _, size in self.m)

    @property
    def N(self) -> int:
        return prod(size for _, size in self.n)

    @property
    def K(self) -> int:
        return prod(size for _, size in self.k)

    def to_dict(self) -> dict:
        return {role: [[name, size] for name, size in getattr(self, role)] for role in "bmnk"} | {
            "B": self.B, "M": self.M, "N": self.N, "K": self.K}


def conv_gemm_dims(shape, prop: str) -> GemmDims:
    """The table above for a :class:`~.conv_shape.ConvShape`."""
    def named(*keys):
        return tuple((key, getattr(shape, key)) for key in keys)

    group = (("g", shape.g),)
    ic, oc = (("ic", shape.ic // shape.g),), (("oc", shape.oc // shape.g),)
    src, dst, wei = named("mb", "id", "ih", "iw"), named("mb", "od", "oh", "ow"), named("kd", "kh", "kw")
    if prop == "fwd":
        return GemmDims(b=group, m=dst, n=oc, k=ic + wei)
    if prop == "bwd_d":
        return GemmDims(b=group, m=src, n=ic, k=oc + wei)
    if prop == "bwd_w":
        return GemmDims(b=group, m=ic + wei, n=oc, k=dst)
    raise ValueError(f"unknown propagation kind {prop!r}")


def gemm_gemm_dims(shape) -> GemmDims:
    """The table above for a :class:`~.gemm_shape.GemmShape`."""
    batch = tuple((f"b{i}", size) for i, size in enumerate(shape.batch))
    return GemmDims(b=batch, m=(("m", shape.m),), n=(("n", shape.n),), k=(("k", shape.k),))
