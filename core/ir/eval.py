"""Exact evaluation of IR expressions under an environment.

Integer semantics are C's on fixed-width two's-complement types: ``/``
truncates toward zero, ``%`` takes the dividend's sign, results wrap around to
the result type's width, mixed operands are first converted to the common
type (``common_type``). Deviations, chosen so that evaluation is total (the
simplifier's property tests rely on it): division or modulus by zero gives 0,
and shift amounts are taken modulo the bit width, as the hardware does.
``div_up(a, b)`` is ``(a + b - 1) / b``, oneDNN's ``utils::div_up``.

Floats are rounded to their type after each operation (bf16 by truncating the
f32 mantissa to 8 bits with round-to-nearest-even). Vectors are tuples.
Evaluation is iterative, so expressions of any depth are fine.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Mapping

from .c_arith import c_div, c_mod
from .expr import (Binary, BoolImm, Broadcast, Cast, Expr, FloatImm, IntImm, Load, Op, Ramp,
                   Shuffle, Ternary, Unary, Var, common_type, value_operands, wrap_int)
from .types import Scalar, Type
from .visitor import post_order


class EvalError(ValueError):
    """An expression could not be evaluated (unbound variable, unknown buffer)."""


def round_float(value: float, t: Type) -> float:
    """``value`` rounded to the precision of float type ``t``."""
    import numpy as np
    if t.scalar is Scalar.F64:
        return float(value)
    if t.scalar is Scalar.F32:
        return float(np.float32(value))
    if t.scalar is Scalar.F16:
        return float(np.float16(value))
    bits = np.array([value], dtype=np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000  # round to nearest even
    if math.isnan(value):
        return value
    return float(rounded.astype(np.uint32).view(np.float32)[0])


def convert(value: Any, src: Type, dst: Type, saturate: bool = False) -> Any:
    """A scalar value of type ``src`` converted to ``dst``."""
    if dst.is_bool:
        return bool(value)
    if dst.is_float:
        return round_float(float(value), dst)
    if src.is_float:
        if math.isnan(value):
            return 0
        if math.isinf(value):
            lo, hi = dst.scalar.int_range()
            return hi if value > 0 else lo
        value = int(value)  # truncation toward zero
    value = int(value)
    if saturate:
        lo, hi = dst.scalar.int_range()
        return min(max(value, lo), hi)
    return wrap_int(value, dst)


def _int_binary(op: Op, a: int, b: int, t: Type) -> int:
    bits = t.scalar.bits
    if op is Op.ADD:
        r = a + b
    elif op is Op.SUB:
        r = a - b
    elif op is Op.MUL:
        r = a * b
    elif op is Op.DIV:
        r = c_div(a, b)
    elif op is Op.MOD:
        r = c_mod(a, b)
    elif op is Op.DIV_UP:
        r = c_div(wrap_int(a + b - 1, t), b)
    elif op is Op.MIN:
        r = min(a, b)
    elif op is Op.MAX:
        r = max(a, b)
    elif op is Op.SHL:
        r = a << (b % bits)
    elif op is Op.SHR:
        r = a >> (b % bits)  # python >> on a wrapped value: arithmetic for signed, logical for unsigned
    elif op is Op.BIT_AND:
        r = a & b
    elif op is Op.BIT_OR:
        r = a | b
    elif op is Op.BIT_XOR:
        r = a ^ b
    else:
        raise EvalError(f"unknown integer operator {op.name}")
    return wrap_int(r, t)


def _float_binary(op: Op, a: float, b: float, t: Type) -> float:
    if op is Op.ADD:
        r = a + b
    elif op is Op.SUB:
        r = a - b
    elif op is Op.MUL:
        r = a * b
    elif op is Op.DIV:
        r = a / b if b != 0 else (math.copysign(math.inf, a) * math.copysign(1, b) if a != 0 else math.nan)
    elif op is Op.MIN:
        r = min(a, b)
    elif op is Op.MAX:
        r = max(a, b)
    else:
        raise EvalError(f"'{op.symbol}' is not defined on floats")
    return round_float(r, t)


_COMPARE: dict[Op, Callable[[Any, Any], bool]] = {
    Op.EQ: lambda a, b: a == b, Op.NE: lambda a, b: a != b,
    Op.LT: lambda a, b: a < b, Op.LE: lambda a, b: a <= b,
    Op.GT: lambda a, b: a > b, Op.GE: lambda a, b: a >= b,
}


def _lanewise(fn, *vals):
    """Apply a scalar function lane by lane when any operand is a vector (tuple)."""
    for v in vals:
        if isinstance(v, tuple):
            break
    else:  # scalars (the simplifier's folding: the common case)
        return fn(*vals)
    n = max((len(v) for v in vals if isinstance(v, tuple)), default=0)
    if not n:
        return fn(*vals)
    return tuple(fn(*(v[i] if isinstance(v, tuple) else v for v in vals)) for i in range(n))


def _scalar_type(t: Type) -> Type:
    return t.base


def _binary(e: Binary, a: Any, b: Any) -> Any:
    op = e.op
    if op is Op.AND:
        return _lanewise(lambda x, y: bool(x and y), a, b)
    if op is Op.OR:
        return _lanewise(lambda x, y: bool(x or y), a, b)
    ct = _scalar_type(common_type(e.a.type, e.b.type))
    at, bt = e.a.type.base, e.b.type.base
    if op.is_compare:
        return _lanewise(lambda x, y: _COMPARE[op](convert(x, at, ct), convert(y, bt, ct)), a, b)
    rt = e.type.base
    if op in (Op.SHL, Op.SHR):
        return _lanewise(lambda x, y: _int_binary(op, convert(x, at, rt), int(y), rt), a, b)
    if rt.is_float:
        return _lanewise(lambda x, y: _float_binary(op, convert(x, at, rt), convert(y, bt, rt), rt), a, b)
    return _lanewise(lambda x, y: _int_binary(op, convert(x, at, rt), convert(y, bt, rt), rt), a, b)


def _unary(e: Unary, a: Any) -> Any:
    t = e.type.base
    if e.op is Op.NOT:
        return _lanewise(lambda x: not x, a)
    if e.op is Op.BIT_NOT:
        return _lanewise(lambda x: wrap_int(~x, t), a)
    if t.is_float:
        return _lanewise(lambda x: -x, a)
    return _lanewise(lambda x: wrap_int(-x, t), a)


def _ternary(e: Ternary, a: Any, b: Any, c: Any) -> Any:
    t = e.type.base
    if e.op is Op.IIF:
        return _lanewise(lambda x, y, z: convert(y if x else z, e.b.type.base if x else e.c.type.base, t), a, b, c)
    conv = lambda x, src: convert(x, src.base, t)  # noqa: E731
    if e.op is Op.ADD3:
        fn = (lambda x, y, z: _float_binary(Op.ADD, _float_binary(Op.ADD, x, y, t), z, t)) if t.is_float \
            else (lambda x, y, z: wrap_int(x + y + z, t))
    else:  # MAD: a + b * c, a float one fused (the product is not rounded; Xe's mad, xesim's op_mad)
        fn = (lambda x, y, z: round_float(x + y * z, t)) if t.is_float \
            else (lambda x, y, z: wrap_int(x + y * z, t))
    return _lanewise(lambda x, y, z: fn(conv(x, e.a.type), conv(y, e.b.type), conv(z, e.c.type)), a, b, c)


def _load(e: Load, offset: Any, buffers: Mapping[str, Any]) -> Any:
    import numpy as np
    try:
        mem = buffers[e.buf.name]
    except KeyError:
        raise EvalError(f"unknown buffer '{e.buf.name}'") from None
    raw = np.asarray(mem).view(np.uint8).reshape(-1)
    t = e.type.base
    dtype = np.dtype(np.uint16) if t.scalar is Scalar.BF16 else np.dtype(t.numpy)

    def read(off: int) -> Any:
        chunk = raw[off:off + t.size]
        if len(chunk) != t.size or off < 0:
            raise EvalError(f"load of {t} at byte {off} is outside buffer '{e.buf.name}'")
        v = chunk.view(dtype)[0]
        if t.scalar is Scalar.BF16:
            return float(np.array([int(v) << 16], dtype=np.uint32).view(np.float32)[0])
        return bool(v) if t.is_bool else (float(v) if t.is_float else int(v))

    if e.type.lanes == 1:
        return read(int(offset))
    base = offset if isinstance(offset, tuple) else tuple(offset + i * e.stride for i in range(e.type.lanes))
    return tuple(read(int(o)) for o in base)


_OPERATIONS = (Binary, Unary, Ternary, Cast)


def evaluate_operation(e: Expr, operands: list) -> Any:
    """The value of operation ``e`` (unary, binary, ternary or cast) on the values of its
    operands, in the order of ``e.children()``."""
    if isinstance(e, Binary):
        return _binary(e, *operands)
    if isinstance(e, Unary):
        return _unary(e, *operands)
    if isinstance(e, Ternary):
        return _ternary(e, *operands)
    if isinstance(e, Cast):
        return _lanewise(lambda x: convert(x, e.a.type.base, e.type.base, e.saturate), operands[0])
    raise EvalError(f"{type(e).__name__} is not an operation")


def evaluate(e: Expr, env: Mapping[Any, Any] | None = None, buffers: Mapping[str, Any] | None = None) -> Any:
    """The value of ``e``; ``env`` maps variables (``Var`` or name) to values,
    ``buffers`` maps buffer names to numpy arrays (read as raw bytes)."""
    env = env or {}
    buffers = buffers or {}
    values: dict[int, Any] = {}
    for node in post_order(e, value_operands, values):
        key = id(node)
        if isinstance(node, Var):
            if node in env:
                v = env[node]
            elif node.name in env:
                v = env[node.name]
            else:
                raise EvalError(f"variable '{node.name}' has no value")
            values[key] = v
        elif isinstance(node, (IntImm, FloatImm, BoolImm)):
            values[key] = node.value
        elif isinstance(node, _OPERATIONS):
            values[key] = evaluate_operation(node, [values[id(k)] for k in node.children()])
        elif isinstance(node, Broadcast):
            values[key] = (values[id(node.a)],) * node.lanes
        elif isinstance(node, Ramp):
            base = values[id(node.base)]
            values[key] = tuple(wrap_int(base + i * node.stride, node.type.base) for i in range(node.lanes))
        elif isinstance(node, Shuffle):
            flat: list = []
            for v in node.vectors:
                x = values[id(v)]
                flat.extend(x if isinstance(x, tuple) else (x,))
            values[key] = tuple(flat[i] for i in node.indices)
        elif isinstance(node, Load):
            values[key] = _load(node, values[id(node.offset)], buffers)
        else:
            raise EvalError(f"cannot evaluate {type(node).__name__}")
    return values[id(e)]
