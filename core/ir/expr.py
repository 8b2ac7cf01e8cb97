"""IR expressions: variables, immediates, unary/binary/ternary operations, casts, loads, vectors.

Construction goes through each class's ``make`` (which checks types and folds
nothing) or through the builders at the bottom of this module and the Python
operators ``+ - * // % & | ^ << >>`` and unary ``-``/``~``, which fold nothing
either; index arithmetic folded as it is built is ``kdd.core.ir.operators``. Python ints and
floats on either side of an operator become immediates of the other operand's
type. Comparisons are builders (``a.lt(b)``, ``a.eq(b)``), never ``<``/``==``.

Integer semantics (also those of the evaluator): ``//`` builds ``div`` which
truncates toward zero like C, ``%`` builds ``mod`` with the sign of the
dividend like C, and fixed-width results wrap around.
"""
from __future__ import annotations

from enum import Enum
from typing import Union

from .node import Node
from .types import Scalar, Type, bool_, f32, s32, s64


class Op(Enum):
    """Operators, with their printed form and arity."""

    # unary
    NEG = ("-", 1)
    NOT = ("!", 1)
    BIT_NOT = ("~", 1)
    # binary arithmetic
    ADD = ("+", 2)
    SUB = ("-", 2)
    MUL = ("*", 2)
    DIV = ("/", 2)
    MOD = ("%", 2)
    DIV_UP = ("div_up", 2)
    MIN = ("min", 2)
    MAX = ("max", 2)
    SHL = ("<<", 2)
    SHR = (">>", 2)
    BIT_AND = ("&", 2)
    BIT_OR = ("|", 2)
    BIT_XOR = ("^", 2)
    # comparisons (bool result)
    EQ = ("==", 2)
    NE = ("!=", 2)
    LT = ("<", 2)
    LE = ("<=", 2)
    GT = (">", 2)
    GE = (">=", 2)
    # logical (bool operands)
    AND = ("&&", 2)
    OR = ("||", 2)
    # ternary
    IIF = ("iif", 3)
    ADD3 = ("add3", 3)
    MAD = ("mad", 3)

    # Members are singletons: identity hashing (in C) instead of Enum's hash of the name, which
    # every IR node's structural hash pays for.
    __hash__ = object.__hash__

    def __init__(self, symbol: str, arity: int):
        self.symbol = symbol
        self.arity = arity
        # Plain attributes (not properties): every node constructor and rule reads them.
        self.is_compare = symbol in ("==", "!=", "<", "<=", ">", ">=")
        self.is_logical = symbol in ("&&", "||", "!")
        self.is_commutative = symbol in ("+", "*", "min", "max", "&", "|", "^", "==", "!=", "&&", "||")
        self.is_call_form = symbol[0].isalpha()  # printed as ``name(a, b)`` rather than infix


_INT_ONLY = frozenset({Op.MOD, Op.DIV_UP, Op.SHL, Op.SHR, Op.BIT_AND, Op.BIT_OR, Op.BIT_XOR,
                       Op.BIT_NOT})

ExprLike = Union["Expr", int, float, bool]


def common_type(a: Type, b: Type) -> Type:
    """The C-like result type of an arithmetic operation on ``a`` and ``b``."""
    lanes = max(a.lanes, b.lanes)
    if a.scalar is b.scalar:
        return a.with_lanes(lanes)
    if a.is_float or b.is_float:
        if a.is_float and b.is_float:
            pick = a if a.scalar.bits > b.scalar.bits else b
            if {a.scalar, b.scalar} == {Scalar.F16, Scalar.BF16}:
                pick = f32
        else:
            pick = a if a.is_float else b
        return pick.base.with_lanes(lanes)
    if a.is_bool:
        return b.with_lanes(lanes)
    if b.is_bool:
        return a.with_lanes(lanes)
    # Integers: promote to at least 32 bits like C; wider wins; at equal width, unsigned wins.
    # A narrow unsigned operand promotes to a signed 32-bit one (u16 + s8 is s32, as in C).
    bits = max(a.scalar.bits, b.scalar.bits, 32)
    unsigned = (not a.is_signed and a.scalar.bits == bits) or (not b.is_signed and b.scalar.bits == bits)
    name = ("u" if unsigned else "s") + str(bits)
    return Type.parse(name).with_lanes(lanes)


