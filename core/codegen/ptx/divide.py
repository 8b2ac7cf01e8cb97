"""Division of a bounded non-negative integer by a constant as a multiply-high and a shift.

ptxas lowers ``div.u32`` by an immediate through a float reciprocal and a correction (about a dozen
SASS instructions); the convolutions' im2col indices (``k / 9``, ``k / 3 % 3``) paid that every
main-loop iteration. :func:`magic` finds ``(m, s)`` with ``x // d == (x * m) >> (32 + s)`` for every
``0 <= x <= hi``: with ``k = 32 + s`` and ``m = ceil(2^k / d) = (2^k + e) / d``,
``x * m / 2^k = x / d + x * e / (d * 2^k)``, whose floor is ``x // d`` when ``x * e < 2^k`` (the
fraction of ``x / d`` is at most ``(d - 1) / d``).
"""
from __future__ import annotations


def magic(d: int, hi: int) -> tuple[int, int] | None:
    """``(m, s)``, ``m < 2^32``, such that ``x // d == (x * m) >> (32 + s)`` for ``0 <= x <= hi``;
    None where no 32-bit multiplier does (``hi`` of 32 bits and an awkward ``d``)."""
    if d <= 0 or hi < 0 or hi >= 1 << 32:
        raise ValueError(f"magic: divisor {d} and bound {hi}")
    for s in range(32):
        k = 32 + s
        m = -(-(1 << k) // d)
        if m >= 1 << 32:
            return None
        if hi * (m * d - (1 << k)) < 1 << k:
            return m, s
    return None
