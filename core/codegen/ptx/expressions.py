"""Expressions to PTX: scalars (warp-uniform) and, in a slot's per-lane context, vector elements."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from kdd.core.ir.expr import (Binary, BoolImm, Broadcast, Cast, FloatImm, IntImm, Load, Op, Ramp, Ternary,
                              Unary, Var)
from kdd.core.ir.eval import evaluate, evaluate_operation
from kdd.core.ir.types import Type, bool_, s32, u32
from kdd.core.ir.visitor import walk

from ..errors import CodegenUnsupported
from .align import multiple_of
from .divide import magic
from .emitter import ptx_type, reg_class
from .lanes import LANES
from .values import ARITH, BITS, CMP, FCMP, Ctx, Value, imm_text, pow2


@lru_cache(maxsize=8192)
def lane_constants(e) -> tuple | None:
    """The elements of vector ``e`` where it depends on nothing but its element index (ramps of
    constants), else None. A function of ``e``'s structure (nodes hash and compare structurally), so
    evaluated once for every slot, lowering run and kernel that reads it, and an operation from its
    operands' values, so a sub-expression many lane maps share is evaluated once too."""
    if isinstance(e, (Binary, Unary, Ternary, Cast)):
        operands = [lane_constants(k) for k in e.children()]
        return None if any(v is None for v in operands) else evaluate_operation(e, operands)
    if isinstance(e, (Var, Load)) or any(isinstance(n, (Var, Load)) for n in walk(e)):
        return None
    return evaluate(e)


