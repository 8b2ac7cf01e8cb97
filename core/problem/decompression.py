"""Weight decompression of a GEMM or a forward convolution: integer weights with grouped scales and zero
points, multiplied in a float type, as benchdnn writes it.

``[problem]`` takes the values of benchdnn's options::

    scales = "wei:per_ocic:f16:128x1"       # --attr-scales: one f16 scale per 128 K x 1 N of the weights
    zero_points = "wei:per_ocic:u8:128x1"   # --attr-zero-points: one u8 zero point per group (optional)
    fpmath = "f16:true"                     # --attr-fpmath: multiply in f16, integer weights included

The weights' value is ``(wei[k, n] - zp[k / gk, n / gn]) * scale[k / gk, n / gn]`` (groups ``gk x gn``,
K first as benchdnn's matmul writes them; a group past the edge is cut short), and the GEMM multiplies the
source by it in the ``fpmath`` type. Scales and zero points are row-major ``[ceil(K / gk), ceil(N /
gn)]`` tensors, N contiguous (oneDNN's layout for grouped weight scales), shared by a batched GEMM's
batch (``per_ocic`` masks K and N only, as benchdnn's). Weights and zero points may be 4-bit (``u4``,
``s4``: two a byte, low nibble first, packed along the tensor's innermost dim).

``wei:per_oc:TYPE`` (benchdnn's per-output-channel mask, no groups) is one scale (zero point) per N column
over the whole reduction: a ``[1, N]`` tensor. A convolution's weights take this form, N its output
channels over every group (``g * OC/g + oc``), so ``(wei[g, oc, ic, k..] - zp[0, c]) * scale[0, c]``.
"""
from __future__ import annotations

from dataclasses import dataclass

from kdd.core.ir.types import Type

from .data_types import parse_element_type
from .errors import ProblemError

SCALES, ZERO_POINTS = "wei_scales", "wei_zero_points"
_POLICY = "per_ocic"
PER_OC = "per_oc"


@dataclass(frozen=True)
class Decompression:
    """How a GEMM's integer weights become ``math``-typed values: ``scale`` (and ``zero_point``, None when
    there is none) per group of ``group_k`` x ``group_n`` weights."""

    scale: Type
    zero_point: Type | None
    group_k: int
    group_n: int
    math: Type

    @property
    def per_oc(self) -> bool:
        """One scale per output channel (N column) over the whole reduction: benchdnn's ``per_oc``
        (``group_k`` 0), the form a convolution's weights take."""
        return self.group_k == 0

    def groups(self, k: int, n: int) -> tuple[int, int]:
        """Rows and columns of the scale (and zero-point) tensor of a ``k x n`` weight matrix."""
        return 1 if self.per_oc else -(-k // self.group_k), -(-n // self.group_n)

    def canonical(self) -> dict[str, str]:
        """The ``[problem]`` values that say this (benchdnn's option values)."""
        def value(t: Type) -> str:
            return f"wei:{PER_OC}:{t}" if self.per_oc else f"wei:{_POLICY}:{t}:{self.group_k}x{self.group_n}"
        out = {"scales": value(self.scale), "fpmath": f"{self.math}:true"}
        if self.zero_point is not None:
            out["zero_points"] = value(self.zero_point)
        return out


def parse_quantization(text: str, what: str) -> tuple[Type, int, int]:
    """``wei:per_ocic:TYPE:GKxGN`` or ``wei:per_oc:TYPE`` (a value of ``--attr-scales`` or
    ``--attr-zero-points``) as its type and groups (``per_oc``: ``0, 1``, the whole reduction per output
    channel); errors name the bad field and its span."""
    fields, pos, spans = text.split(":"), 0, []
    for f in fields:
        spans.append((pos, pos + len(f)))
        pos += len(f) + 1
    per_oc = len(fields) == 3 and fields[1].strip() == PER_OC
    if len(fields) != 4 and not per_oc:
        raise ProblemError(f"{what} {text!r} must be wei:{_POLICY}:TYPE:GKxGN (benchdnn's grouped weight "
                           f"{what}) or wei:{PER_OC}:TYPE", 0, len(text))
    arg, policy = fields[0].strip(), fields[1].strip()
    if arg != "wei":
        raise ProblemError(f"{what} of {arg!r}: kdd decompresses the weights only (wei)", *spans[0])
    if policy not in (_POLICY, PER_OC):
        raise ProblemError(f"{what} policy {policy!r}: kdd takes {_POLICY} (per K group and N column) or "
                           f"{PER_OC} (per output channel)", *spans[1])
    if policy == PER_OC and not per_oc:
        raise ProblemError(f"{what} {text!r}: {PER_OC} has no groups (wei:{PER_OC}:TYPE)", *spans[3])
    t = parse_element_type(fields[2], spans[2][0])
    if per_oc:
        return t, 0, 1
    groups = fields[3].strip()
    gk, x, gn = groups.partition("x")
    if not (x and gk.isdigit() and gn.isdigit() and int(gk) > 0 and int(gn) > 0):
        raise ProblemError(f"groups {groups!r} must be GKxGN, two positive integers (e.g. 128x1)", *spans[3])
    return t, int(gk), int(gn)


def parse_decompression(scales: str, zero_points: str | None, fpmath: str | None) -> Decompression:
    """The decompression the three ``[problem]`` values describe (``zero_points`` and ``fpmath`` may be
    absent: no zero points; ``fpmath`` is required and must apply to integers, else there is nothing to
    multiply in)."""
    scale, gk, gn = parse_quantization(scales, "scales")
    if not scale.is_float:
        raise ProblemError(f"scales of type {scale}: grouped weight scales are floating point", 0, len(scales))
    zp = None
    if zero_points is not None:
        zp, zk, zn = parse_quantization(zero_points, "zero points")
        if (zk, zn) != (gk, gn):
            raise ProblemError(f"zero-point groups {_groups(zk, zn)} differ from the scales' {_groups(gk, gn)} "
                               f"(kdd loads both per group)", 0, len(zero_points))
        if zp.is_float or zp.scalar.bits > 8:
            raise ProblemError(f"zero points of type {zp}: kdd takes u8, s8, u4 or s4", 0, len(zero_points))
        if zp.scalar.is_packed and gn != 1:
            raise ProblemError(f"4-bit zero points pair along N, so kdd takes them one per column (groups "
                               f"{gk}x1, not {gk}x{gn})", 0, len(zero_points))
    if fpmath is None:
        raise ProblemError("scales on integer weights need fpmath (e.g. 'f16:true'): the type the "
                           "decompressed weights are multiplied in", 0, len(scales))
    return Decompression(scale, zp, gk, gn, parse_fpmath(fpmath))


def _groups(gk: int, gn: int) -> str:
    return PER_OC if gk == 0 else f"{gk}x{gn}"


def parse_fpmath(text: str) -> Type:
    """The type of ``--attr-fpmath``'s ``TYPE:true`` (f16 or bf16, applied to integer weights)."""
    kind, _, applies = text.partition(":")
    math = parse_element_type(kind)
    if not math.is_float or math.size != 2:
        raise ProblemError(f"fpmath {kind!r}: kdd multiplies decompressed weights in f16 or bf16", 0, len(kind))
    if applies.strip() != "true":
        raise ProblemError(f"fpmath {text!r} does not apply to integer weights (write '{kind}:true')",
                           0, len(text))
    return math


__all__ = ["PER_OC", "SCALES", "ZERO_POINTS", "Decompression", "parse_decompression", "parse_fpmath", "parse_quantization"]
