"""Float64 references for whole problems: GEMM, convolutions and the post-op chain.

:func:`reference` maps a :class:`~kdd.core.problem.Problem` and its logical
input tensors (``Problem.tensor_dims`` order, float64) to its logical outputs:

======  ===============================  ================================
prop    inputs                           outputs
======  ===============================  ================================
fwd     src, wei, [dst for sum],         dst
        [bias], [binary<k>]
bwd_d   dst (diff_dst), wei              src (diff_src)
bwd_w   src, dst (diff_dst)              wei (diff_wei), [bias (diff_bias)]
======  ===============================  ================================

Post-ops apply in the order written to the float64 accumulator, as the
problem module defines them: ``bias`` adds a per-channel vector (conv: output
channels, GEMM: columns), ``scale`` multiplies, eltwise applies
:mod:`.eltwise_math`, ``binary<k>`` (``k`` the post-op's index in the chain)
combines with a ``per_tensor``/``per_oc``/``common`` operand, ``sum`` adds
``scale * dst`` (the destination's previous contents). Integer outputs are
rounded to nearest even and saturated to their type, after post-ops computed
step by step in the kernel's post-op precision (f32, or f64 for an f64
accumulator: a value near a .5 boundary must round as the kernel's does);
float outputs stay float64 (the comparison's tolerance covers their rounding)
except where the value is past the type's range: there it is the infinity
that rounding to the type gives (an ``exp`` of 91 is inf in f32 and bf16).
"""
from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from kdd.core.ir.types import Type
from kdd.core.problem import Problem
from kdd.core.problem.decompression import SCALES, ZERO_POINTS
from kdd.core.problem.post_ops import Bias, Binary, Eltwise, Scale, Sum, post_op_arg_name

from .eltwise_math import apply_eltwise
from .values import round_float
from .reference_conv import conv_bwd_bias, conv_bwd_d, conv_bwd_w, conv_fwd

_BINARY = {
    "add": np.add, "mul": np.multiply, "sub": np.subtract, "div": np.divide,
    "max": np.maximum, "min": np.minimum,
}


def gemm(src: np.ndarray, wei: np.ndarray) -> np.ndarray:
    """``dst[b.., m, n] = sum_k src[b.., m, k] * wei[b.., k, n]`` in float64."""
    return np.matmul(np.asarray(src, dtype=np.float64), np.asarray(wei, dtype=np.float64))


