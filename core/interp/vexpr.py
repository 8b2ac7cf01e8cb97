"""Expressions compiled once into trees of numpy closures, evaluated for all threads at once.

A compiled expression is a function of the environment ``env`` (a list:
``env[0]`` the active-thread mask or None, then one slot per variable, see
:class:`Slots`). It returns the expression's value for every SIMD thread: an
array of ``values.value_dtype(type)`` of shape ``(n,)`` for a scalar or
``(n, lanes)`` for a vector, where ``n`` is 1 when the value is the same for
every thread (uniform; numpy broadcasting does the rest) and ``T`` otherwise.

The semantics are exactly those of :func:`kdd.core.ir.eval.evaluate` (C
integer division, wrap-around, division by zero gives 0, float operations
rounded to their type), with one normalisation: a float immediate denotes its
value rounded to its type. Compilation walks the tree with an explicit stack
and caps the depth of the closure tree (a deeper subtree is evaluated first
into a spill slot), so expressions of any depth compile and run without deep
recursion.
"""
from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from kdd.core.ir.expr import (Binary, BoolImm, Broadcast, Cast, Expr, FloatImm, IntImm, Load, Op,
                              Ramp, Shuffle, Ternary, Unary, Var, common_type, wrap_int)
from kdd.core.ir.c_arith import c_div_array, c_mod_array, div_up_array
from kdd.core.ir.types import Type
from kdd.core.ir.visitor import distinct_nodes

from .errors import InterpError
from .memory import ElementBytes, Memory
from .values import convert, from_bytes, round_float, value_dtype

Fn = Callable[[list], np.ndarray]
MASK = 0          # env[0]: active-thread mask, None when every thread is active
FIRST_SLOT = 1

_CAP = 96  # deepest closure nesting; deeper subtrees are spilled into slots


class Slots:
    """Environment slots: one per variable (by name and type), plus fresh scratch slots."""

    def __init__(self):
        self.index: dict[Var, int] = {}
        self.size = FIRST_SLOT

    def bind(self, var: Var) -> int:
        """The slot of ``var``, created on first use."""
        slot = self.index.get(var)
        if slot is None:
            slot = self.index[var] = self.fresh()
        return slot

    def lookup(self, var: Var) -> int:
        slot = self.index.get(var)
        if slot is None:
            raise InterpError(f"variable '{var.name}' ({var.type}) has no value here")
        return slot

    def fresh(self) -> int:
        self.size += 1
        return self.size - 1


# -- integer and float operators on arrays of one dtype ------------------------------------------

_INT_OPS = {
    Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply, Op.DIV: c_div_array, Op.MOD: c_mod_array,
    Op.DIV_UP: div_up_array, Op.MIN: np.minimum, Op.MAX: np.maximum, Op.BIT_AND: np.bitwise_and,
    Op.BIT_OR: np.bitwise_or, Op.BIT_XOR: np.bitwise_xor,
}


def _f_div(a, b):
    nz = b != 0
    q = a / np.where(nz, b, 1.0)
    inf = np.copysign(np.inf, a) * np.copysign(1.0, b)
    return np.where(nz, q, np.where(a != 0, inf, np.nan))


_FLOAT_OPS = {
    Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply, Op.DIV: _f_div,
    # Python's min/max: the first operand unless the second is strictly smaller/larger.
    Op.MIN: lambda a, b: np.where(b < a, b, a), Op.MAX: lambda a, b: np.where(b > a, b, a),
}

_COMPARE = {Op.EQ: np.equal, Op.NE: np.not_equal, Op.LT: np.less, Op.LE: np.less_equal,
            Op.GT: np.greater, Op.GE: np.greater_equal}


def float_op(op: Op, t: Type) -> Callable:
    """``op`` on values already of float type ``t``: computed in float64, rounded to ``t``."""
    f = _FLOAT_OPS.get(op)
    if f is None:
        raise InterpError(f"'{op.symbol}' is not defined on floats")
    if t.base.scalar.bits == 64:
        return f
    return lambda a, b: round_float(f(a.astype(np.float64), b.astype(np.float64)), t)


def _converter(src: Type, dst: Type, expand: bool) -> Callable | None:
    """Converts values of ``src`` to ``dst``; ``expand`` turns a scalar into a one-lane column.
    None when nothing is to be done."""
    same = src.base == dst.base
    if same and not expand:
        return None
    if same:
        return lambda x: x[:, None]
    if expand:
        return lambda x: convert(x, src, dst)[:, None]
    return lambda x: convert(x, src, dst)


