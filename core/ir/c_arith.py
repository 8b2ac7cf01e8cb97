"""C's integer division and remainder, for Python ints and for numpy integer arrays.

C truncates the quotient toward zero and gives the remainder the dividend's
sign; Python's ``//`` and ``%`` floor instead. The IR defines division and
remainder by zero as 0 (``docs/ir-semantics.md``). The evaluator, the
simplifier, the builder's constant folding, view tables and the interpreter
all divide through these functions, so they cannot disagree.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where arrays are made, so an Xe compile does not load it
    import numpy as np


def c_div(a: int, b: int) -> int:
    """``a / b`` truncated toward zero; 0 when ``b`` is 0."""
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def c_mod(a: int, b: int) -> int:
    """``a % b`` with the sign of ``a``; 0 when ``b`` is 0."""
    if b == 0:
        return 0
    return a - c_div(a, b) * b


def c_div_array(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise :func:`c_div` of integer arrays (exact for every int64)."""
    import numpy as np
    zero = b == 0
    safe = np.where(zero, np.ones_like(b), b)
    q = (a - np.fmod(a, safe)) // safe  # exact: the remainder is removed first
    return np.where(zero, np.zeros_like(q), q)


def c_mod_array(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise :func:`c_mod` of integer arrays."""
    import numpy as np
    zero = b == 0
    r = np.fmod(a, np.where(zero, np.ones_like(b), b))
    return np.where(zero, np.zeros_like(r), r)


def div_up_array(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise ``c_div(a + b - 1, b)``, the IR's ``div_up``."""
    import numpy as np
    return c_div_array(a + b - np.ones_like(b), b)
