"""Post-operations in oneDNN/benchdnn attribute syntax, applied in the order written.

A chain is ``+``-separated, as benchdnn's ``--attr-post-ops``: ``bias+relu``,
``sum:0.5+gelu_tanh``, ``scale:0.25+add:f32:per_oc``. Each element:

* eltwise ``ALG[:ALPHA[:BETA]]`` (oneDNN semantics of alpha/beta):
  ``relu`` (alpha = negative slope, default 0), ``gelu_tanh``, ``gelu_erf``,
  ``swish`` (x*sigmoid(alpha*x), default alpha 1), ``tanh``, ``logistic``
  (alias ``sigmoid``), ``elu`` (default alpha 1), ``linear`` (alpha*x + beta,
  defaults 1 and 0), ``abs``, ``exp``, ``square``, ``sqrt``.
* binary ``ALG:DT[:POLICY]`` with ALG one of ``add mul sub div max min``, DT the
  second operand's type and POLICY its broadcast: ``per_tensor`` (a full
  dst-shaped tensor, the default), ``per_oc`` (one value per output channel /
  GEMM column) or ``common`` (one value).
* ``sum[:SCALE]``: adds SCALE times the previous destination (default 1).
* ``bias[:DT]``: adds a per-output-channel (GEMM: per-column) bias of type DT
  (default f32). oneDNN passes bias as a primitive argument; kdd lists it here
  so that the chain says where it is applied.
* ``scale:VALUE``: multiplies by a common output scale (oneDNN's
  ``--attr-scales=dst:common:VALUE``); the value is required.

Every element is applied, in order, to the accumulated result before it is
converted to the destination type. Printing omits trailing default arguments.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

from kdd.core.ir.types import Type, f32

from .data_types import parse_element_type
from .errors import ProblemError

# name -> defaults of the parameters it takes (alpha, beta), in order.
ELTWISE_ALGS: dict[str, tuple[float, ...]] = {
    "relu": (0.0,), "gelu_tanh": (), "gelu_erf": (), "swish": (1.0,), "tanh": (),
    "logistic": (), "elu": (1.0,), "linear": (1.0, 0.0), "abs": (), "exp": (),
    "square": (), "sqrt": (),
}
ELTWISE_ALIASES = {"sigmoid": "logistic"}
BINARY_ALGS = ("add", "mul", "sub", "div", "max", "min")
BINARY_POLICIES = ("per_tensor", "per_oc", "common")


def _fmt(x: float) -> str:
    """Shortest text that parses back to ``x`` (``2`` rather than ``2.0``)."""
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else repr(x)


@dataclass(frozen=True)
class Eltwise:
    """An element-wise function; ``alpha``/``beta`` default per algorithm."""

    alg: str
    alpha: float | None = None
    beta: float | None = None

    def __post_init__(self):
        if self.alg not in ELTWISE_ALGS:
            raise ValueError(f"unknown eltwise algorithm {self.alg!r}")
        defaults = ELTWISE_ALGS[self.alg]
        for index, field in enumerate(("alpha", "beta")):
            value = getattr(self, field)
            if index < len(defaults):
                object.__setattr__(self, field, defaults[index] if value is None else float(value))
            elif value not in (None, 0.0):
                raise ValueError(f"{self.alg} takes no {field}")
            else:  # unused parameters read as 0, as in oneDNN
                object.__setattr__(self, field, 0.0)

    def canonical(self) -> str:
        defaults = ELTWISE_ALGS[self.alg]
        params = [self.alpha, self.beta][:len(defaults)]
        while params and params[-1] == defaults[len(params) - 1]:
            params.pop()
        return ":".join([self.alg, *map(_fmt, params)])


@dataclass(frozen=True)
class Binary:
    """``dst = alg(dst, src1)`` with ``src1`` of type ``dt`` broadcast by ``policy``."""

    alg: str
    dt: Type
    policy: str = "per_tensor"

    def __post_init__(self):
        if self.alg not in BINARY_ALGS:
            raise ValueError(f"unknown binary algorithm {self.alg!r}")
        if self.policy not in BINARY_POLICIES:
            raise ValueError(f"unknown binary policy {self.policy!r}")

    def canonical(self) -> str:
        policy = "" if self.policy == "per_tensor" else f":{self.policy}"
        return f"{self.alg}:{self.dt}{policy}"


@dataclass(frozen=True)
class Sum:
    """``dst = scale * old_dst + result``."""

    scale: float = 1.0

    def canonical(self) -> str:
        return "sum" if self.scale == 1.0 else f"sum:{_fmt(self.scale)}"


@dataclass(frozen=True)
class Bias:
    """Adds a bias vector of type ``dt`` along output channels (GEMM: N)."""

    dt: Type = f32

    def canonical(self) -> str:
        return "bias" if self.dt == f32 else f"bias:{self.dt}"


@dataclass(frozen=True)
class Scale:
    """Multiplies by one common output scale."""

    value: float

    def canonical(self) -> str:
        return f"scale:{_fmt(self.value)}"


PostOp = Union[Eltwise, Binary, Sum, Bias, Scale]
POST_OP_TYPES = (Eltwise, Binary, Sum, Bias, Scale)


def format_post_ops(ops) -> str:
    """The ``+``-joined canonical chain (empty for no post-ops)."""
    return "+".join(op.canonical() for op in ops)


def parse_post_ops(text: str) -> tuple[PostOp, ...]:
    """Parse a ``+``-separated chain; an empty string is no post-ops."""
    if not text.strip():
        return ()
    ops, pos = [], 0
    for piece in text.split("+"):
        try:
            ops.append(parse_post_op(piece))
        except ProblemError as e:
            raise e.shifted(pos) from None
        pos += len(piece) + 1
    return tuple(ops)


def parse_post_op(text: str) -> PostOp:
    """Parse one post-op element; spans in errors are offsets into ``text``."""
    args, pos = [], 0
    for piece in text.split(":"):
        args.append((piece.strip(), pos + len(piece) - len(piece.lstrip())))
        pos += len(piece) + 1
    (kind, kind_at), rest = args[0], args[1:]
    if not kind:
        raise ProblemError(f"empty post-op in {text!r}", 0, len(text))

    def too_many(limit: int):
        if len(rest) > limit:
            extra, at = rest[limit]
            raise ProblemError(f"{kind} takes at most {limit} argument(s); unexpected {extra!r}",
                               at, len(text.rstrip()))

    kind = ELTWISE_ALIASES.get(kind, kind)
    if kind in ELTWISE_ALGS:
        too_many(len(ELTWISE_ALGS[kind]))
        return Eltwise(kind, *(_number(a, at) for a, at in rest))
    if kind in BINARY_ALGS:
        if not rest:
            raise ProblemError(f"{kind!r} needs the second operand's data type, e.g. {kind}:f32",
                               kind_at, kind_at + len(kind))
        too_many(2)
        policy = "per_tensor"
        if len(rest) == 2:
            policy, at = rest[1]
            if policy not in BINARY_POLICIES:
                raise ProblemError(f"unknown broadcast policy {policy!r} "
                                   f"(known: {', '.join(BINARY_POLICIES)})", at, at + len(policy))
        return Binary(kind, parse_element_type(*rest[0]), policy)
    if kind == "sum":
        too_many(1)
        return Sum(*(_number(a, at) for a, at in rest))
    if kind == "bias":
        too_many(1)
        return Bias(*(parse_element_type(a, at) for a, at in rest))
    if kind == "scale":
        if not rest:
            raise ProblemError("'scale' needs a value, e.g. scale:0.5", kind_at, kind_at + len(kind))
        too_many(1)
        return Scale(_number(*rest[0]))
    known = " ".join([*ELTWISE_ALGS, *ELTWISE_ALIASES, *BINARY_ALGS, "sum", "bias", "scale"])
    raise ProblemError(f"unknown post-op {kind!r} (known: {known})", kind_at, kind_at + len(kind))


def _number(arg: str, at: int) -> float:
    try:
        value = float(arg)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ProblemError(f"expected a finite number, got {arg!r}", at, at + max(1, len(arg)))
    return value


def post_op_arg_name(post_ops, k: int) -> str | None:
    """The kernel argument post-op ``k`` of the chain ``post_ops`` reads, if any; unique in the chain.

    ``bias`` for the chain's only bias (``bias<k>`` when there are several),
    ``binary<k>``, ``dst`` for sum (the destination's previous contents).
    """
    op = post_ops[k]
    if isinstance(op, Bias):
        return "bias" if sum(isinstance(o, Bias) for o in post_ops) == 1 else f"bias{k}"
    if isinstance(op, Binary):
        return f"binary{k}"
    if isinstance(op, Sum):
        return "dst"
    return None