def _const_fn(value: np.ndarray) -> Fn:
    """A closure returning ``value``; ``fn.value`` exposes it for folding."""
    value.flags.writeable = False
    fn = lambda env: value  # noqa: E731
    fn.value = value
    return fn


def _operand(fn: Fn, conv: Callable | None) -> Fn:
    """``fn`` followed by ``conv``, pre-applied when ``fn`` is a constant."""
    if conv is None:
        return fn
    value = getattr(fn, "value", None)
    if value is not None:
        return _const_fn(conv(value))
    return lambda env: conv(fn(env))


def _call1(f: Callable, a: Fn) -> Fn:
    return lambda env: f(a(env))


def _call2(f: Callable, a: Fn, b: Fn) -> Fn:
    """``f(a, b)`` with a constant ``b`` captured directly."""
    bv = getattr(b, "value", None)
    if bv is not None:
        return lambda env: f(a(env), bv)
    return lambda env: f(a(env), b(env))


def _expand(src: Type, out: Type) -> bool:
    return out.lanes > 1 and src.lanes == 1


# -- node builders ----------------------------------------------------------------------------------

def _imm(e: Expr) -> Fn:
    if isinstance(e, BoolImm):
        return _const_fn(np.array([e.value], dtype=np.bool_))
    if isinstance(e, IntImm):
        return _const_fn(np.array([e.value], dtype=value_dtype(e.type)))
    return _const_fn(round_float(np.array([e.value], dtype=np.float64), e.type))


def _unary(e: Unary, a: Fn) -> Fn:
    t = e.type
    if e.op is Op.NOT:
        return _call1(np.logical_not, a)
    if t.is_bool:
        raise InterpError(f"'{e.op.symbol}' on a bool value is not supported")
    return _call1(np.invert if e.op is Op.BIT_NOT else np.negative, a)


def _div_by_const(b: np.ndarray, mod: bool) -> Callable | None:
    """C division/modulus by a constant divisor without the zero guard (None if it may be 0)."""
    if (b == 0).any():
        return None
    if mod:
        return lambda x, y: np.fmod(x, y)
    return lambda x, y: (x - np.fmod(x, y)) // y


def _binary(e: Binary, a: Fn, b: Fn) -> Fn:
    op = e.op
    at, bt, t = e.a.type, e.b.type, e.type
    ea, eb = _expand(at, t), _expand(bt, t)
    if op is Op.AND or op is Op.OR:
        f = np.logical_and if op is Op.AND else np.logical_or
        return _call2(f, _operand(a, _converter(at, at, ea)), _operand(b, _converter(bt, bt, eb)))
    if op.is_compare:
        ct = common_type(at, bt)
        return _call2(_COMPARE[op], _operand(a, _converter(at, ct, ea)), _operand(b, _converter(bt, ct, eb)))
    if t.is_bool:
        raise InterpError(f"'{op.symbol}' on bool values is not supported")
    a = _operand(a, _converter(at, t, ea))
    if op in (Op.SHL, Op.SHR):
        bits, dt = t.scalar.bits, value_dtype(t)
        shift = np.left_shift if op is Op.SHL else np.right_shift
        # The amount is the right operand's own value modulo the width (Python's non-negative %).
        amount = _operand(b, _converter(bt, bt, eb))
        amount = _operand(amount, lambda y: np.mod(y, bits).astype(dt))
        return _call2(shift, a, amount)
    b = _operand(b, _converter(bt, t, eb))
    if t.is_float:
        return _call2(float_op(op, t), a, b)
    f = _INT_OPS.get(op)
    if f is None:
        raise InterpError(f"unknown integer operator {op.name}")
    bv = getattr(b, "value", None)
    if bv is not None and op in (Op.DIV, Op.MOD):
        f = _div_by_const(bv, op is Op.MOD) or f
    return _call2(f, a, b)


def _ternary(e: Ternary, a: Fn, b: Fn, c: Fn) -> Fn:
    t = e.type
    a = _operand(a, _converter(e.a.type, e.a.type if e.op is Op.IIF else t, _expand(e.a.type, t)))
    b = _operand(b, _converter(e.b.type, t, _expand(e.b.type, t)))
    c = _operand(c, _converter(e.c.type, t, _expand(e.c.type, t)))
    if e.op is Op.IIF:
        return lambda env: np.where(a(env), b(env), c(env))
    if t.is_bool:
        raise InterpError(f"'{e.op.symbol}' on bool values is not supported")
    if t.is_float:
        add, mul = float_op(Op.ADD, t), float_op(Op.MUL, t)
    else:
        add, mul = np.add, np.multiply
    if e.op is Op.ADD3:
        return lambda env: add(add(a(env), b(env)), c(env))
    if t.is_float and t.base.scalar.bits < 64:  # fused: a + b * c in float64, rounded once
        return lambda env: round_float(a(env).astype(np.float64) + b(env).astype(np.float64) * c(env), t)
    return lambda env: add(a(env), mul(b(env), c(env)))