class Expr(Node):
    """Base class of expressions; every expression has a ``type``."""

    __slots__ = ()

    type: Type

    # -- arithmetic operators build IR ------------------------------------------------------
    def __add__(self, o): return binary(Op.ADD, self, o)
    def __radd__(self, o): return binary(Op.ADD, o, self)
    def __sub__(self, o): return binary(Op.SUB, self, o)
    def __rsub__(self, o): return binary(Op.SUB, o, self)
    def __mul__(self, o): return binary(Op.MUL, self, o)
    def __rmul__(self, o): return binary(Op.MUL, o, self)
    def __floordiv__(self, o): return binary(Op.DIV, self, o)
    def __rfloordiv__(self, o): return binary(Op.DIV, o, self)
    def __truediv__(self, o): return binary(Op.DIV, self, o)
    def __rtruediv__(self, o): return binary(Op.DIV, o, self)
    def __mod__(self, o): return binary(Op.MOD, self, o)
    def __rmod__(self, o): return binary(Op.MOD, o, self)
    def __and__(self, o): return binary(Op.BIT_AND, self, o)
    def __rand__(self, o): return binary(Op.BIT_AND, o, self)
    def __or__(self, o): return binary(Op.BIT_OR, self, o)
    def __ror__(self, o): return binary(Op.BIT_OR, o, self)
    def __xor__(self, o): return binary(Op.BIT_XOR, self, o)
    def __rxor__(self, o): return binary(Op.BIT_XOR, o, self)
    def __lshift__(self, o): return binary(Op.SHL, self, o)
    def __rshift__(self, o): return binary(Op.SHR, self, o)
    def __neg__(self): return unary(Op.NEG, self)
    def __invert__(self): return unary(Op.BIT_NOT, self)

    # -- comparison and logic builders (== and < stay Python's) ------------------------------
    def eq(self, o: ExprLike) -> "Expr": return binary(Op.EQ, self, o)
    def ne(self, o: ExprLike) -> "Expr": return binary(Op.NE, self, o)
    def lt(self, o: ExprLike) -> "Expr": return binary(Op.LT, self, o)
    def le(self, o: ExprLike) -> "Expr": return binary(Op.LE, self, o)
    def gt(self, o: ExprLike) -> "Expr": return binary(Op.GT, self, o)
    def ge(self, o: ExprLike) -> "Expr": return binary(Op.GE, self, o)
    def land(self, o: ExprLike) -> "Expr": return binary(Op.AND, self, o)
    def lor(self, o: ExprLike) -> "Expr": return binary(Op.OR, self, o)
    def lnot(self) -> "Expr": return unary(Op.NOT, self)

    def cast(self, type: Type, saturate: bool = False) -> "Expr":
        return Cast.make(type, self, saturate)


class Var(Expr):
    """A named variable. Variables compare by name and type: names are unique in a kernel."""

    __slots__ = ("type", "name")
    FIELDS = (("type", "attr"), ("name", "attr"))

    @classmethod
    def make(cls, type: Type, name: str, origin=None) -> "Var":
        if not name or not isinstance(name, str):
            raise ValueError("a variable needs a non-empty name")
        return cls(type, name, origin=origin)


class IntImm(Expr):
    """An integer constant, stored wrapped to its type's width."""

    __slots__ = ("type", "value")
    FIELDS = (("type", "attr"), ("value", "attr"))

    @classmethod
    def make(cls, type: Type, value: int, origin=None) -> "IntImm":
        if origin is None:  # small constants without an origin are shared: passes make many
            hit = _SMALL_INTS.get((type, value))
            if hit is not None:
                return hit
        if not type.is_int:
            raise TypeError(f"IntImm needs an integer type, got {type}")
        imm = cls(type, wrap_int(int(value), type), origin=origin)
        if origin is None and value.__class__ is int and -_SMALL_LIMIT <= value <= _SMALL_LIMIT:
            _SMALL_INTS[(type, value)] = imm
        return imm


