"""Per-lane PTX for oneDNN's element-wise algorithms on one f32 value (:mod:`kdd.core.interp.eltwise_math`
defines them; ``alpha``/``beta`` as there).

Only IEEE-exact instructions (``.rn`` arithmetic, ``cvt``, integer and bit moves, ``min``/``max``,
``setp``/``selp``): their results are fully specified by the PTX ISA, so the PTX simulator computes
what the GPU does. ``ex2.approx`` would be faster but its error is not documented, so no simulator
could reproduce it. ``exp`` is therefore built here (:func:`exp_f32`), and ``elu``, ``swish``,
``logistic``, ``tanh`` and ``gelu_tanh`` use it.
"""
from __future__ import annotations

import math

from kdd.core.ir.types import Type

from ..errors import CodegenUnsupported
from .emitter import Emitter
from .values import imm_text

F32 = Type.parse("f32")
# exp of an argument past these is inf / rounds to 0 in f32; clamping keeps 2^n's exponent bits in range
CLAMP_LO, CLAMP_HI = -104.0, 89.0
# ln 2 split Cody-Waite style: LN2_HI has 16 significant bits, so n LN2_HI is an exact f32 for |n| < 2^8
LN2_HI, LN2_LO = 0.693145751953125, 1.4286068202862268e-06
# exp(r) = 1 + r q(r), q the Taylor series to r^6 / 7!: truncation error below 2^-27 on |r| <= ln2 / 2
Q = [1.0 / math.factorial(k + 1) for k in range(7)]
ONE, ZERO = imm_text(1.0, F32), imm_text(0.0, F32)
RULES = ("relu", "linear", "abs", "square", "sqrt", "exp", "elu", "swish", "logistic", "tanh", "gelu_tanh")


def _f(v: float) -> str:
    return imm_text(v, F32)


def exp_f32(em: Emitter, x: str, scale: float = 1.0, minus_one: bool = False) -> str:
    """The register of ``exp(scale x)`` (``exp(scale x) - 1`` if ``minus_one``) for f32 register ``x``,
    within a few ulp: ``scale x = n ln2 + r`` with ``n = round(scale x log2 e)`` (``scale x`` never
    rounded: ``r`` comes from one fma of it), ``exp(r)`` by a polynomial, times ``2^n`` made from
    exponent bits in two halves (each a normal number, so that the last multiply rounds once, also into
    the subnormals and to inf). NaN stays NaN."""
    lo, hi = sorted((CLAMP_LO / scale, CLAMP_HI / scale)) if scale else (CLAMP_LO, CLAMP_HI)
    c = em.calc("f", f"min.f32 {{}}, {em.calc('f', f'max.f32 {{}}, {x}, {_f(lo)}')}, {_f(hi)}")
    n = em.calc("r", f"cvt.rni.s32.f32 {{}}, {em.calc('f', f'mul.rn.f32 {{}}, {c}, {_f(scale / math.log(2))}')}")
    nf = em.calc("f", f"cvt.rn.f32.s32 {{}}, {n}")
    high = em.calc("f", f"mul.rn.f32 {{}}, {nf}, {_f(-LN2_HI)}")     # exact: 8 + 16 significant bits
    r = em.calc("f", f"fma.rn.f32 {{}}, {c}, {_f(scale)}, {high}")
    r = em.calc("f", f"fma.rn.f32 {{}}, {nf}, {_f(-LN2_LO)}, {r}")
    q = _f(Q[-1])
    for k in reversed(Q[:-1]):
        q = em.calc("f", f"fma.rn.f32 {{}}, {r}, {q}, {_f(k)}")
    y = em.calc("f", f"fma.rn.f32 {{}}, {r}, {q}, {ONE}")
    half = em.calc("r", f"shr.s32 {{}}, {n}, 1")
    for part in (half, em.calc("r", f"sub.s32 {{}}, {n}, {half}")):
        bits = em.calc("r", f"shl.b32 {{}}, {em.calc('r', f'add.s32 {{}}, {part}, 127')}, 23")
        y = em.calc("f", f"mul.rn.f32 {{}}, {y}, {em.calc('f', f'mov.b32 {{}}, {bits}')}")
    if minus_one:   # near 0 (n = 0) exp(x) - 1 cancels; r q is the same value without the cancellation
        small = em.calc("p", f"setp.eq.s32 {{}}, {n}, 0")
        y = em.calc("f", f"selp.f32 {{}}, {em.calc('f', f'mul.rn.f32 {{}}, {r}, {q}')}, "
                         f"{em.calc('f', f'add.rn.f32 {{}}, {y}, {_f(-1.0)}')}, {small}")
    nan = em.calc("p", f"setp.neu.f32 {{}}, {x}, {x}")     # the clamp's min/max dropped a NaN
    return em.calc("f", f"selp.f32 {{}}, {x}, {y}, {nan}")