def _cast(e: Cast, a: Fn) -> Fn:
    src, dst, sat = e.a.type, e.type, e.saturate
    if src.base == dst.base:
        return a
    return _operand(a, lambda x: convert(x, src, dst, sat))


def _bcast(x: np.ndarray, lanes: int) -> np.ndarray:
    return np.broadcast_to(x[:, None], (x.shape[0], lanes))


def _ramp(e: Ramp, base: Fn) -> Fn:
    steps = np.array([[wrap_int(i * e.stride, e.type) for i in range(e.lanes)]],
                     dtype=value_dtype(e.type))
    return lambda env: base(env)[:, None] + steps


def _shuffle(e: Shuffle, parts: list[Fn]) -> Fn:
    scalar = [v.type.lanes == 1 for v in e.vectors]
    idx = np.array(e.indices)

    def run(env):
        vals = [p(env)[:, None] if s else p(env) for p, s in zip(parts, scalar)]
        rows = max(v.shape[0] for v in vals)
        return np.concatenate([np.broadcast_to(v, (rows, v.shape[1])) for v in vals], axis=1)[:, idx]
    return run


def _load(e: Load, offset: Fn, buf_slot: int) -> Fn:
    t, lanes = e.type.base, e.type.lanes
    access = ElementBytes(t, lanes, e.stride, e.offset.type.lanes > 1)

    def run(env):
        mem: Memory = env[buf_slot]
        off = offset(env).astype(np.int64)
        if access.window and off.shape[0] == 1:
            # A copy: a register window is a view, and values must not change under later stores.
            raw = np.array(mem.read_window(int(off[0]), lanes * t.size, env[MASK]))
        else:
            mask = env[MASK]
            raw = mem.read(access.index(off), None if mask is None else mask[:, None])
        vals = from_bytes(raw, t)
        return vals[:, 0] if lanes == 1 else vals
    return run


def _spill_reader(slot: int) -> Fn:
    return lambda env: env[slot]


class ExprCompiler:
    """Compiles expressions to closures, each distinct expression once (memoized structurally)."""

    def __init__(self, slots: Slots):
        self.slots = slots
        self.memo: dict[Expr, tuple[Fn, int]] = {}
        self.budget = MemoBudget()

    def compile(self, root: Expr) -> Fn:
        """A closure computing ``root`` for every thread from ``env``."""
        hit = self.memo.get(root)
        if hit is not None:
            return hit[0]
        pre: list[tuple[int, Fn]] = []
        done: dict[int, tuple[Fn, int, bool]] = {}  # id -> (fn, depth, depends on a spill)
        stack: list[tuple[Expr, bool]] = [(root, False)]
        while stack:
            node, ready = stack.pop()
            key = id(node)
            if key in done:
                continue
            if not ready:
                m = self.memo.get(node)
                if m is not None:
                    done[key] = (m[0], m[1], False)
                    continue
                stack.append((node, True))
                stack.extend((k, False) for k in _kids(node) if id(k) not in done)
                continue
            fns, depth, spilled = [], 1, False
            for k in _kids(node):
                fn, d, s = done[id(k)]
                if d >= _CAP:
                    slot = self.slots.fresh()
                    pre.append((slot, fn))
                    fn, d, s = _spill_reader(slot), 1, True
                    done[id(k)] = (fn, d, s)
                fns.append(fn)
                depth, spilled = max(depth, d + 1), spilled or s
            fn = self._build(node, fns)
            if fns and not isinstance(node, Load) and all(hasattr(f, "value") for f in fns):
                with np.errstate(all="ignore"):
                    fn = _const_fn(fn(None))  # constant folding: every operand is known
            done[key] = (fn, depth, spilled)
            if not spilled:
                self.memo[node] = (fn, depth)
        fn = done[id(root)][0]
        if not pre:
            return fn

        def run(env):
            for slot, f in pre:
                env[slot] = f(env)
            return fn(env)
        return run

    def compile_root(self, e: Expr) -> Fn:
        """``compile`` plus a cache of results by the values of the free variables.

        Used for the expressions statements evaluate: a value that does not
        change between loop iterations (an address that depends on the thread
        ids and an outer loop only) is computed once per distinct input. Only
        expressions without loads qualify (memory changes under them).
        """
        fn = self.compile(e)
        if hasattr(fn, "value"):
            return fn
        operations, has_load, free = _inputs(e)
        if operations < 2 or has_load:
            return fn
        return _memoized(fn, tuple(sorted({self.slots.lookup(v) for v in free})), self.budget)

    def _build(self, e: Expr, k: list[Fn]) -> Fn:
        if isinstance(e, Var):
            slot = self.slots.lookup(e)
            return lambda env: env[slot]
        if isinstance(e, (IntImm, FloatImm, BoolImm)):
            return _imm(e)
        if isinstance(e, Binary):
            return _binary(e, *k)
        if isinstance(e, Unary):
            return _unary(e, *k)
        if isinstance(e, Ternary):
            return _ternary(e, *k)
        if isinstance(e, Cast):
            return _cast(e, *k)
        if isinstance(e, Load):
            return _load(e, k[0], self.slots.lookup(e.buf))
        if isinstance(e, Broadcast):
            a, lanes = k[0], e.lanes
            return lambda env: _bcast(a(env), lanes)
        if isinstance(e, Ramp):
            return _ramp(e, k[0])
        if isinstance(e, Shuffle):
            return _shuffle(e, k)
        raise InterpError(f"cannot evaluate {type(e).__name__}")


