"""Expression evaluation on Xe: operator tables, region-legal ALU instructions, emulation.

``evaluate(cg, e, dst)`` computes expression ``e`` into the register region
``dst`` (or into a fresh temporary when ``dst`` is None) and returns the
operand holding it; leaves (immediates, bound variables, register loads,
broadcasts) cost no instruction unless a destination is given. ``alu`` splits
one logical instruction into legal ones: at most ``max_exec`` lanes, every
region inside one register or exactly two halves of two. Integer division by
a constant uses shifts or a multiply-high (``mul`` into ``acc0`` + ``mach``);
64-bit integer adds are ``addc`` + ``add`` pairs where the target has no
64-bit integer ALU.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from kdd.core.ir.expr import (Binary, BoolImm, Broadcast, Cast, FloatImm, IntImm, Load, Op, Ramp, Ternary,
                              Unary, Var, wrap_int)
from kdd.core.ir.types import Type, s16, s32, u16, u32, u64
from kdd.core.ir.visitor import distinct_nodes

from ..errors import CodegenUnsupported
from .operand import Imm, Reg

# Two-source operators with one instruction: IR operator -> mnemonic.
BINARY = {Op.ADD: "add", Op.MUL: "mul", Op.BIT_AND: "and", Op.BIT_OR: "or", Op.BIT_XOR: "xor",
          Op.SHL: "shl", Op.AND: "and", Op.OR: "or"}
# Comparisons: IR operator -> condition modifier, and the one with operands swapped.
COMPARE = {Op.EQ: "eq", Op.NE: "ne", Op.LT: "lt", Op.LE: "le", Op.GT: "gt", Op.GE: "ge"}
SWAPPED = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
TERNARY = {Op.ADD3: "add3", Op.MAD: "mad"}


class Remat:
    """A let kept as its expression (rematerialized): evaluated again at every use."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


# -- legal instructions ---------------------------------------------------------------------

_SIGNEDNESS = {"shr": u32, "asr": s32}