# Immediates of small values, one object per (type, value): unroll and the simplifier make the
# same constants thousands of times. Bounded: at most 2 * _SMALL_LIMIT + 1 values per type.
_SMALL_LIMIT = 4096
_SMALL_INTS: dict[tuple[Type, int], IntImm] = {}


class FloatImm(Expr):
    __slots__ = ("type", "value")
    FIELDS = (("type", "attr"), ("value", "attr"))

    @classmethod
    def make(cls, type: Type, value: float, origin=None) -> "FloatImm":
        if not type.is_float:
            raise TypeError(f"FloatImm needs a float type, got {type}")
        return cls(type, float(value), origin=origin)


class BoolImm(Expr):
    __slots__ = ("type", "value")
    FIELDS = (("type", "attr"), ("value", "attr"))

    @classmethod
    def make(cls, value: bool, origin=None) -> "BoolImm":
        return cls(bool_, bool(value), origin=origin)

    def rebuild(self, type, value):
        return BoolImm.make(value, origin=self.origin)


class Unary(Expr):
    __slots__ = ("type", "op", "a")
    FIELDS = (("type", "attr"), ("op", "attr"), ("a", "node"))

    @classmethod
    def make(cls, op: Op, a: Expr, origin=None) -> "Unary":
        if op.arity != 1:
            raise ValueError(f"{op.name} is not a unary operator")
        if op is Op.NOT and not a.type.is_bool:
            raise TypeError(f"'!' needs a bool operand, got {a.type}")
        if op is Op.BIT_NOT and not a.type.is_int:
            raise TypeError(f"'~' needs an integer operand, got {a.type}")
        return cls(a.type, op, a, origin=origin)

    def rebuild(self, type, op, a):
        return Unary.make(op, a, origin=self.origin)


class Binary(Expr):
    __slots__ = ("type", "op", "a", "b")
    FIELDS = (("type", "attr"), ("op", "attr"), ("a", "node"), ("b", "node"))

    @classmethod
    def make(cls, op: Op, a: Expr, b: Expr, origin=None) -> "Binary":
        if op.arity != 2:
            raise ValueError(f"{op.name} is not a binary operator")
        if op.is_logical:
            if not (a.type.is_bool and b.type.is_bool):
                raise TypeError(f"'{op.symbol}' needs bool operands, got {a.type} and {b.type}")
            return cls(bool_.with_lanes(max(a.type.lanes, b.type.lanes)), op, a, b, origin=origin)
        if op in _INT_ONLY and not (a.type.is_int and b.type.is_int):
            raise TypeError(f"'{op.symbol}' needs integer operands, got {a.type} and {b.type}")
        t = common_type(a.type, b.type)
        if op.is_compare:
            t = bool_.with_lanes(t.lanes)
        elif op in (Op.SHL, Op.SHR):
            t = a.type.with_lanes(t.lanes) if a.type.scalar.bits >= 32 else t
        return cls(t, op, a, b, origin=origin)

    def rebuild(self, type, op, a, b):
        return Binary.make(op, a, b, origin=self.origin)


class Ternary(Expr):
    """``iif(cond, a, b)``, ``add3(a, b, c)`` = a + b + c, ``mad(a, b, c)`` = a + b * c."""

    __slots__ = ("type", "op", "a", "b", "c")
    FIELDS = (("type", "attr"), ("op", "attr"), ("a", "node"), ("b", "node"), ("c", "node"))

    @classmethod
    def make(cls, op: Op, a: Expr, b: Expr, c: Expr, origin=None) -> "Ternary":
        if op.arity != 3:
            raise ValueError(f"{op.name} is not a ternary operator")
        if op is Op.IIF:
            if not a.type.is_bool:
                raise TypeError(f"iif condition must be bool, got {a.type}")
            t = common_type(b.type, c.type)
            t = t.with_lanes(max(t.lanes, a.type.lanes))  # a vector condition selects per lane
        else:
            t = common_type(common_type(a.type, b.type), c.type)
        return cls(t, op, a, b, c, origin=origin)

    def rebuild(self, type, op, a, b, c):
        return Ternary.make(op, a, b, c, origin=self.origin)