def decompressed_weights(problem: Problem, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    """The GEMM weights ``(wei - zp) * scale`` per group, exactly in float64 (:mod:`kdd.core.problem.decompression`;
    the plain weights when the problem has no decompression)."""
    wei = np.asarray(inputs["wei"], dtype=np.float64)
    d = problem.decompression
    if d is None:
        return wei

    def spread(x: np.ndarray) -> np.ndarray:  # [.., K / gk, N / gn] over every weight of its group
        if problem.op == "conv":  # [1, G * OC/G] per output channel over ([g,] oc, ic, k..)
            lead = 2 if problem.shape.g > 1 else 1
            return np.asarray(x, dtype=np.float64).reshape(wei.shape[:lead] + (1,) * (wei.ndim - lead))
        if d.per_oc:
            return np.asarray(x, dtype=np.float64)
        x = np.repeat(np.repeat(np.asarray(x, dtype=np.float64), d.group_k, axis=-2), d.group_n, axis=-1)
        return x[..., :wei.shape[-2], :wei.shape[-1]]
    zp = spread(inputs[ZERO_POINTS]) if d.zero_point is not None else 0.0
    return (wei - zp) * spread(inputs[SCALES])


def _channel_vector(x: np.ndarray, ndim: int, channel_axis: int) -> np.ndarray:
    """A per-channel vector shaped to broadcast along ``channel_axis`` of an ``ndim``-dim tensor."""
    shape = [1] * ndim
    shape[channel_axis] = -1
    return np.asarray(x, dtype=np.float64).reshape(shape)


def apply_post_ops(acc: np.ndarray, post_ops, inputs: Mapping[str, np.ndarray], channel_axis: int,
                   precision: Type | None = None) -> np.ndarray:
    """The post-op chain applied in order to ``acc`` (float64); see the module docstring.

    With ``precision`` (a float type), every step's result is rounded to it,
    as a kernel computing its post-ops in that type rounds them.
    """
    def rounded(x):
        return x if precision is None else round_float(x, precision).astype(np.float64)

    def constant(x: float) -> float:
        return float(rounded(np.float64(x)))

    out = rounded(np.asarray(acc, dtype=np.float64))
    for k, op in enumerate(post_ops):
        if isinstance(op, Eltwise):
            with np.errstate(all="ignore"):
                out = apply_eltwise(op.alg, out, op.alpha, op.beta)
        elif isinstance(op, Scale):
            out = out * constant(op.value)
        elif isinstance(op, Bias):
            out = out + _channel_vector(inputs[post_op_arg_name(post_ops, k)], out.ndim, channel_axis)
        elif isinstance(op, Sum):
            prev = np.asarray(inputs["dst"], dtype=np.float64)
            out = out + (prev if op.scale == 1.0 else rounded(constant(op.scale) * prev))
        elif isinstance(op, Binary):
            rhs = np.asarray(inputs[post_op_arg_name(post_ops, k)], dtype=np.float64)
            if op.policy == "per_oc":
                rhs = _channel_vector(rhs, out.ndim, channel_axis)
            elif op.policy == "common":
                rhs = rhs.reshape(-1)[0]
            with np.errstate(all="ignore"):
                out = _BINARY[op.alg](out, rhs)
        else:
            raise ValueError(f"unknown post-op {op!r}")
        out = rounded(out)
    return out


def round_to_type(x: np.ndarray, t: Type) -> np.ndarray:
    """Integer types: round to nearest even and saturate (as oneDNN stores); floats unchanged but where
    rounding to ``t`` overflows, to the infinity of that sign (the tolerance covers in-range rounding,
    not a finite value the type cannot hold)."""
    if not t.is_int:
        with np.errstate(over="ignore"):
            overflows = np.isinf(round_float(x, t)) & np.isfinite(x)
        return np.where(overflows, np.copysign(np.inf, x), x) if overflows.any() else x
    lo, hi = t.scalar.int_range()
    return np.clip(np.rint(x), lo, hi)


# The relative perturbation of the accumulator by which :func:`post_op_amplification` measures the chain.
_PERTURBATION = 2.0 ** -20


def _accumulator(problem: Problem, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    if problem.op == "gemm":
        return gemm(inputs["src"], decompressed_weights(problem, inputs))
    return conv_fwd(inputs["src"], decompressed_weights(problem, inputs), problem.shape)


class References(dict):
    """:func:`reference`'s outputs by name, keeping (forward passes) the float64 accumulator they came from,
    so :func:`post_op_amplification` measures the chain on it instead of multiplying again."""

    accumulator: np.ndarray | None = None


def post_op_amplification(problem: Problem, inputs: Mapping[str, np.ndarray],
                          accumulator: np.ndarray | None = None) -> float:
    """How many times the post-op chain magnifies a relative error of the accumulator, as measured on these
    inputs: the float64 outputs' relative change (in norm, over the elements inside the destination type's
    range) when every accumulator element moves by 2^-20 of itself (random signs, fixed seed), divided by
    2^-20 (``accumulator``: the one :func:`reference` kept, else computed). An ``exp`` of values near 20
    magnifies about 20 times, ``exp`` of ``exp`` far more, a ``sum`` that cancels likewise; the
    check's float tolerance is for an accumulation and scales by this where it exceeds 1 (a kernel that
    computes the chain in f32 correctly cannot do better). 1.0 below 2, for a problem without post-ops or
    that is no forward pass."""
    if not problem.post_ops or problem.prop != "fwd":
        return 1.0
    acc = accumulator if accumulator is not None else _accumulator(problem, inputs)
    signs = np.random.default_rng(0x5EED).choice((-1.0, 1.0), size=acc.shape)
    channel = -1 if problem.op == "gemm" else 1
    with np.errstate(all="ignore"):
        out = round_to_type(apply_post_ops(acc, problem.post_ops, inputs, channel), problem.types.dst)
        moved = round_to_type(apply_post_ops(acc * (1.0 + _PERTURBATION * signs), problem.post_ops, inputs, channel),
                              problem.types.dst)
        finite = np.isfinite(out) & np.isfinite(moved)     # past the type's range both are inf, compared exactly
        norm = float(np.linalg.norm(out[finite]))
        change = float(np.linalg.norm((moved - out)[finite]))
    if norm == 0.0 or not math.isfinite(change / norm):
        return 1.0
    amplification = change / norm / _PERTURBATION
    # under twice is within the tolerances' margin (about 8 units of the final rounding), and keeps a
    # linear chain (a scale that rounds the perturbation itself) at its type's tolerance exactly
    return amplification if amplification >= 2.0 else 1.0


def reference(problem: Problem, inputs: Mapping[str, np.ndarray]) -> References:
    """The logical float64 outputs of ``problem`` for ``inputs`` (see the module docstring), with the
    accumulator of a forward pass (:class:`References`)."""
    types = problem.types
    # An integer destination rounds to whole numbers, so a float64 value on the other side of a .5
    # boundary than the kernel's would move an element by one: round each post-op step as the kernel does.
    precision = types.post_op if types.dst.is_int and problem.post_ops else None
    if problem.op == "gemm" or problem.prop == "fwd":
        acc = _accumulator(problem, inputs)
        dst = apply_post_ops(acc, problem.post_ops, inputs, -1 if problem.op == "gemm" else 1, precision)
        out = References(dst=round_to_type(dst, types.dst))
        out.accumulator = acc
        return out
    shape = problem.shape
    if problem.prop == "bwd_d":
        return References(src=round_to_type(conv_bwd_d(inputs["dst"], inputs["wei"], shape), types.src))
    out = References(wei=round_to_type(conv_bwd_w(inputs["src"], inputs["dst"], shape), types.wei))
    for op in problem.post_ops:
        if isinstance(op, Bias):
            out["bias"] = round_to_type(conv_bwd_bias(inputs["dst"], shape), op.dt)
    return out