def _fits(op, n: int, rb: int) -> bool:
    if not isinstance(op, Reg) or op.stride == 0:
        return True
    start, end = op.span(n)
    off = start % rb
    span = end - start
    if off + span <= rb:
        return True
    return off == 0 and span <= 2 * rb and (n // 2) * op.stride * op.size == rb


FLAG_WORD = 16  # bits of a flag subregister (f0.0): the widest padded execution size


def pieces(lanes: int, step: int):
    """``(first lane, count)`` of the power-of-two pieces, at most ``step`` each, that cover ``lanes``
    (execution sizes are powers of two: 7 lanes are 4 + 2 + 1)."""
    done = 0
    while done < lanes:
        k = min(step, 1 << ((lanes - done).bit_length() - 1))
        yield done, k
        done += k


def padded_lanes(lanes: int) -> int:
    """The execution size that covers ``lanes`` (execution sizes are powers of two)."""
    return 1 << (lanes - 1).bit_length()


def keep_lanes(cg, flag: str, lanes: int, negate: bool = False) -> None:
    """Clears the bits of ``flag`` at and past ``lanes`` (after inverting the first ``lanes`` when
    ``negate``), so an instruction padded to :func:`padded_lanes` and predicated on it leaves the extra
    lanes alone. Flags are read by one instruction (``FlagPool``), so changing one in place is safe."""
    keep = (1 << lanes) - 1
    if cg.flags.clear_past.get(flag) != lanes:
        cg.em.raw(f"(W) and (1|M0) {flag}<1>:uw {flag}<0;1,0>:uw 0x{keep:X}:uw", "int")
        cg.flags.touch(flag)
    if negate:
        cg.em.raw(f"(W) xor (1|M0) {flag}<1>:uw {flag}<0;1,0>:uw 0x{keep:X}:uw", "int")
        cg.flags.touch(flag)
    cg.flags.clear_past[flag] = lanes


def _masked(cg, mnemonic: str, lanes: int, dst, srcs, pred, cmod, sat, ternary) -> None:
    """A predicated instruction or a ``cmp`` over a lane count that is not a power of two: one
    instruction at the next power of two, the lanes past ``lanes`` masked off. Channel offsets are
    multiples of 4 (iga64: ``(2|M6)`` is an invalid ChOff), so 7 lanes cannot be 4 + 2 + 1 pieces."""
    n = padded_lanes(lanes)
    fits = all(_fits(o, n, cg.rb) for o in [dst, *srcs] if isinstance(o, Reg))
    if n > min(cg.xe.max_exec, FLAG_WORD) or not fits:
        raise CodegenUnsupported(f"a predicated {mnemonic} over {lanes} lanes needs splitting")
    if mnemonic == "sel" and pred and not cmod:
        # A predicated sel writes every channel (the flag picks the source), so it masks nothing:
        # dst = c, then dst = b where the flag holds, a predicated move (skipped where dst is b or c).
        b, c = srcs
        if not (isinstance(c, Reg) and c.byte == dst.byte):
            alu(cg, "mov", lanes, dst, [c])
        if not (isinstance(b, Reg) and b.byte == dst.byte):
            _masked(cg, "mov", lanes, dst, [b], pred, None, sat, False)
        return
    if pred:
        flag = pred.lstrip("~")
        keep_lanes(cg, flag, lanes, negate=pred.startswith("~"))
        pred = flag
    cg.em.op(mnemonic, n, dst, srcs, pred=pred, cmod=cmod, sat=sat, ternary=ternary)
    if cmod:
        cg.flags.clear_past.pop(cmod[1], None)
        keep_lanes(cg, cmod[1], lanes)


def alu(cg, mnemonic: str, lanes: int, dst: Reg | None, srcs: list, *, pred: str | None = None,
        cmod: tuple | None = None, sat: bool = False, ternary: bool = False) -> None:
    """``dst = mnemonic(srcs)`` over ``lanes`` lanes, split into legal instructions."""
    if mnemonic != "mov" and any(isinstance(s, Imm) and s.type.scalar.size == 8 for s in srcs):
        # Xe takes a 64-bit immediate as a mov's source only (iga64 rejects `mul ... 0x..:df`)
        mark = len(cg.temps)
        srcs = [_as_reg(cg, s, s.type) if isinstance(s, Imm) and s.type.scalar.size == 8 else s for s in srcs]
        alu(cg, mnemonic, lanes, dst, srcs, pred=pred, cmod=cmod, sat=sat, ternary=ternary)
        cg.release_temps(mark)
        return
    if mnemonic in _SIGNEDNESS:
        dst, srcs = _shift_signedness(mnemonic, dst, srcs)
    if lanes == 1:      # scalars: one instruction, every source a scalar region
        ss = [s.scalar() if type(s) is Reg and s.stride else s for s in srcs]
        cg.em.op(mnemonic, 1, dst, ss, pred=pred, cmod=cmod, sat=sat, ternary=ternary)
        return
    if (pred or mnemonic == "cmp") and lanes & (lanes - 1) and lanes < cg.xe.max_exec:
        return _masked(cg, mnemonic, lanes, dst, srcs, pred, cmod, sat, ternary)
    done = 0
    while done < lanes:
        n = _widest(cg, lanes - done, done, [dst, *srcs])
        d = dst.at(done) if dst is not None else None
        ss = [(s.at(done) if n > 1 else s.at(done).scalar()) if isinstance(s, Reg) else s for s in srcs]
        if (pred or mnemonic == "cmp") and done == 0 and lanes > n:
            raise CodegenUnsupported(f"a predicated {mnemonic} over {lanes} lanes needs splitting")
        cg.em.op(mnemonic, n, d, ss, pred=pred, cmod=cmod, sat=sat, ternary=ternary)
        done += n


def _shift_signedness(mnemonic: str, dst: Reg | None, srcs: list):
    """shr/asr take the signedness of the shift: dword operands retyped to match."""
    want = _SIGNEDNESS[mnemonic]
    dst = dst.retype(want) if dst is not None and dst.size == 4 else dst
    srcs = [s.retype(want) if isinstance(s, Reg) and s.size == 4 else
            Imm(s.value, want) if isinstance(s, Imm) and s.type.scalar.size == 4 else s for s in srcs]
    return dst, srcs


def _widest(cg, remaining: int, done: int, operands: list) -> int:
    """The widest execution size (a power of two, at most ``remaining`` and the target's widest) whose
    regions every operand, from lane ``done`` on, fits."""
    rb, top = cg.rb, cg.xe.max_exec
    n = 1
    while n * 2 <= min(remaining, top):
        n *= 2
    while n > 1 and not all(_fits(o.at(done) if isinstance(o, Reg) else o, n, rb) for o in operands):
        n //= 2
    return n


# -- operands ---------------------------------------------------------------------------------

def value(cg, e) -> Reg | Imm:
    """``e``'s value as an operand (evaluated into a temporary when it is not a leaf)."""
    return evaluate(cg, e, None)


def _dst(cg, e, dst):
    return dst if dst is not None else cg.temp(e.type, e.type.lanes)


def _as_reg(cg, op, t: Type, lanes: int = 1) -> Reg:
    """A register operand for ``op`` (an immediate is moved into a temporary)."""
    if isinstance(op, Reg):
        return op
    r = cg.temp(t, lanes if lanes > 1 else 1)
    _mov_imm(cg, r.retype(op.type), op, 1)
    return r.scalar() if lanes == 1 else r.retype(op.type, 0)


def _mov_imm(cg, dst: Reg, imm: Imm, lanes: int) -> None:
    if imm.type.scalar.name == "BF16":      # no bf immediates: move the bits
        bits = struct.unpack("<I", struct.pack("<f", imm.value))[0] >> 16
        alu(cg, "mov", lanes, dst.retype(u16), [Imm(bits, u16)])
        return
    alu(cg, "mov", lanes, dst, [imm])


def move(cg, dst: Reg, src, lanes: int) -> None:
    if isinstance(src, Imm):
        _mov_imm(cg, dst, Imm(src.value, dst.type) if src.type.is_int == dst.type.is_int else src, lanes)
    else:
        alu(cg, "mov", lanes, dst, [src])


def evaluate(cg, e, dst: Reg | None):
    """``e`` computed into ``dst`` (or wherever it already is); a scalar result is returned as a
    broadcast region so vector instructions can read it."""
    mark = len(cg.temps)
    out = _evaluate(cg, e, dst)
    if len(cg.temps) > mark:
        cg.release_temps(mark, keep=out)     # operands' temporaries die with the instruction that read them
    if e.type.lanes == 1 and isinstance(out, Reg) and out.stride:
        return out.scalar()
    return out


def _evaluate(cg, e, dst: Reg | None):
    lower = _LOWERINGS.get(type(e))
    if lower is None:
        raise CodegenUnsupported(f"no Xe lowering for expression {type(e).__name__}")
    return lower(cg, e, dst)


def _placed(cg, op, dst: Reg | None, lanes: int):
    """``op`` itself where no destination is asked for, else moved into ``dst``."""
    if dst is None:
        return op
    move(cg, dst, op, lanes)
    return dst


def _number(cg, e, dst: Reg | None):
    imm = Imm(e.value, e.type)
    if dst is None:
        return imm
    return _placed(cg, imm, dst, 1 if dst.stride == 0 else e.type.lanes)


def _bool(cg, e, dst: Reg | None):
    return _placed(cg, Imm(-1 if e.value else 0, s32), dst, e.type.lanes)


def _var(cg, e, dst: Reg | None):
    op = cg.lookup(e.name)
    if type(op) is Remat:
        return evaluate(cg, op.value, dst)
    return _placed(cg, op, dst, e.type.lanes)


def _load(cg, e, dst: Reg | None):
    name = e.buf.name
    if name not in cg.bufs:
        raise CodegenUnsupported(f"load from {name}: memory is read by send messages")
    op = cg.grf_ref(e.buf, e.offset, e.type, e.stride)
    if e.type.is_bool:      # bytes of 0 / 0xFF widened to a 0 / all-ones mask
        out = _dst(cg, e, dst)
        alu(cg, "mov", e.type.lanes, out.retype(s32), [op])
        return out
    return _placed(cg, op, dst, e.type.lanes)


def _broadcast(cg, e, dst: Reg | None):
    op = evaluate(cg, e.a, None)
    if isinstance(op, Reg):
        op = op.scalar()
    if isinstance(op, Imm) and e.type.is_bool:
        op = Imm(op.value, s32)
    return _placed(cg, op, dst, e.type.lanes)


def _ramp_into(cg, e, dst: Reg | None) -> Reg:
    return _ramp(cg, e, _dst(cg, e, dst))


def _ramp(cg, e, dst: Reg) -> Reg:
    lanes = e.lanes
    idx = cg.temp(u16, lanes)
    _lane_indices(cg, idx, lanes)
    base = evaluate(cg, e.base, None)
    if isinstance(base, Reg):
        base = base.scalar()
    if e.stride == 1:
        alu(cg, "add", lanes, dst, [idx, base] if isinstance(base, Imm) else [base, idx])
    elif isinstance(base, Reg) and -32768 <= e.stride < 32768:   # base + index * stride in one instruction
        alu(cg, "mad", lanes, dst, [base, idx, Imm(e.stride, s16)], ternary=True)
    else:
        alu(cg, "mul", lanes, dst, [idx, Imm(e.stride, s16 if -32768 <= e.stride < 32768 else s32)])
        if not (isinstance(base, Imm) and base.value == 0):
            alu(cg, "add", lanes, dst, [dst, base])
    return dst


def _lane_indices(cg, idx: Reg, lanes: int) -> None:
    """``0, 1, ..., lanes - 1`` as words in ``idx``: the packed immediate gives the first 8, then each
    ``add`` doubles what is written (lanes ``c..2c`` are lanes ``0..c`` plus ``c``): 32 lanes in three
    instructions, not a ``mov`` and an ``add`` per 8."""
    for c, n in pieces(min(lanes, 8), 8):
        cg.em.op("mov", n, idx.at(c), [_UV])
        if c:
            alu(cg, "add", n, idx.at(c), [idx.at(c), Imm(c, u16)])
    done = 8
    while done < lanes:
        n = 1 << (min(done, lanes - done).bit_length() - 1)
        alu(cg, "add", n, idx.at(done), [idx, Imm(done, u16)])
        done += n


class _UVImm(Imm):
    """The packed immediate 0..7 (``:uv``, eight 4-bit lanes)."""

    def text(self) -> str:
        return "0x76543210:uv"


_UV = _UVImm(0x76543210, u16)


def _cast(cg, e, dst):
    src_t, dst_t, lanes = e.a.type, e.type, e.type.lanes
    a = evaluate(cg, e.a, None)
    if src_t.is_bool:
        out = _dst(cg, e, dst)
        alu(cg, "and", lanes, out, [_as_reg(cg, a, s32, lanes), Imm(1, s32)])
        return out
    if dst_t.is_bool:
        out = _dst(cg, e, dst)
        alu(cg, "cmp", lanes, out, [_as_reg(cg, a, src_t, lanes), Imm(0, src_t)], cmod=("ne", cg.flags.take(lanes)))
        return out
    same = _cast_in_place(e, a, dst)
    if same is not None:
        return same
    out = _dst(cg, e, dst)
    if dst_t.scalar.bits == 64 and dst_t.is_int and not cg.xe.native_int64:
        _widen_to_int64(cg, a, src_t, out, lanes)
        return out
    alu(cg, "mov", lanes, out, [a], sat=e.saturate)
    return out


def _cast_in_place(e, a, dst):
    """A cast between integers that needs no instruction (None: it needs one): an immediate wrapped to
    the new type, a register of the same size read as the new type."""
    src_t, dst_t = e.a.type, e.type
    if dst is not None or e.saturate or not (src_t.is_int and dst_t.is_int):
        return None
    if isinstance(a, Imm):
        return Imm(wrap_int(int(a.value), dst_t), dst_t)
    if src_t.scalar.size == dst_t.scalar.size and isinstance(a, Reg):
        return a.retype(dst_t)
    return None


def _widen_to_int64(cg, a, src_t, out: Reg, lanes: int) -> None:
    """An integer into a 64-bit one as two dwords (no native 64-bit integers): the low dword moved, the
    high one the sign (or zero) extension."""
    lo = Reg(out.byte, u32, 2)
    hi = Reg(out.byte + 4, u32, 2)
    move(cg, lo, a if isinstance(a, Imm) else a.retype(u32), lanes)
    if src_t.is_signed and isinstance(a, Reg):
        alu(cg, "asr", lanes, hi.retype(s32), [a.retype(s32), Imm(31, s32)])
    else:
        neg = isinstance(a, Imm) and int(a.value) < 0
        move(cg, hi, Imm(0xFFFFFFFF if neg else 0, u32), lanes)


def _unary(cg, e, dst):
    a = evaluate(cg, e.a, None)
    lanes = e.type.lanes
    out = _dst(cg, e, dst)
    if e.op is Op.NEG:
        alu(cg, "mov", lanes, out, [_as_reg(cg, a, e.type, lanes).negated()])
    elif e.op in (Op.NOT, Op.BIT_NOT):
        alu(cg, "not", lanes, out, [_as_reg(cg, a, e.type, lanes)])
    else:
        raise CodegenUnsupported(f"unary {e.op.name}")
    return out


def _binary(cg, e, dst):
    op = e.op
    lanes = e.type.lanes
    if op in COMPARE:
        return _compare_value(cg, e, dst)
    if op is Op.DIV and e.type.is_float:
        return _float_div(cg, e, dst)
    if op in (Op.DIV, Op.MOD, Op.DIV_UP):
        return _divmod(cg, e, dst)
    if op is Op.ADD and lanes == 1 and e.type.is_int and e.type.scalar.bits == 32:
        for pick, other in ((e.a, e.b), (e.b, e.a)):
            if _select_of_constants(pick):
                return _add_select(cg, other, pick, dst, e)
    if op is Op.ADD and e.type.is_int and e.type.scalar.bits == 32:
        for x, other in ((e.b, e.a), (e.a, e.b)):
            inner = _added_constant(cg, x)
            if inner is not None and type(other) is not IntImm:   # a + (v + c): one add3
                return evaluate(cg, Ternary.make(Op.ADD3, other, inner.a, inner.b), dst)
    a = _widened_source(cg, e.a) if op in _EXTENDING else evaluate(cg, e.a, None)
    b = evaluate(cg, e.b, None)
    if e.type.is_int and e.type.scalar.bits == 64 and not cg.xe.native_int64:
        return _int64(cg, e, a, b, _dst(cg, e, dst))
    out = _dst(cg, e, dst)
    if op in (Op.MIN, Op.MAX):
        a, b = _reg_first(cg, a, b, e.type, lanes, commutative=True)
        alu(cg, "sel", lanes, out, [a, b], cmod=("lt" if op is Op.MIN else "ge", cg.flags.take(lanes)))
        return out
    if op is Op.SUB:
        if isinstance(b, Imm):
            b = Imm(-b.value, b.type)
            a = _as_reg(cg, a, e.type, lanes)
            alu(cg, "add", lanes, out, [a, b])
        else:
            alu(cg, "add", lanes, out, [b.negated(), a] if isinstance(a, Imm) else [a, b.negated()])
        return out
    if op is Op.SHR:
        mn = "asr" if e.a.type.is_signed else "shr"
    else:
        mn = BINARY.get(op)
        if mn is None:
            raise CodegenUnsupported(f"binary {op.name} on {e.type}")
    a, b = _reg_first(cg, a, b, e.type, lanes, commutative=op.is_commutative)
    if e.type.is_bool and op in (Op.AND, Op.OR):
        return _mask_value(cg, e, mn, out, a, b)
    alu(cg, mn, lanes, out, [a, b])
    return out


# Bitwise operations and shifts whose byte sources the ALU widens to words itself, zero- or sign-extending
# by the source's type, as a C cast from 8 to 16 bits of the same signedness does.
_EXTENDING = frozenset({Op.BIT_AND, Op.BIT_OR, Op.BIT_XOR, Op.SHL, Op.SHR})


def _widened_source(cg, e):
    """``e``'s operand; a cast of a byte register to a word of the same signedness is that register as it
    is (the unpacking of 4-bit weights: ``and (16) dst:uw src:ub 15``, no ``mov`` first). The other
    operand has the word type, so the instruction executes in words."""
    if type(e) is Cast and not e.saturate and e.a.type.is_int and e.type.is_int and \
            (e.a.type.scalar.bits, e.type.scalar.bits) == (8, 16) and e.a.type.is_signed == e.type.is_signed:
        a = evaluate(cg, e.a, None)
        if isinstance(a, Reg):
            return a
    return evaluate(cg, e, None)


def _added_constant(cg, e):
    """The value ``v + c`` (``c`` a 16-bit immediate) of a recomputed let ``e``, else None."""
    if type(e) is not Var:
        return None
    op = cg.lookup(e.name)
    v = op.value if type(op) is Remat else None
    if type(v) is Binary and v.op is Op.ADD and type(v.b) is IntImm and -32768 <= v.b.value < 32768 \
            and v.a.type.scalar.bits == 32:
        return v
    return None


def _select_of_constants(e) -> bool:
    return isinstance(e, Ternary) and e.op is Op.IIF and isinstance(e.b, IntImm) and isinstance(e.c, IntImm)


def _add_select(cg, x, pick, dst, e) -> Reg:
    """``x + iif(c, p, q)`` (a counter stepping by one of two constants: a digit that wraps) as
    ``x + q`` and, where ``c`` holds, ``+ (p - q)``: two instructions, not a ``mov`` of ``p``, a ``sel``
    and the ``add``. The flag is computed before the destination is written (it may be ``x``'s)."""
    a = evaluate(cg, x, None)
    f = flag_of(cg, pick.a, 1)
    out = _dst(cg, e, dst)
    p, q = pick.b.value, pick.c.value
    alu(cg, "add", 1, out, [_as_reg(cg, a, e.type, 1), Imm(wrap_int(q, e.type), e.type)])
    alu(cg, "add", 1, out, [out, Imm(wrap_int(p - q, e.type), e.type)], pred=f)
    return out


def _mask_value(cg, e, mn: str, out: Reg, a, b) -> Reg:
    """A conjunction or disjunction of masks as a value: the ``and``/``or`` also sets a flag where the
    result is not zero (a condition modifier), kept for the conditions that read it (:func:`flag_of`)
    where it is one instruction: a send under the mask needs no ``cmp`` of it."""
    lanes = e.type.lanes
    f = cg.flags.take(lanes)
    mark = len(cg.em.lines)
    alu(cg, mn, lanes, out, [a, b], cmod=("ne", f))
    if len(cg.em.lines) == mark + 1:
        remember_flag(cg, e, lanes, f)
    return out


def _reg_first(cg, a, b, t: Type, lanes: int, commutative: bool):
    """Operands with an immediate only in the second source."""
    if isinstance(a, Imm):
        if commutative and isinstance(b, Reg):
            return b, a
        a = _as_reg(cg, a, t, lanes)
    return a, b


def _compare_value(cg, e, dst):
    """A comparison as a value: a 0 / all-ones dword per lane. Between 32-bit integers one ``cmp``
    writes both (a ``cmp`` with a destination writes all ones where the condition holds), and its flag
    is kept for the conditions that read the comparison again (:func:`flag_of`)."""
    lanes = e.type.lanes
    out = _dst(cg, e, dst).retype(s32)
    t = _compared_type(e)
    if t.is_int and t.scalar.bits == 32:
        remember_flag(cg, e, lanes, _compare_flag(cg, e, lanes, out.retype(t.base)))
        return out
    f = flag_of(cg, e, lanes)
    move(cg, out, Imm(0, s32), lanes)
    alu(cg, "mov", lanes, out, [Imm(-1, s32)], pred=f)
    return out


def _compared_type(e) -> Type:
    return e.a.type if not isinstance(e.a, (IntImm, FloatImm)) else e.b.type


def _compare_flag(cg, e, lanes: int, dst: Reg | None = None) -> str:
    a = evaluate(cg, e.a, None)
    b = evaluate(cg, e.b, None)
    cond = COMPARE[e.op]
    t = _compared_type(e)
    if isinstance(a, Imm):
        if isinstance(b, Imm):
            a = _as_reg(cg, a, t, 1)
        else:
            a, b, cond = b, a, SWAPPED[cond]
    f = cg.flags.take(lanes)
    if t.is_int and t.scalar.bits == 64 and not cg.xe.native_int64:
        raise CodegenUnsupported("64-bit integer comparison on a target without 64-bit integer ALU")
    alu(cg, "cmp", lanes, dst, [a, b], cmod=(cond, f))
    return f


@dataclass(frozen=True)
class Known:
    """What a register holding an expression's value relies on: the control flow (no label or jump since)
    and the expression's variables (each still bound to the same operand)."""

    flow: int
    bindings: tuple

    @staticmethod
    def now(cg, e) -> "Known | None":
        """The current state for ``e``; None where ``e`` reads memory (a buffer may change in between)."""
        names = reads_only_variables(e)
        if names is None:
            return None
        return Known(cg.em.flow, tuple((n, _bound(cg, n)) for n in sorted(names)))

    def holds(self, cg) -> bool:
        return cg.em.flow == self.flow and all(_bound(cg, name) is op for name, op in self.bindings)


@dataclass(frozen=True)
class ReusableFlag:
    """A flag computed for a condition, and what it depended on: the flag subregister (both of its
    register's for a wide one) not handed out or changed since, and the condition's :class:`Known` state."""

    flag: str
    wide: bool      # over more than 16 lanes: the whole flag register
    written: tuple
    known: Known

    def holds(self, cg) -> bool:
        return cg.flags.written(self.flag, self.wide) == self.written and self.known.holds(cg)


def _bound(cg, name: str):
    stack = cg.env.get(name)
    return stack[-1] if stack else None


def flag_of(cg, cond, lanes: int) -> str:
    """A flag register (``f0.0``, or ``~f0.0`` negated) true in the lanes where ``cond`` holds. The flag
    an earlier instruction computed for the same condition is read again while it still holds it
    (straight-line code, the condition's variables not rebound, no memory read): sends under one mask
    share one ``cmp``."""
    hit = cg.flag_reuse.get((cond, lanes))
    if hit is not None and hit.holds(cg):
        return hit.flag
    return remember_flag(cg, cond, lanes, _flag_of(cg, cond, lanes))


def remember_flag(cg, cond, lanes: int, flag: str) -> str:
    """Records that ``flag`` now holds ``cond`` over ``lanes`` (for :func:`flag_of`); returns it."""
    known = Known.now(cg, cond)
    if known is not None:
        cg.flag_reuse[(cond, lanes)] = ReusableFlag(flag, lanes > 16, cg.flags.written(flag, lanes > 16), known)
    return flag


def reads_only_variables(cond) -> set[str] | None:
    """The variables ``cond`` reads, or None when it reads memory (a buffer may change in between)."""
    names = set()
    for e in distinct_nodes(cond):
        if isinstance(e, Load):
            return None
        if isinstance(e, Var):
            names.add(e.name)
    return names


def _flag_of(cg, cond, lanes: int) -> str:
    if isinstance(cond, Unary) and cond.op is Op.NOT:
        f = flag_of(cg, cond.a, lanes)
        return f[1:] if f.startswith("~") else "~" + f
    if isinstance(cond, Broadcast):
        return flag_of(cg, cond.a, 1) if lanes == 1 else _mask_flag(cg, cond, lanes)
    if isinstance(cond, Binary) and cond.op in COMPARE:
        return _compare_flag(cg, cond, cond.type.lanes)
    return _mask_flag(cg, cond, lanes)


def _mask_flag(cg, cond, lanes):
    m = evaluate(cg, cond, None)
    m = _as_reg(cg, m, s32, lanes)
    n = cond.type.lanes if isinstance(m, Reg) and m.stride else lanes
    f = cg.flags.take(max(n, lanes))
    alu(cg, "cmp", max(n, lanes), None, [m.retype(s32), Imm(0, s32)], cmod=("ne", f))
    return f


def _ternary(cg, e, dst):
    lanes = e.type.lanes
    if e.op is Op.IIF:
        return _select(cg, e, dst)
    mn = TERNARY[e.op]
    a, b, c = (evaluate(cg, x, None) for x in (e.a, e.b, e.c))
    if e.type.scalar.bits == 64:
        raise CodegenUnsupported(f"64-bit {mn}")
    srcs = _ternary_sources(cg, mn, e.type, a, b, c)
    out = _dst(cg, e, dst)
    alu(cg, mn, lanes, out, srcs, ternary=True)
    return out


def _select(cg, e, dst):
    """``iif(a, b, c)`` as a predicated ``sel`` (the sources swapped and the flag negated where only
    ``b`` is an immediate)."""
    lanes = e.type.lanes
    b, c = evaluate(cg, e.b, None), evaluate(cg, e.c, None)
    negate = isinstance(b, Imm) and not isinstance(c, Imm)   # only the second source takes an immediate
    if negate:
        b, c = c, b
    b = _as_reg(cg, b, e.type, lanes)
    out = _dst(cg, e, dst)
    f = flag_of(cg, e.a, lanes)
    if negate:
        f = f[1:] if f.startswith("~") else "~" + f
    alu(cg, "sel", lanes, out, [b, c], pred=f)
    return out


def _ternary_sources(cg, mn: str, t: Type, a, b, c) -> list:
    """The sources of a three-source ``mad``/``add3`` in legal positions: immediates moved out of src1
    (commuting where the operation allows), immediates as 16-bit integers or in registers."""
    if mn == "mad" and isinstance(b, Imm) and not isinstance(c, Imm):
        b, c = c, b             # src1 of a ternary cannot be an immediate
    if mn == "add3" and isinstance(b, Imm):
        if not isinstance(a, Imm):
            a, b = b, a
        elif not isinstance(c, Imm):
            b, c = c, b
    srcs = []
    for i, s in enumerate((a, b, c)):
        if isinstance(s, Imm) and (i == 1 or not s.fits16() or not s.type.is_int):
            s = _as_reg(cg, s, t, 1)
        elif isinstance(s, Imm):
            s = s.as16()
        srcs.append(s)
    return srcs


def _float_div(cg, e, dst):
    """``a / b`` on f32 as ``a * inv(b)``, as oneDNN's post-op injector divides: iga64 has no ``math.fdiv``
    for xehpg or xehpc (GED_SetMathFC), and the reciprocal is within 2.5 ulp (the binary ``div`` post-op)."""
    if e.type.scalar.name != "F32":
        raise CodegenUnsupported(f"float division of {e.type} (Xe divides f32, as a * inv(b))")
    lanes = e.type.lanes
    inv = cg.temp(e.type, lanes)
    alu(cg, "math.inv", lanes, inv, [_as_reg(cg, evaluate(cg, e.b, None), e.type, lanes)])
    out = _dst(cg, e, dst)
    alu(cg, "mul", lanes, out, [inv if lanes > 1 else inv.scalar(), evaluate(cg, e.a, None)])
    return out


# -- division by constants --------------------------------------------------------------------

def _divmod(cg, e, dst):
    lanes = e.type.lanes
    if not isinstance(e.b, IntImm) or e.b.value <= 0:
        raise CodegenUnsupported(f"integer {e.op.name} by a non-constant or non-positive divisor ({e.b})")
    if e.type.scalar.bits != 32:
        raise CodegenUnsupported(f"{e.op.name} of {e.type}")
    d = e.b.value
    n = evaluate(cg, e.a, None)
    n = _as_reg(cg, n, e.type, lanes)
    if e.op is Op.DIV_UP:
        t = cg.temp(e.type, lanes)
        alu(cg, "add", lanes, t, [n, Imm(d - 1, s32)])
        n = t if lanes > 1 else t.scalar()
    # a dividend never negative (``ranges``) divides as unsigned: no sign correction
    signed = e.type.is_signed and (e.op is Op.DIV_UP or not cg.values.nonnegative(e.a))
    if e.op is Op.MOD and d & (d - 1) == 0 and not signed:
        out = _dst(cg, e, dst)
        alu(cg, "and", lanes, out, [n, Imm(d - 1, s32)])
        return out
    q = cg.temp(e.type, lanes) if e.op is Op.MOD else _dst(cg, e, dst)
    if d == 1:
        move(cg, q, n, lanes)
    elif d & (d - 1) == 0:
        k = d.bit_length() - 1
        if signed:
            t = cg.temp(s32, lanes)
            alu(cg, "asr", lanes, t, [n, Imm(31, s32)])
            alu(cg, "shr", lanes, t.retype(u32), [t.retype(u32), Imm(32 - k, u32)])
            alu(cg, "add", lanes, t, [n, t])
            alu(cg, "asr", lanes, q, [t, Imm(k, s32)])
        else:
            alu(cg, "shr", lanes, q, [n, Imm(k, u32)])
    elif signed or not e.type.is_signed:
        _magic_div(cg, q, n, d, signed, lanes)
    else:
        _nonnegative_div(cg, q, n, d, lanes)
    if e.op is not Op.MOD:
        return q
    out = _dst(cg, e, dst)
    alu(cg, "mul", lanes, q, [q, Imm(d, s32)])
    alu(cg, "add", lanes, out, [n, q.negated()])
    return out


def magic(d: int, signed: bool) -> tuple[int, int]:
    """Multiplier and shift for 32-bit division by ``d`` (Hacker's Delight, 10-1 and 10-10)."""
    if signed:
        two31 = 1 << 31
        anc = two31 - 1 - (two31 % d)
        p = 31
        q1, r1 = divmod(two31, anc)
        q2, r2 = divmod(two31, d)
        while True:
            p += 1
            q1, r1 = 2 * q1, 2 * r1
            if r1 >= anc:
                q1, r1 = q1 + 1, r1 - anc
            q2, r2 = 2 * q2, 2 * r2
            if r2 >= d:
                q2, r2 = q2 + 1, r2 - d
            delta = d - r2
            if not (q1 < delta or (q1 == delta and r1 == 0)):
                break
        m = q2 + 1
        return (m - (1 << 32) if m >= two31 else m), p - 32
    # unsigned: smallest shift with an exact 33-bit multiplier is avoided by the round-up method
    s = (d - 1).bit_length()
    m = ((1 << (32 + s)) + d - 1) // d
    return m, s


def _mulhi(cg, dst: Reg, n: Reg, m: int, signed: bool, lanes: int) -> None:
    """``dst = (n * m) >> 32`` per lane: ``mul`` of the low word into ``acc0``, then ``mach``."""
    t = s32 if signed else u32
    # whole power-of-two pieces: mul and mach of a piece meet in the same accumulator channels
    for c, k in pieces(lanes, min(cg.rb // 4, cg.xe.max_exec)):
        src = n.at(c) if n.stride and k > 1 else n.at(c).scalar() if n.stride else n
        # mul of the multiplier's low word into the accumulator, then mach: the high dword
        acc = "acc0.0<1>:" + ("d" if signed else "ud")
        cg.em.raw(f"(W) mul ({k}|M0) {acc} {src.retype(t).src(cg.rb)} {Imm(m & 0xFFFF, u16).text()}", "int")
        cg.em.op("mach", k, dst.at(c).retype(t), [src.retype(t), Imm(m, t)])


def nonnegative_magic(d: int) -> tuple[int, int]:
    """Multiplier and shift dividing any ``n`` in ``0 .. 2**31 - 1`` by ``d`` (no power of two) as
    ``((n * m) >> 32) >> shift``: with ``s = ceil(log2 d)``, ``m = ceil(2**(31 + s) / d)`` fits 32 bits (the
    dividend's spare top bit) and its error ``n * e / 2**(31 + s) < 2**-s < 1 / d`` never reaches the next
    quotient; the shift is ``s - 1``."""
    s = (d - 1).bit_length()
    return -(-(1 << (31 + s)) // d), s - 1


def _nonnegative_div(cg, q: Reg, n: Reg, d: int, lanes: int) -> None:
    """``q = n / d`` for a signed ``n`` known not negative: a high multiply and a shift, no sign fix."""
    m, shift = nonnegative_magic(d)
    _mulhi(cg, q.retype(u32), n.retype(u32), m, False, lanes)
    if shift:
        alu(cg, "shr", lanes, q.retype(u32), [q.retype(u32), Imm(shift, u32)])


def _magic_div(cg, q: Reg, n: Reg, d: int, signed: bool, lanes: int) -> None:
    m, s = magic(d, signed)
    if not signed:
        if m >= 1 << 32:
            raise CodegenUnsupported(f"unsigned division by {d}")
        _mulhi(cg, q.retype(u32), n.retype(u32), m, False, lanes)
        if s:
            alu(cg, "shr", lanes, q.retype(u32), [q.retype(u32), Imm(s, u32)])
        return
    _mulhi(cg, q, n, m, True, lanes)
    if m < 0:
        alu(cg, "add", lanes, q, [q, n])
    if s:
        alu(cg, "asr", lanes, q, [q, Imm(s, s32)])
    t = cg.temp(u32, lanes)
    alu(cg, "shr", lanes, t, [q.retype(u32), Imm(31, u32)])
    alu(cg, "add", lanes, q, [q, t.retype(s32)])


# -- 64-bit integers --------------------------------------------------------------------------

def add64(cg, dst: Reg, base: Reg, off, lanes: int, signed: bool = True) -> None:
    """``dst = base + sext(off)`` with ``dst`` 64-bit per lane (``off`` s32 register or immediate);
    ``base + zext(off)`` where the caller knows ``off`` is not negative (``signed=False``).

    Native on targets with 64-bit integer ALU; else ``addc`` of the low dwords
    (carry into ``acc0``), ``add`` of the carry and the high dword, and (signed)
    the sign of ``off`` added to the high dword.
    """
    if cg.xe.native_int64:
        alu(cg, "add", lanes, Reg(dst.byte, u64, 1), [base.retype(u64, 0), off])
        return
    # whole power-of-two pieces: the carry of a piece's addc is read from its own accumulator channels
    for c, k in pieces(lanes, min(8, cg.xe.max_exec)):
        lo = Reg(dst.byte + 8 * c, u32, 2 if k > 1 else 1)
        hi = Reg(dst.byte + 8 * c + 4, u32, 2 if k > 1 else 1)
        o = off.at(c).retype(u32) if isinstance(off, Reg) else Imm(int(off.value) & 0xFFFFFFFF, u32)
        alu(cg, "addc", k, lo, [Reg(base.byte, u32, 0), o])
        acc = "acc0.0<0;1,0>:ud" if k == 1 else "acc0.0<1;1,0>:ud"
        cg.em.raw(f"(W) add ({k}|M0) {hi.dst(cg.rb)} {acc} {Reg(base.byte + 4, u32, 0).src(cg.rb)}", "int")
        if isinstance(off, Reg):
            if signed:
                t = cg.temp(s32, k)
                alu(cg, "asr", k, t, [off.at(c).retype(s32), Imm(31, s32)])
                alu(cg, "add", k, hi, [hi, t.retype(u32)])
        elif int(off.value) < 0:
            alu(cg, "add", k, hi, [hi, Imm(0xFFFFFFFF, u32)])


def step64(cg, dst: Reg, src: Reg, d: int, lanes: int) -> None:
    """``dst = src + d`` over ``lanes`` 64-bit lanes (``src`` a vector of them; the same registers: in
    place), ``d`` a constant (not negative on a target without 64-bit integer ALU: no sign to add): one
    ``add`` where 64-bit integers are native, else ``addc`` of the low dwords and ``add`` of the carry;
    nothing where ``src`` is ``dst`` and ``d`` is 0."""
    if d == 0:
        if src.byte != dst.byte:
            alu(cg, "mov", 2 * lanes, Reg(dst.byte, u32, 1), [Reg(src.byte, u32, 1)])
        return
    if cg.xe.native_int64:
        alu(cg, "add", lanes, Reg(dst.byte, u64, 1), [Reg(src.byte, u64, 1), Imm(d, s32 if d < 0 else u32)])
        return
    for c, k in pieces(lanes, min(8, cg.xe.max_exec)):
        stride = 2 if k > 1 else 1
        lo, hi = Reg(dst.byte + 8 * c, u32, stride), Reg(dst.byte + 8 * c + 4, u32, stride)
        slo, shi = Reg(src.byte + 8 * c, u32, stride), Reg(src.byte + 8 * c + 4, u32, stride if k > 1 else 0)
        alu(cg, "addc", k, lo, [slo, Imm(d, u32)])
        acc = "acc0.0<0;1,0>:ud" if k == 1 else "acc0.0<1;1,0>:ud"
        cg.em.raw(f"(W) add ({k}|M0) {hi.dst(cg.rb)} {acc} {shi.src(cg.rb)}", "int")


def _int64(cg, e, a, b, out: Reg):
    if e.op is not Op.ADD:
        raise CodegenUnsupported(f"64-bit integer {e.op.name} on a target without 64-bit integer ALU")
    raise CodegenUnsupported("64-bit integer add of two 64-bit values is not lowered yet")


# The lowering of each expression node type: ``(cg, e, dst) -> operand``.
_LOWERINGS = {IntImm: _number, FloatImm: _number, BoolImm: _bool, Var: _var, Load: _load, Broadcast: _broadcast,
              Ramp: _ramp_into, Cast: _cast, Unary: _unary, Binary: _binary, Ternary: _ternary}