class Cast(Expr):
    """Conversion to ``type``; ``saturate`` clamps to the destination range instead of wrapping."""

    __slots__ = ("type", "a", "saturate")
    FIELDS = (("type", "attr"), ("a", "node"), ("saturate", "attr"))

    @classmethod
    def make(cls, type: Type, a: Expr, saturate: bool = False, origin=None) -> "Cast":
        if type.lanes != a.type.lanes and type.lanes != 1:
            raise TypeError(f"cannot cast {a.type} to {type}: lane counts differ")
        return cls(type.with_lanes(a.type.lanes), a, bool(saturate), origin=origin)


class Load(Expr):
    """``type`` elements read from buffer ``buf`` at byte ``offset``.

    A vector load (``type.lanes > 1``) reads lanes ``stride`` bytes apart
    (``stride`` = element size for a dense vector).
    """

    __slots__ = ("type", "buf", "offset", "stride")
    FIELDS = (("type", "attr"), ("buf", "node"), ("offset", "node"), ("stride", "attr"))

    @classmethod
    def make(cls, type: Type, buf: Expr, offset: ExprLike, stride: int | None = None, origin=None) -> "Load":
        if not isinstance(buf, Var):
            raise TypeError(f"load needs a buffer variable, got {buf!r}")
        off = as_expr(offset)
        if not off.type.is_int:
            raise TypeError(f"load offset must be an integer, got {off.type}")
        return cls(type, buf, off, type.scalar.size if stride is None else int(stride), origin=origin)


class Broadcast(Expr):
    """A scalar repeated over ``lanes``."""

    __slots__ = ("type", "a", "lanes")
    FIELDS = (("type", "attr"), ("a", "node"), ("lanes", "attr"))

    @classmethod
    def make(cls, a: Expr, lanes: int, origin=None) -> "Broadcast":
        if a.type.lanes != 1:
            raise TypeError(f"broadcast needs a scalar, got {a.type}")
        return cls(a.type.with_lanes(lanes), a, int(lanes), origin=origin)

    def rebuild(self, type, a, lanes):
        return Broadcast.make(a, lanes, origin=self.origin)


class Ramp(Expr):
    """The vector ``base + i * stride`` for ``i`` in ``0 .. lanes-1`` (vector offsets)."""

    __slots__ = ("type", "base", "stride", "lanes")
    FIELDS = (("type", "attr"), ("base", "node"), ("stride", "attr"), ("lanes", "attr"))

    @classmethod
    def make(cls, base: Expr, stride: int, lanes: int, origin=None) -> "Ramp":
        if not base.type.is_int or base.type.lanes != 1:
            raise TypeError(f"ramp base must be a scalar integer, got {base.type}")
        return cls(base.type.with_lanes(lanes), base, int(stride), int(lanes), origin=origin)

    def rebuild(self, type, base, stride, lanes):
        return Ramp.make(base, stride, lanes, origin=self.origin)


class Shuffle(Expr):
    """Lanes picked from the concatenation of ``vectors`` by ``indices``."""

    __slots__ = ("type", "vectors", "indices")
    FIELDS = (("type", "attr"), ("vectors", "nodes"), ("indices", "attr"))

    @classmethod
    def make(cls, vectors, indices, origin=None) -> "Shuffle":
        vectors = tuple(vectors)
        indices = tuple(int(i) for i in indices)
        if not vectors:
            raise ValueError("shuffle needs at least one vector")
        scalar = vectors[0].type.scalar
        if any(v.type.scalar is not scalar for v in vectors):
            raise TypeError("shuffle operands must share a scalar type")
        total = sum(v.type.lanes for v in vectors)
        if any(not 0 <= i < total for i in indices):
            raise ValueError(f"shuffle index out of range 0..{total - 1}")
        return cls(Type(scalar, len(indices)), vectors, indices, origin=origin)

    def rebuild(self, type, vectors, indices):
        return Shuffle.make(vectors, indices, origin=self.origin)


# -- helpers and builders ----------------------------------------------------------------------

def value_operands(e: Node) -> tuple[Node, ...]:
    """The sub-expressions the value of ``e`` is computed from: its children, except that a
    load's buffer is a name for memory, not a value."""
    return (e.offset,) if isinstance(e, Load) else tuple(e.children())