def _over_one_plus_exp(em: Emitter, num: str, x: str, scale: float) -> str:
    """``num / (1 + exp(scale x))``, for ``scale x > 0`` as ``num e / (1 + e)`` with ``e = exp(-scale x)``:
    ``exp(scale x)`` would overflow to inf (and the result to 0) while the quotient is still a normal number."""
    e = exp_f32(em, em.calc("f", f"abs.f32 {{}}, {x}"), -abs(scale))
    positive = em.calc("p", f"setp.gt.f32 {{}}, {em.calc('f', f'mul.rn.f32 {{}}, {x}, {_f(scale)}')}, {ZERO}")
    top = em.calc("f", f"selp.f32 {{}}, {em.calc('f', f'mul.rn.f32 {{}}, {num}, {e}')}, {num}, {positive}")
    return em.calc("f", f"div.rn.f32 {{}}, {top}, {em.calc('f', f'add.rn.f32 {{}}, {e}, {ONE}')}")


def eltwise_f32(em: Emitter, alg: str, x: str, alpha: float, beta: float) -> str:
    """The register of ``alg(x)`` with parameters ``alpha``, ``beta`` for f32 register ``x``."""
    a, b = _f(alpha), _f(beta)
    if alg == "relu" and alpha == 0:
        return em.calc("f", f"max.f32 {{}}, {x}, {ZERO}")
    if alg in ("relu", "elu"):      # x if x > 0 else alpha x / alpha (exp(x) - 1)
        neg = exp_f32(em, x, minus_one=True) if alg == "elu" else x
        positive = em.calc("p", f"setp.gt.f32 {{}}, {x}, {ZERO}")
        return em.calc("f", f"selp.f32 {{}}, {x}, {em.calc('f', f'mul.rn.f32 {{}}, {neg}, {a}')}, {positive}")
    if alg == "linear":
        return em.calc("f", f"fma.rn.f32 {{}}, {x}, {a}, {b}")
    if alg == "abs":
        return em.calc("f", f"abs.f32 {{}}, {x}")
    if alg == "square":
        return em.calc("f", f"mul.rn.f32 {{}}, {x}, {x}")
    if alg == "sqrt":
        return em.calc("f", f"sqrt.rn.f32 {{}}, {x}")
    if alg == "exp":
        return exp_f32(em, x)
    if alg == "swish":              # x / (1 + exp(-alpha x))
        return _over_one_plus_exp(em, x, x, -alpha)
    if alg == "logistic":           # 1 / (1 + exp(-x))
        return _over_one_plus_exp(em, ONE, x, -1.0)
    if alg == "tanh":               # -tanh |x| = m / (m + 2), m = exp(-2 |x|) - 1 in (-1, 0]: no overflow
        m = exp_f32(em, em.calc("f", f"abs.f32 {{}}, {x}"), -2.0, minus_one=True)
        t = em.calc("f", f"div.rn.f32 {{}}, {m}, {em.calc('f', f'add.rn.f32 {{}}, {m}, {_f(2.0)}')}")
        negative = em.calc("p", f"setp.lt.f32 {{}}, {x}, {ZERO}")
        return em.calc("f", f"selp.f32 {{}}, {t}, {em.calc('f', f'neg.f32 {{}}, {t}')}, {negative}")
    if alg == "gelu_tanh":          # 0.5 x (1 + tanh u) = x / (1 + exp(-2 u)), u = k x (1 + 0.044715 x^2)
        k = math.sqrt(2.0 / math.pi)
        w = em.calc("f", f"fma.rn.f32 {{}}, {em.calc('f', f'mul.rn.f32 {{}}, {x}, {x}')}, {_f(0.044715 * k)}, {_f(k)}")
        return _over_one_plus_exp(em, x, em.calc("f", f"mul.rn.f32 {{}}, {x}, {w}"), -2.0)
    raise CodegenUnsupported(f"eltwise.{alg} has no PTX rule yet ({', '.join(RULES)})")