class MemoBudget:
    """Bytes that the result caches of one compiled program may hold in all."""

    def __init__(self, limit: int = 64 << 20):
        self.limit = limit
        self.used = 0


def _inputs(e: Expr) -> tuple[int, bool, set]:
    """Distinct operation nodes, whether a load occurs, and the variables of ``e`` (shared
    subtrees visited once, so heavily shared expressions stay linear)."""
    operations, has_load, free = 0, False, set()
    for node in distinct_nodes(e):
        if isinstance(node, Var):
            free.add(node)
        elif not isinstance(node, (IntImm, FloatImm, BoolImm)):
            operations += 1
            has_load = has_load or isinstance(node, Load)
    return operations, has_load, free


def _memo_key(v: np.ndarray):
    """A uniform integer's value, else the identity of the array (kept alive by the cache entry)."""
    if v.shape == (1,) and v.dtype.kind in "iub":
        return v.item()
    return (id(v),)


def _memoized(fn: Fn, slots: tuple[int, ...], budget: MemoBudget) -> Fn:
    cache: dict = {}
    held = [0]  # bytes of this cache

    def remember(key, vals, env):
        value = fn(env)
        size = value.nbytes
        if budget.used + size > budget.limit:
            budget.used -= held[0]   # make room by forgetting this expression's old results
            held[0] = 0
            cache.clear()
            if size > budget.limit // 4:
                return value
        cache[key] = (vals, value)
        held[0] += size
        budget.used += size
        return value

    if len(slots) == 1:
        (slot,) = slots

        def one(env):
            v = env[slot]
            key = v.item() if v.shape == (1,) and v.dtype.kind in "iub" else (id(v),)
            hit = cache.get(key)
            return hit[1] if hit is not None else remember(key, v, env)
        return one

    def many(env):
        vals = [env[s] for s in slots]
        key = tuple(map(_memo_key, vals))
        hit = cache.get(key)
        return hit[1] if hit is not None else remember(key, vals, env)
    return many


def _kids(e: Expr):
    # A load's buffer is a name for memory, not a value.
    return (e.offset,) if isinstance(e, Load) else tuple(e.children())


def evaluate_threads(e: Expr, values: Mapping[str, np.ndarray], buffers: Mapping[str, np.ndarray] | None = None,
                     threads: int = 1) -> np.ndarray:
    """``e`` for ``threads`` threads at once: variables by name -> ``(1|threads, ...)`` arrays,
    ``buffers`` by name -> numpy arrays read as global memory. The vectorized twin of
    :func:`kdd.core.ir.eval.evaluate`."""
    from .grid import Grid, Launch
    from .memory import GlobalMemory

    grid = Grid(Launch((threads, 1, 1), (1, 1, 1), 1, 4))
    slots = Slots()
    env: list = [None]
    for v in sorted(_inputs(e)[2], key=lambda v: v.name):
        slot = slots.bind(v)
        env.append(None)
        if buffers is not None and v.name in buffers:
            env[slot] = GlobalMemory(v.name, np.ascontiguousarray(buffers[v.name]), grid)
        elif v.name in values:
            env[slot] = np.asarray(values[v.name], dtype=value_dtype(v.type))
        else:
            raise InterpError(f"variable '{v.name}' has no value")
    fn = ExprCompiler(slots).compile(e)
    env.extend([None] * (slots.size - len(env)))
    with np.errstate(all="ignore"):
        return fn(env)
