"""Test oracle for the passes: a small reference executor and random programs to run on it.

``execute(stmt)`` runs one SIMD thread of a statement tree with scalar
semantics, expressions through ``kdd.core.ir.evaluate``. It is independent of
the interpreter in ``core/interp``: what it observes is the sequence of
*effects*: stores to buffers no ``alloc`` made (global memory: recorded as
``("store", buf, offset, value, mask)`` events instead of written), function
calls with their evaluated arguments, and ``("slm",)`` for each statement that
touches an ``alloc.slm`` buffer. Stores to allocated buffers (registers, SLM)
really write bytes, since loads read them back. Two programs are equivalent
when their effect sequences are equal.

``programs()`` is a hypothesis strategy for random kernels: nested loops
(some marked for unrolling), lets of integer index arithmetic, ifs and
stores whose offsets and values are such expressions.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from kdd.core.ir import (Alloc, For, FuncCall, Group, If, Let, MemKind, Seq, Store, evaluate, var)
from kdd.core.ir.funcs import Send
from kdd.core.ir.expr import IntImm, Op, Var, binary
from kdd.core.ir.types import s32
from kdd.core.passes.tree import distinct_nodes, own_exprs

OUT = var("out", s32)


@dataclass
class Run:
    events: list = field(default_factory=list)
    steps: int = 0


def _write(mem: np.ndarray, value, t, offset: int, stride: int, mask) -> None:
    values = value if isinstance(value, tuple) else (value,)
    masks = mask if isinstance(mask, tuple) else (mask,) * len(values)
    scalar = t.base
    for i, (v, m) in enumerate(zip(values, masks)):
        if not m:
            continue
        off = offset + i * stride
        raw = np.array([v], dtype=scalar.numpy).view(np.uint8)
        if off < 0 or off + len(raw) > len(mem):
            raise IndexError(f"store of {scalar} at byte {off} outside a {len(mem)}-byte buffer")
        mem[off:off + len(raw)] = raw


def execute(stmt, env: dict | None = None, inputs: dict | None = None, max_steps: int = 200_000) -> Run:
    """Run ``stmt`` (recursively: for small hand-written and random programs only)."""
    run = Run()
    buffers = dict(inputs or {})
    slm: set[str] = set()
    _exec(stmt, dict(env or {}), buffers, slm, run, max_steps)
    return run


def _touches_slm(s, slm: set[str]) -> bool:
    return any(isinstance(n, Var) and n.name in slm for e in own_exprs(s) for n in distinct_nodes(e))


def _exec(s, env, buffers, slm, run: Run, max_steps: int) -> None:
    run.steps += 1
    if run.steps > max_steps:
        raise RuntimeError("program runs too long")
    if not isinstance(s, (Seq, Group)) and _touches_slm(s, slm):
        run.events.append(("slm",))
    ev = lambda e: evaluate(e, env, buffers)  # noqa: E731
    if isinstance(s, Seq):
        for x in s.stmts:
            _exec(x, env, buffers, slm, run, max_steps)
    elif isinstance(s, Group):
        _exec(s.body, env, buffers, slm, run, max_steps)
    elif isinstance(s, Let):
        inner = dict(env)
        inner[s.var.name] = ev(s.value)
        _exec(s.body, inner, buffers, slm, run, max_steps)
    elif isinstance(s, For):
        k, bound = ev(s.init), ev(s.bound)
        while k < bound:
            inner = dict(env)
            inner[s.var.name] = k
            _exec(s.body, inner, buffers, slm, run, max_steps)
            k += s.step
    elif isinstance(s, If):
        if ev(s.cond):
            _exec(s.then, env, buffers, slm, run, max_steps)
        elif s.else_ is not None:
            _exec(s.else_, env, buffers, slm, run, max_steps)
    elif isinstance(s, Alloc):
        buffers[s.buf.name] = np.full(s.size, 0xFF, dtype=np.uint8)
        if s.kind is MemKind.SLM:
            slm.add(s.buf.name)
        _exec(s.body, env, buffers, slm, run, max_steps)
        del buffers[s.buf.name]
    elif isinstance(s, Store):
        value = ev(s.value)
        mask = True if s.mask is None else ev(s.mask)
        offset = ev(s.offset)
        if s.buf.name in buffers:
            _write(buffers[s.buf.name], value, s.value.type, offset, s.stride, mask)
        else:
            run.events.append(("store", s.buf.name, offset, value, mask))
    elif isinstance(s, FuncCall):
        if isinstance(s.func, Send) and not np.any(ev(s.ops.mask)):
            return  # a message masked off in every lane touches nothing (docs/ir-semantics.md)
        # A buffer operand is named, not evaluated.
        args = tuple(a.name if isinstance(a, Var) and a.name not in env else ev(a) for a in s.args)
        run.events.append(("call", str(s.func), args))
    else:
        raise TypeError(f"cannot execute {type(s).__name__}")


def effects(stmt, **kw) -> list:
    return execute(stmt, **kw).events


# -- random programs ---------------------------------------------------------------------------

_OPS = (Op.ADD, Op.ADD, Op.SUB, Op.MUL, Op.MUL, Op.DIV, Op.MOD, Op.MIN, Op.MAX, Op.SHL)
# An expression is drawn as a short code (one strategy object, so hypothesis caches it) and
# built by ``build_expr``: each step combines two pieces from a growing pool.
EXPR_CODE = st.lists(st.tuples(st.integers(0, len(_OPS) - 1), st.integers(-40, 40), st.integers(0, 2 ** 16)),
                     min_size=1, max_size=7)


def build_expr(code, scope: list[Var]):
    """The integer expression ``code`` describes over the variables of ``scope``: index arithmetic
    with divisions and moduli by non-zero constants and shifts by small ones."""
    def leaf(c, r):
        return scope[r % len(scope)] if scope and r % 3 else IntImm.make(s32, c)

    pool = [leaf(code[0][1], code[0][2])]
    for op_i, c, r in code[1:]:
        op = _OPS[op_i]
        a = pool[r % len(pool)]
        if op in (Op.DIV, Op.MOD):
            e = binary(op, a, IntImm.make(s32, c or 7))
        elif op is Op.SHL:
            e = binary(op, a, IntImm.make(s32, abs(c) % 5))
        else:
            e = binary(op, a, pool[(r // 7) % len(pool)] if r % 2 else leaf(c, r // 3))
        pool.append(e)
    return pool[-1]


@st.composite
def programs(draw, max_depth: int = 3):
    """A random statement tree with kernel-unique variable names."""
    counter = [0]

    def fresh(prefix):
        counter[0] += 1
        return var(f"{prefix}{counter[0]}")

    def block(scope: list[Var], depth: int):
        n = draw(st.integers(1, 4))
        items = []
        for _ in range(n):
            items.append(draw(st.sampled_from(("let", "store", "store", "for", "if") if depth else
                                              ("let", "store", "store"))))
        # Lets scope over everything after them: build from the end.
        plan = []
        inner_scope = list(scope)
        for kind in items:
            if kind == "let":
                v = fresh("t")
                plan.append(("let", v, build_expr(draw(EXPR_CODE), inner_scope)))
                inner_scope = inner_scope + [v]
            elif kind == "store":
                plan.append(("store", build_expr(draw(EXPR_CODE), inner_scope),
                             build_expr(draw(EXPR_CODE), inner_scope)))
            elif kind == "for":
                k = fresh("k")
                init = draw(st.integers(-2, 2))
                trips = draw(st.integers(0, 4))
                step = draw(st.integers(1, 2))
                unroll = draw(st.integers(1, 3))
                body = block(inner_scope + [k], depth - 1)
                plan.append(("for", For.make(k, init, init + trips * step - draw(st.integers(0, step - 1)),
                                             body, step, unroll)))
            else:
                cond = binary(Op.LT, build_expr(draw(EXPR_CODE), inner_scope),
                              build_expr(draw(EXPR_CODE), inner_scope))
                plan.append(("if", If.make(cond, block(inner_scope, depth - 1))))
        body = None
        for item in reversed(plan):
            if item[0] == "let":
                body = Let.make(item[1], item[2], body if body is not None else Seq.make(()))
            elif item[0] == "store":
                stmt = Store.make(OUT, item[1], item[2])
                body = stmt if body is None else Seq.make([stmt, body])
            else:
                body = item[1] if body is None else Seq.make([item[1], body])
        return body

    return block([var("x"), var("y")], max_depth)