class ExprLowering:
    """The expression side of :class:`~.lower.PtxLowering`."""

    # -- expressions --------------------------------------------------------------------------
    def multiple(self, e) -> int:
        """A power of two (at most 16) known to divide integer ``e``."""
        return multiple_of(e, lambda name: self.align.get(name, 1), lambda key: self.slot_m.get(key, 1))

    def reg(self, v: Value) -> str:
        """``v`` in a register (immediates materialized)."""
        if v.imm is None:
            return v.text
        r = self.em.new(reg_class(v.type))
        if v.type.is_float and v.type.size == 2:
            bits = np.array([v.imm], dtype=np.float32)
            if v.type.scalar.short == "f16":
                raw = int(bits.astype(np.float16).view(np.uint16)[0])
            else:
                raw = int(bits.view(np.uint32)[0]) >> 16
            self.em.op(f"mov.b16 {r}, {raw:#06x}")
            return r
        self._mov(r, v)
        return r

    def guard(self, v: Value) -> str | None:
        """The predicate guarding an instruction by condition ``v``: None (no guard) where ``v`` is
        constant true."""
        if v.imm is not None and v.imm:
            return None
        return self.pred(v)

    def pred(self, v: Value) -> str:
        if v.imm is not None:
            return self.reg(v)
        return v.text

    def convert(self, v: Value, t: Type, saturate: bool = False, nearest: bool = False) -> Value:
        """``v`` converted to ``t``: a ``Cast``'s C semantics (float to integer truncates toward zero;
        integers wrap, or clamp with ``saturate``), or with ``nearest`` a reorder's float to integer,
        rounded to nearest even (``cvt.rni``; PTX's float-to-integer ``cvt`` clamps and maps NaN to 0)."""
        src, t = v.type, t.base
        if src == t:
            return v
        if t.is_bool:
            p = self.em.new("p")
            zero = "0d0000000000000000" if src.size == 8 and src.is_float else ("0f00000000" if src.is_float else "0")
            if src.is_float and src.size == 2:
                w = self.convert(v, Type.parse("f32"))
                self.em.op(f"setp.neu.f32 {p}, {w.text}, 0f00000000")
            else:
                self.em.op(f"setp.ne.{ptx_type(src) if not src.is_bool else 'u32'} {p}, {self.reg(v)}, {zero}")
            return Value(p, bool_)
        if src.is_bool:
            r = self.em.new(reg_class(t))
            one = imm_text(1, t)
            zero = imm_text(0, t)
            if t.is_float and t.size == 2:
                return self.convert(self.convert(v, Type.parse("f32")), t)
            self.em.op(f"selp.{ptx_type(t) if not t.is_float else ptx_type(t)} {r}, {one}, {zero}, {self.pred(v)}")
            return Value(r, t)
        if v.imm is not None and not t.is_float and not src.is_float:
            return Value(str(int(np.array([v.imm]).astype(np.int64).astype(t.numpy)[0])), t, int(v.imm))
        d, s = ptx_type(t), ptx_type(src)
        r = self.em.new(reg_class(t))
        if t.is_float and src.is_float:
            rnd = ".rn" if t.size < src.size else ""
            self.em.op(f"cvt{rnd}.{d}.{s} {r}, {self.reg(v)}")
        elif t.is_float:
            self.em.op(f"cvt.rn.{d}.{s} {r}, {self.reg(v)}")
        elif src.is_float:
            narrow = t.size < 4
            ty = ("s" if t.is_signed else "u") + BITS[t.size] if (narrow and saturate) else d
            self.em.op(f"cvt.{'rni' if nearest else 'rzi'}{'.sat' if narrow and saturate else ''}.{ty}.{s} {r}, "
                       f"{self.reg(v)}")
        else:
            if t.size < 4:
                # to a sub-word type: clamp to its range (cvt.sat.u8.s32) or keep its low bits
                # (cvt.u32.u8), extended into the 32-bit register either way
                ty = ("s" if t.is_signed else "u") + BITS[t.size]
                if saturate:
                    self.em.op(f"cvt.sat.{ty}.{s} {r}, {self.reg(v)}")
                else:
                    self.em.op(f"cvt.{d}.{ty} {r}, {self.reg(v)}")
            elif t.size == src.size or (t.size == 4 and src.size < 4):
                self.em.op(f"mov.b{max(32, t.size * 8)} {r}, {self.reg(v)}")
            else:
                self.em.op(f"cvt.{d}.{s} {r}, {self.reg(v)}")
        return Value(r, t)

    def select(self, p: str | None, a: Value, b: Value) -> Value:
        """``p ? a : b`` (``a`` when ``p`` is None)."""
        if p is None:
            return a
        t = a.type
        if t.is_bool:
            r = self.em.new("p")
            x, y = self.em.new("p"), self.em.new("p")
            self.em.op(f"and.pred {x}, {p}, {self.pred(a)}")
            self.em.op(f"not.pred {y}, {p}")
            self.em.op(f"and.pred {y}, {y}, {self.pred(b)}")
            self.em.op(f"or.pred {r}, {x}, {y}")
            return Value(r, t)
        r = self.em.new(reg_class(t))
        ty = {"h": "b16", "r": "b32", "rd": "b64", "f": "f32", "fd": "f64"}[reg_class(t)]
        self.em.op(f"selp.{ty} {r}, {self.reg(a)}, {self.reg(b)}, {p}")
        return Value(r, t)

    def ev(self, e, ctx: Ctx | None = None) -> Value:
        em = self.em
        if ctx is not None and e.type.lanes > 1 and e.type.is_int and (vals := lane_constants(e)) is not None:
            # Folded here: each lane's value is known, and lane maps are cheap (affine, bit fields).
            per = [int(vals[i]) if i >= 0 else 0 for i in ctx.slot.index]
            if all(-(1 << 31) <= v < (1 << 31) for v in per):
                return self.convert(self.lane_value(per, ctx.slot.mask), e.type.base)
        if isinstance(e, IntImm):
            return Value(str(e.value), e.type, e.value)
        if isinstance(e, FloatImm):
            if e.type.size == 2:        # no 16-bit float immediates in PTX: materialize the bits
                return Value(self.reg(Value("", e.type, e.value)), e.type)
            return Value(imm_text(e.value, e.type), e.type, e.value)
        if isinstance(e, BoolImm):
            return Value("1" if e.value else "0", bool_, e.value)
        if isinstance(e, Var):
            v = self.lookup(e.name)
            if not isinstance(v, Value):
                if ctx is None:
                    raise CodegenUnsupported(f"vector {e.name} used outside a per-lane context")
                return self.ev(v, ctx)
            return v
        if isinstance(e, Broadcast):
            return self.ev(e.a, None)
        if isinstance(e, Ramp):
            if ctx is None:
                raise CodegenUnsupported("a ramp outside a per-lane context")
            base = self.ev(e.base)
            t = ptx_type(e.type.base)
            idx = self.convert(ctx.index, e.type.base)
            return Value(em.calc(reg_class(e.type.base), f"mad.lo.{t} {{}}, {idx.text}, {e.stride}, {base.text}"),
                         e.type)
        if isinstance(e, Cast):
            return self.convert(self.ev(e.a, ctx), e.type, e.saturate)
        if isinstance(e, Unary):
            a = self.ev(e.a, ctx)
            r = em.new(reg_class(e.type.base))
            if e.op is Op.NOT:
                em.op(f"not.pred {r}, {self.pred(a)}")
            elif e.op is Op.BIT_NOT:
                em.op(f"not.b{max(32, e.type.scalar.bits)} {r}, {self.reg(a)}")
            else:
                em.op(f"neg.{ptx_type(e.type.base)} {r}, {self.reg(a)}")
            return Value(r, e.type)
        if isinstance(e, Binary):
            return self._binary(e, ctx)
        if isinstance(e, Ternary):
            return self._ternary(e, ctx)
        if isinstance(e, Load):
            return self._load(e, ctx)
        raise CodegenUnsupported(f"PTX lowering has no rule for the expression {type(e).__name__}")

    def ev_split(self, e, ctx: Ctx | None = None) -> tuple[Value, int, int]:
        """Integer ``e`` as an operand plus a constant, for an address to take as its immediate, and a
        power of two (at most 16) dividing the operand in every active lane: the constants of sums, of
        products and ``mad`` by constants and of lane maps (:meth:`.LaneWords.lane_offset`) are split
        off (32-bit wrap-around aside, which offsets do not reach), so accesses that differ by a
        constant share their address register."""
        if not (e.type.is_int and e.type.base.size == 4):
            return self.ev(e, ctx), 0, 1
        if isinstance(e, IntImm):
            return Value("0", e.type, 0), int(e.value), 16
        if isinstance(e, Var) and ctx is not None and not isinstance(self.lookup(e.name), Value):
            return self.ev_split(self.lookup(e.name), ctx)      # a vector let, evaluated per lane
        if isinstance(e, Binary) and e.op is Op.ADD:
            (a, ka, ma), (b, kb, mb) = self.ev_split(e.a, ctx), self.ev_split(e.b, ctx)
            return self._add_off(a, b), ka + kb, min(ma, mb)
        if isinstance(e, Binary) and e.op is Op.MUL and isinstance(e.b, IntImm):
            c = int(e.b.value)
            a, ka, ma = self.ev_split(e.a, ctx)
            return self._scale_add(a, c, Value("0", s32, 0)), ka * c, min(16, ma * pow2(c))
        if isinstance(e, Ternary) and e.op is Op.MAD and isinstance(e.c, IntImm):     # a + b * c
            c = int(e.c.value)
            (a, ka, ma), (b, kb, mb) = self.ev_split(e.a, ctx), self.ev_split(e.b, ctx)
            return self._scale_add(b, c, a), ka + kb * c, min(ma, 16, mb * pow2(c))
        if ctx is not None and e.type.lanes > 1 and (vals := lane_constants(e)) is not None:
            per = [int(vals[i]) if i >= 0 else 0 for i in ctx.slot.index]
            if all(-(1 << 31) <= v < (1 << 31) for v in per):
                v, k = self.lane_offset(per, ctx.slot.mask)
                active = [per[ln] - k for ln in range(LANES) if ctx.slot.mask >> ln & 1]
                return v, k, min(pow2(x) for x in active)
        return self.ev(e, ctx), 0, self.multiple(e) if e.type.lanes == 1 else 1

    def _scale_add(self, b: Value, c: int, a: Value) -> Value:
        """``a + b * c`` as s32 (a ``mad``, or less where an operand is a constant)."""
        a, b = self.convert(a, s32), self.convert(b, s32)
        if c == 0:
            return a
        if b.imm is not None:
            return self._add_off(a, Value(str(b.imm * c), s32, b.imm * c))
        if c == 1:
            return self._add_off(a, b)
        if a.imm == 0:
            return Value(self.em.calc("r", f"mul.lo.s32 {{}}, {b.text}, {c}"), s32)
        return Value(self.em.calc("r", f"mad.lo.s32 {{}}, {b.text}, {c}, {self.reg(a) if a.imm is None else a.text}"),
                     s32)

    def _binary(self, e: Binary, ctx) -> Value:
        em = self.em
        op = e.op
        if op.is_logical:
            a, b = self.ev(e.a, ctx), self.ev(e.b, ctx)
            return Value(em.calc("p", f"{'and' if op is Op.AND else 'or'}.pred {{}}, {self.pred(a)}, {self.pred(b)}"),
                         bool_)
        if op.is_compare:
            from kdd.core.ir.expr import common_type
            t = common_type(e.a.type, e.b.type).base
            if t.is_bool:
                t = s32
            if ctx is not None and isinstance(e.b, IntImm) and t.is_signed and t.size == 4 and e.a.type.base == t:
                # a per-lane bound check: the constant of the lane map moves to the bound (x + k < n is
                # x < n - k), so the checks of a send's slots share the lane map's register
                a, k, _ = self.ev_split(e.a, ctx)
                b = Value(str(int(e.b.value) - k), t, int(e.b.value) - k)
                a = self.convert(a, t)
            else:
                a = self.convert(self.ev(e.a, ctx), t)
                b = self.convert(self.ev(e.b, ctx), t)
            if t.is_float and t.size == 2:
                a, b = self.convert(a, Type.parse("f32")), self.convert(b, Type.parse("f32"))
                t = Type.parse("f32")
            cmp = (FCMP if t.is_float else CMP)[op]
            bt = b.text if b.imm is not None and not t.is_float else self.reg(b)
            return Value(em.calc("p", f"setp.{cmp}.{ptx_type(t)} {{}}, {self.reg(a)}, {bt}"), bool_)
        t = e.type.base
        a = self.convert(self.ev(e.a, ctx), t if op not in (Op.SHL, Op.SHR) else t)
        b = self.ev(e.b, ctx)
        pt = ptx_type(t)
        cls = reg_class(t)
        if op in (Op.SHL, Op.SHR):
            amount = self.convert(b, u32)
            m = em.calc("r", f"and.b32 {{}}, {self.reg(amount)}, {max(32, t.scalar.bits) - 1}")
            kind = "shl.b" + str(max(32, t.scalar.bits)) if op is Op.SHL else f"shr.{pt}"
            return Value(em.calc(cls, f"{kind} {{}}, {self.reg(a)}, {m}"), t)
        b = self.convert(b, t)
        bt = b.text if b.imm is not None and not (t.is_float and t.size == 2) else self.reg(b)
        at = self.reg(a)
        if op in ARITH:
            name = ARITH[op]
            if name in ("and", "or", "xor"):
                return Value(em.calc(cls, f"{name}.b{max(32, t.scalar.bits)} {{}}, {at}, {bt}"), t)
            if t.is_float and name in ("add", "sub"):
                return Value(em.calc(cls, f"{name}.rn.{pt} {{}}, {at}, {bt}"), t)
            return Value(em.calc(cls, f"{name}.{pt} {{}}, {at}, {bt}"), t)
        if op is Op.MUL:
            return Value(em.calc(cls, f"mul.{'rn.' if t.is_float else 'lo.'}{pt} {{}}, {at}, {bt}"), t)
        r = em.new(cls)
        if op in (Op.DIV, Op.MOD, Op.DIV_UP):
            if t.is_float:
                if op is not Op.DIV:
                    raise CodegenUnsupported(f"{op.symbol} of floats")
                em.op(f"div.rn.{pt} {r}, {at}, {bt}")
                return Value(r, t)
            if b.imm is None or b.imm == 0:
                zero = em.new("p")
                safe = em.new(reg_class(t))
                em.op(f"setp.eq.{pt} {zero}, {bt}, 0")
                em.op(f"selp.{pt} {safe}, 1, {bt}, {zero}")
                bt = safe
            if op is not Op.DIV_UP and t.size == 4 and b.imm is not None and b.imm > 0:
                fast = self._divide_constant(op, e.a, at, int(b.imm), r)
                if fast is not None:
                    return Value(fast, t)
            if op is Op.DIV_UP:
                num = em.new(reg_class(t))
                em.op(f"add.{pt} {num}, {at}, {bt}")
                em.op(f"sub.{pt} {num}, {num}, 1")
                em.op(f"div.{pt} {r}, {num}, {bt}")
            else:
                em.op(f"{'div' if op is Op.DIV else 'rem'}.{pt} {r}, {at}, {bt}")
            if b.imm is None or b.imm == 0:
                em.op(f"selp.{pt} {r}, 0, {r}, {zero}")
        else:
            raise CodegenUnsupported(f"operator {op.symbol} has no PTX rule")
        return Value(r, t)

    def _divide_constant(self, op, a_expr, at: str, d: int, r: str) -> str | None:
        """``a / d`` or ``a % d`` into ``r`` for a 32-bit ``a`` known in ``[0, hi]`` (expressions with
        bounds, unsigned values): a shift and mask for powers of two, else a multiply-high and a
        shift (:func:`.divide.magic`); None where the bounds are unknown or no multiplier fits."""
        t = a_expr.type.base
        b = self.bounds(a_expr)             # of every element, for a vector evaluated per lane
        if b is None and not t.is_signed:
            b = (0, (1 << 32) - 1)
        if b is None or b[0] < 0 or b[1] >= 1 << 32:
            return None
        em = self.em
        if d & (d - 1) == 0:
            if op is Op.DIV:
                em.op(f"shr.u32 {r}, {at}, {d.bit_length() - 1}")
            else:
                em.op(f"and.b32 {r}, {at}, {d - 1}")
            return r
        ms = magic(d, b[1])
        if ms is None:
            return None
        q = r if op is Op.DIV else em.new("r")
        em.op(f"mul.hi.u32 {q}, {at}, {ms[0]}")
        if ms[1]:
            em.op(f"shr.u32 {q}, {q}, {ms[1]}")
        if op is Op.MOD:
            em.op(f"mad.lo.s32 {r}, {q}, {-d}, {at}")
        return r

    def _ternary(self, e: Ternary, ctx) -> Value:
        em = self.em
        t = e.type.base
        if e.op is Op.IIF:
            c = self.ev(e.a, ctx)
            return self.select(self.pred(c), self.convert(self.ev(e.b, ctx), t), self.convert(self.ev(e.c, ctx), t))
        a, b, c = (self.convert(self.ev(x, ctx), t) for x in (e.a, e.b, e.c))
        cls, pt = reg_class(t), ptx_type(t)
        operand = (lambda v: v.text if v.imm is not None and not t.is_float else self.reg(v))
        if e.op is Op.MAD:
            if t.is_float:
                return Value(em.calc(cls, f"fma.rn.{pt} {{}}, {self.reg(b)}, {self.reg(c)}, {self.reg(a)}"), t)
            return Value(em.calc(cls, f"mad.lo.{pt} {{}}, {self.reg(b)}, {operand(c)}, {operand(a)}"), t)
        rn = ".rn" if t.is_float else ""
        r = em.calc(cls, f"add{rn}.{pt} {{}}, {self.reg(a)}, {operand(b)}")
        return Value(em.calc(cls, f"add{rn}.{pt} {{}}, {r}, {operand(c)}"), t)

    def _load(self, e: Load, ctx) -> Value:
        name = e.buf.name
        t = e.type.base
        if name in self.grf:
            if not isinstance(e.offset, IntImm):
                raise CodegenUnsupported(f"register buffer {name} indexed by a run-time offset")
            buf = self.grf[name]
            if e.type.lanes == 1:
                b = e.offset.value
                return self.grf_load(buf, [b] * LANES, (1 << LANES) - 1, t)
            if ctx is None:
                raise CodegenUnsupported(f"vector load of {name} outside a per-lane context")
            src = [e.offset.value + i * e.stride if i >= 0 else -1 for i in ctx.slot.index]
            return self.grf_load(buf, src, ctx.slot.mask, t)
        off = self.ev(e.offset)
        if e.type.lanes > 1:
            if ctx is None:
                raise CodegenUnsupported(f"vector load of {name} outside a per-lane context")
            step = self.lane_value([e.stride * i for i in ctx.slot.index], ctx.slot.mask)
            off = self._add_off(off, step)
        space, addr = self.address(name, off)
        v = self.em.new("r")
        size = 1 if t.is_bool else t.size
        if size == 8:
            raise CodegenUnsupported("64-bit memory loads in expressions have no PTX rule yet")
        self.em.op(f"ld.{space}.{'b32' if size == 4 else 'u' + BITS[size]} {v}, [{addr}]")
        return self.bits_to_value(v, 0, t)
