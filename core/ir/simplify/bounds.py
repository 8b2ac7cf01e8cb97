"""Interval and modulus analysis of integer (and bool) expressions.

``Info(lo, hi, mod, rem)`` says the *actual* value ``v`` of an expression,
after every wrap-around of its fixed-width type, satisfies ``lo <= v <= hi``
and ``v == rem (mod mod)`` (``mod == 0``: ``v == rem`` exactly; ``mod == 1``:
nothing known). Integer expressions are always bounded, at worst by their
type; bools are 0/1; float expressions have no ``Info`` (None).

Soundness under wrap-around rests on one observation about linear forms
(``linear.py``): the form's value over the integers, with the actual values of
its terms, is congruent to the actual value modulo ``2**bits``. So if the
integer interval of the form lies inside the type's range, the actual value
*is* that integer ("the form fits", no overflow); otherwise only the type's
range is known, and only alignments that divide ``2**bits`` survive.

Every transfer function follows ``eval.py``'s semantics: C division and
modulus (toward zero, division or modulus by zero gives 0), shift amounts
modulo the width, implicit conversions to the common type.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import gcd

from ..c_arith import c_div, c_mod
from ..expr import (Binary, BoolImm, Cast, Expr, FloatImm, IntImm, Op, Ternary, Unary, Var,
                    wrap_int)
from ..types import Type
from ..visitor import post_order
from .linear import LinearForm, LinearForms


@dataclass(frozen=True, slots=True)
class Info:
    """``lo <= v <= hi`` and ``v == rem (mod mod)``; build with ``Info.make``."""

    lo: int
    hi: int
    mod: int = 1
    rem: int = 0

    @staticmethod
    def make(lo: int, hi: int, mod: int = 1, rem: int = 0) -> "Info":
        """Normalised: ``rem`` reduced, bounds tightened to the alignment, points exact."""
        if mod == 0:
            if lo <= rem <= hi:
                return Info(rem, rem, 0, rem)
            mod, rem = 1, 0  # contradictory facts (unreachable code): keep the interval
        mod = abs(mod)
        rem %= mod
        if mod > 1:
            tight_lo = lo + (rem - lo) % mod
            tight_hi = hi - (hi - rem) % mod
            if tight_lo <= tight_hi:
                lo, hi = tight_lo, tight_hi
        if lo == hi:
            return Info(lo, lo, 0, lo)
        return Info(lo, hi, mod, rem)

    @property
    def is_point(self) -> bool:
        return self.lo == self.hi

    def meet(self, lo: int, hi: int) -> "Info | None":
        """This info narrowed to ``lo..hi`` (None when no value is left)."""
        lo, hi = max(lo, self.lo), min(hi, self.hi)
        if self.mod > 1:
            lo += (self.rem - lo) % self.mod
            hi -= (hi - self.rem) % self.mod
        elif self.mod == 0 and not lo <= self.rem <= hi:
            return None
        return Info.make(lo, hi, self.mod, self.rem) if lo <= hi else None

    def join(self, other: "Info") -> "Info":
        """Facts true of a value that is either this one or ``other``."""
        mod = gcd(self.mod, other.mod, abs(self.rem - other.rem))
        return Info.make(min(self.lo, other.lo), max(self.hi, other.hi), mod, self.rem)


def type_info(t: Type) -> Info | None:
    """What the type alone says: its range (bool 0..1); None for floats."""
    if t.is_bool:
        return Info.make(0, 1)
    if not t.is_int:
        return None
    lo, hi = t.scalar.int_range()
    return Info.make(lo, hi)


def _wrapped(t: Type, lo: int, hi: int, mod: int, rem: int) -> Info:
    """Facts about an integer-valued ``lo..hi`` quantity after wrapping to ``t``."""
    tlo, thi = t.scalar.int_range()
    if tlo <= lo and hi <= thi:
        return Info.make(lo, hi, mod, rem)
    if mod == 0:
        return Info.make(tlo, thi, 0, wrap_int(rem, t))
    return Info.make(tlo, thi, gcd(mod, 1 << t.scalar.bits), rem)


def converted(info: Info | None, src: Type, dst: Type) -> Info | None:
    """Facts about a ``src`` value converted to integer type ``dst`` (implicitly or by a cast)."""
    if dst.is_bool or not dst.is_int:
        return type_info(dst)
    if info is None or not (src.is_int or src.is_bool):
        return type_info(dst)
    return _wrapped(dst, info.lo, info.hi, info.mod, info.rem)


def _product(a: Info, b: Info) -> tuple[int, int, int, int]:
    corners = (a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi)
    mod = gcd(a.mod * b.mod, a.mod * b.rem, b.mod * a.rem)
    return min(corners), max(corners), mod, a.rem * b.rem


def _div(a: Info, b: Info) -> tuple[int, int, int, int]:
    values = [0] if b.lo <= 0 <= b.hi else []
    for blo, bhi in ((max(b.lo, 1), b.hi), (b.lo, min(b.hi, -1))):
        if blo <= bhi:
            values += [c_div(x, y) for x in (a.lo, a.hi) for y in (blo, bhi)]
    mod, rem = 1, 0
    if b.is_point and b.lo and a.mod and a.mod % b.lo == 0 and a.rem % b.lo == 0:
        mod, rem = a.mod // abs(b.lo), a.rem // b.lo
    elif b.is_point and b.lo > 0 and a.lo >= 0 and a.mod and a.mod % b.lo == 0:
        # a = mod*q + rem with a, q >= 0: a / k = (mod/k)*q + rem / k (a loop variable stepping by 9
        # plus 2, over 3: (k + 2) / 3 == 3*(k / 9) + 0)
        mod, rem = a.mod // b.lo, a.rem // b.lo
    return min(values), max(values), mod, rem


def _mod(a: Info, b: Info) -> tuple[int, int, int, int]:
    if b.is_point:
        k = abs(b.lo)
        if k == 0:
            return 0, 0, 0, 0
        mod, rem = gcd(a.mod, k), a.rem
        if a.hi - a.lo < k and (a.lo >= 0 or a.hi <= 0) and c_mod(a.lo, k) <= c_mod(a.hi, k):
            return c_mod(a.lo, k), c_mod(a.hi, k), mod, rem
    else:
        k = max(abs(b.lo), abs(b.hi))
        mod, rem = 1, 0
    limit = max(k - 1, 0)
    lo = 0 if a.lo >= 0 else max(a.lo, -limit)
    hi = 0 if a.hi <= 0 else min(a.hi, limit)
    return lo, hi, mod, rem


def _shift(op: Op, a: Info, b: Info, t: Type) -> tuple[int, int, int, int] | None:
    bits = t.scalar.bits
    if b.is_point:
        n = b.lo % bits
        if op is Op.SHR:
            return a.lo >> n, a.hi >> n, 1, 0
        return a.lo << n, a.hi << n, a.mod << n, a.rem << n
    if op is Op.SHR:
        return min(a.lo, 0), a.hi if a.hi >= 0 else -1, 1, 0
    return None


def _bitwise(op: Op, a: Info, b: Info) -> tuple[int, int, int, int] | None:
    if op is Op.BIT_AND:
        caps = [x.hi for x in (a, b) if x.lo >= 0]
        return (0, min(caps), 1, 0) if caps else None
    if a.lo < 0 or b.lo < 0:
        return None
    top = (1 << max(a.hi, b.hi).bit_length()) - 1
    return (max(a.lo, b.lo) if op is Op.BIT_OR else 0), top, 1, 0


class Analysis:
    """Memoised ``Info`` of expressions under ``facts`` (the memo is ``facts.memo.info``)."""

    def __init__(self, facts, lfs: LinearForms):
        self.facts = facts
        self.lfs = lfs

    def info(self, root: Expr) -> Info | None:
        """Facts about the value of ``root`` (None for floats and vectors of floats)."""
        cache = self.facts.memo.info
        hit = cache.get(id(root))
        if hit is not None:
            return hit[1]
        for node in post_order(root, self._deps, cache):
            cache[id(node)] = (node, self._transfer(node))
        return cache[id(root)][1]

    def info_in(self, e: Expr, t: Type) -> Info | None:
        """Facts about the value of ``e`` converted to integer type ``t``."""
        if e.type == t:
            return self.info(e)
        return converted(self.info(e), e.type, t)

    def form_range(self, lf: LinearForm | tuple) -> tuple[int, int]:
        """Interval over the integers of a linear form (or ``(type, terms, const)``)."""
        t, terms, const = (lf.type, lf.terms, lf.const) if isinstance(lf, LinearForm) else lf
        lo = hi = const
        for term, c in terms:
            i = self.info_in(term, t)
            if c > 0:
                lo, hi = lo + c * i.lo, hi + c * i.hi
            else:
                lo, hi = lo + c * i.hi, hi + c * i.lo
        return lo, hi

    def fits(self, lf: LinearForm | tuple) -> bool:
        """True when the form never overflows: its actual value is its integer value."""
        t = lf.type if isinstance(lf, LinearForm) else lf[0]
        tlo, thi = t.scalar.int_range()
        lo, hi = self.form_range(lf)
        return tlo <= lo and hi <= thi

    # -- the transfer functions ---------------------------------------------------------------
    def _form(self, e: Expr) -> LinearForm | None:
        """The linear form of an arithmetic node, unless ``e`` is its own only term."""
        if not (e.type.is_int and e.type.lanes == 1):
            return None
        if not ((isinstance(e, Binary) and e.op in (Op.ADD, Op.SUB, Op.MUL))
                or (isinstance(e, Unary) and e.op is Op.NEG)):
            return None
        lf = self.lfs.of(e)
        if lf.const == 0 and len(lf.terms) == 1 and lf.terms[0][0] is e:
            return None
        return lf

    def _deps(self, e: Expr):
        if isinstance(e, (Var, IntImm, BoolImm, FloatImm)) or e.type.lanes != 1:
            return ()
        lf = self._form(e)
        if lf is not None:
            return [term for term, _ in lf.terms]
        if isinstance(e, (Binary, Unary, Ternary, Cast)):
            return list(e.children())
        return ()

    def _transfer(self, e: Expr) -> Info | None:
        t = e.type
        if isinstance(e, (IntImm, BoolImm)):
            return Info.make(int(e.value), int(e.value))
        if t.lanes != 1:
            return type_info(t.base)
        if isinstance(e, Var):
            return self.facts.var_info(e)
        if t.is_bool:
            return type_info(t)
        if not t.is_int:
            return None
        lf = self._form(e)
        if lf is not None:
            return self.form_info(lf)
        if isinstance(e, Binary):
            return self._binary(e)
        if isinstance(e, Unary):  # BIT_NOT: ~v == -v - 1, or max - v unsigned
            a = self.info(e.a)
            if t.is_signed:
                return Info.make(-a.hi - 1, -a.lo - 1, a.mod, -a.rem - 1)
            top = t.scalar.int_range()[1]
            return Info.make(top - a.hi, top - a.lo, a.mod, top - a.rem)
        if isinstance(e, Ternary):
            return self._ternary(e)
        if isinstance(e, Cast):
            a = self.info(e.a)
            if e.saturate and a is not None and (e.a.type.is_int or e.a.type.is_bool):
                tlo, thi = t.scalar.int_range()
                if not (tlo <= a.lo and a.hi <= thi):
                    return Info.make(min(max(a.lo, tlo), thi), max(min(a.hi, thi), tlo))
            return converted(a, e.a.type, t)
        return type_info(t)

    def form_info(self, lf: LinearForm) -> Info:
        """Facts about the value of a linear form, from its terms' facts."""
        lo, hi = self.form_range(lf)
        mod, rem = 0, lf.const
        for term, c in lf.terms:
            i = self.info_in(term, lf.type)
            mod = gcd(mod, c * i.mod)
            rem += c * i.rem
        return _wrapped(lf.type, lo, hi, mod, rem)

    def _binary(self, e: Binary) -> Info:
        t = e.type
        op = e.op
        if op in (Op.SHL, Op.SHR):
            a, b = self.info_in(e.a, t), self.info(e.b)
            got = _shift(op, a, b, t) if b is not None else None
        else:
            a, b = self.info_in(e.a, t), self.info_in(e.b, t)
            if op is Op.MUL:
                got = _product(a, b)
            elif op is Op.DIV:
                got = _div(a, b)
            elif op is Op.MOD:
                got = _mod(a, b)
            elif op is Op.MIN:
                j = a.join(b)
                got = min(a.lo, b.lo), min(a.hi, b.hi), j.mod, j.rem
            elif op is Op.MAX:
                j = a.join(b)
                got = max(a.lo, b.lo), max(a.hi, b.hi), j.mod, j.rem
            elif op is Op.DIV_UP and b.is_point and b.lo > 0:
                got = _div(Info.make(a.lo + b.lo - 1, a.hi + b.lo - 1), b)
                tlo, thi = t.scalar.int_range()
                if not (tlo <= a.lo + b.lo - 1 and a.hi + b.lo - 1 <= thi):
                    got = None
            elif op in (Op.BIT_AND, Op.BIT_OR, Op.BIT_XOR):
                got = _bitwise(op, a, b)
            else:
                got = None
        if got is None:
            return type_info(t)
        return _wrapped(t, *got)

    def _ternary(self, e: Ternary) -> Info:
        t = e.type
        if e.op is Op.IIF:
            if isinstance(e.a, BoolImm):
                return self.info_in(e.b if e.a.value else e.c, t)
            return self.info_in(e.b, t).join(self.info_in(e.c, t))
        a, b, c = (self.info_in(x, t) for x in (e.a, e.b, e.c))
        if e.op is Op.ADD3:
            return _wrapped(t, a.lo + b.lo + c.lo, a.hi + b.hi + c.hi, gcd(a.mod, b.mod, c.mod),
                            a.rem + b.rem + c.rem)
        lo, hi, mod, rem = _product(b, c)  # MAD: a + b * c
        return _wrapped(t, a.lo + lo, a.hi + hi, gcd(a.mod, mod), a.rem + rem)