def wrap_int(value: int, type: Type) -> int:
    """``value`` wrapped to ``type``'s width (two's complement for signed kinds)."""
    bits = type.scalar.bits
    value &= (1 << bits) - 1
    if type.is_signed and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def as_expr(value: ExprLike, like: Type | None = None) -> Expr:
    """An expression for ``value``; Python numbers become immediates of type ``like``."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool):
        return BoolImm.make(value)
    if isinstance(value, int):
        t = like.base if like is not None and like.is_int else s32
        if like is not None and like.is_float:
            return FloatImm.make(like.base, value)
        return IntImm.make(t if _fits(value, t) else s64, value)
    if isinstance(value, float):
        return FloatImm.make(like.base if like is not None and like.is_float else f32, value)
    raise TypeError(f"cannot make an IR expression from {value!r}")


def _fits(value: int, t: Type) -> bool:
    lo, hi = t.scalar.int_range()
    return lo <= value <= hi


def _pair(a: ExprLike, b: ExprLike) -> tuple[Expr, Expr]:
    if isinstance(a, Expr):
        return a, as_expr(b, a.type)
    if isinstance(b, Expr):
        return as_expr(a, b.type), b
    return as_expr(a), as_expr(b)


def var(name: str, type: Type = s32) -> Var:
    return Var.make(type, name)


def const(value: int | float | bool, type: Type | None = None) -> Expr:
    """An immediate: ``const(3)`` is s32, ``const(3, u64)``, ``const(1.5)`` is f32."""
    if isinstance(value, bool):
        return BoolImm.make(value)
    if type is None:
        return as_expr(value)
    if type.is_bool:
        return BoolImm.make(bool(value))
    return IntImm.make(type, value) if type.is_int else FloatImm.make(type, value)


def unary(op: Op, a: ExprLike) -> Expr:
    return Unary.make(op, as_expr(a))


def binary(op: Op, a: ExprLike, b: ExprLike) -> Expr:
    a, b = _pair(a, b)
    return Binary.make(op, a, b)


def ternary(op: Op, a: ExprLike, b: ExprLike, c: ExprLike) -> Expr:
    if op is Op.IIF:
        b, c = _pair(b, c)
        return Ternary.make(op, as_expr(a), b, c)
    anchor = next((x for x in (a, b, c) if isinstance(x, Expr)), None)
    like = anchor.type if anchor is not None else None
    return Ternary.make(op, as_expr(a, like), as_expr(b, like), as_expr(c, like))


def iif(cond: ExprLike, a: ExprLike, b: ExprLike) -> Expr:
    return ternary(Op.IIF, cond, a, b)


def min_(a: ExprLike, b: ExprLike) -> Expr:
    return binary(Op.MIN, a, b)


def max_(a: ExprLike, b: ExprLike) -> Expr:
    return binary(Op.MAX, a, b)


def div_up(a: ExprLike, b: ExprLike) -> Expr:
    return binary(Op.DIV_UP, a, b)


def land(*terms: ExprLike) -> Expr:
    """Logical conjunction of ``terms`` (``true`` for none)."""
    out: Expr | None = None
    for t in terms:
        out = as_expr(t) if out is None else binary(Op.AND, out, t)
    return BoolImm.make(True) if out is None else out


def is_const(e: Expr) -> bool:
    return isinstance(e, (IntImm, FloatImm, BoolImm))


def summands(e: Expr) -> tuple[list[Expr], int]:
    """The operands of the integer sum ``e`` (``+`` and ``add3`` nested, a broadcast of a sum looked
    through) that are not constants, in order, and the sum of its constants."""
    out: list[Expr] = []
    const = 0
    todo = [e]
    for x in todo:      # grows while read: the sum's operands
        if isinstance(x, Broadcast):
            todo.append(x.a)
        elif isinstance(x, IntImm):
            const += x.value
        elif isinstance(x, Binary) and x.op is Op.ADD:
            todo += [x.a, x.b]
        elif isinstance(x, Ternary) and x.op is Op.ADD3:
            todo += [x.a, x.b, x.c]
        else:
            out.append(x)
    return out, const
