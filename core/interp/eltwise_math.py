"""oneDNN's element-wise algorithms as float64 numpy functions.

One table, used by the ``eltwise`` intrinsic (whose result is then rounded to
f32) and by the float64 references. The formulas are oneDNN's definitions
(``dev_guide_eltwise``), with ``alpha``/``beta`` as there:

=========  ==================================================
relu       ``x`` if ``x > 0`` else ``alpha * x``
gelu_tanh  ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``
gelu_erf   ``0.5 x (1 + erf(x / sqrt 2))``
swish      ``x / (1 + exp(-alpha x))``
tanh       ``tanh x``
logistic   ``1 / (1 + exp(-x))``
elu        ``x`` if ``x > 0`` else ``alpha (exp(x) - 1)``
linear     ``alpha x + beta``
abs        ``|x|``
square     ``x^2``
sqrt       ``sqrt x``
exp        ``exp x``
=========  ==================================================
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

_erf = np.frompyfunc(math.erf, 1, 1)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, element-wise (numpy has none)."""
    return _erf(np.asarray(x, dtype=np.float64)).astype(np.float64)


def _logistic(x):
    # exp of a large positive argument overflows to inf and gives the right limit 0.
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


ELTWISE: dict[str, Callable[[np.ndarray, float, float], np.ndarray]] = {
    "relu": lambda x, a, b: np.where(x > 0, x, a * x),
    "gelu_tanh": lambda x, a, b: 0.5 * x * (1.0 + np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x ** 3))),
    "gelu_erf": lambda x, a, b: 0.5 * x * (1.0 + erf(x / math.sqrt(2.0))),
    "swish": lambda x, a, b: x * _logistic(a * x),
    "tanh": lambda x, a, b: np.tanh(x),
    "logistic": lambda x, a, b: _logistic(x),
    "elu": lambda x, a, b: np.where(x > 0, x, a * np.expm1(np.minimum(x, 0.0))),
    "linear": lambda x, a, b: a * x + b,
    "abs": lambda x, a, b: np.abs(x),
    "square": lambda x, a, b: x * x,
    "sqrt": lambda x, a, b: np.sqrt(x),
    "exp": lambda x, a, b: np.exp(x),
}


def apply_eltwise(alg: str, x: np.ndarray, alpha: float = 0.0, beta: float = 0.0) -> np.ndarray:
    """``alg`` applied to ``x`` in float64."""
    try:
        fn = ELTWISE[alg]
    except KeyError:
        raise ValueError(f"unknown eltwise algorithm '{alg}' (known: {', '.join(ELTWISE)})") from None
    return fn(np.asarray(x, dtype=np.float64), float(alpha), float(beta))
