"""Register-tensor intrinsics: ``dpas``, ``mad``/``dp4a`` FMAs, reorders, reductions, eltwise.

Reorders are emitted in place, as in oneDNN: the element pairs of the two
layouts are grouped into runs with constant strides (a destination stride of
1, 2 or 4 elements, a source stride the region rules allow) and each run is one
``mov`` (converting types on the way) split by :func:`.isa.alu` where a region
would cross registers illegally. A reduction is a ``mov`` of the first slice
and an ``add`` of every other.

The byte maps are plain lists, not numpy arrays: a register tile has a few
hundred elements, and loading numpy would cost an Xe compile more than
every reorder it lowers.
"""
from __future__ import annotations

from itertools import product

from kdd.core.ir.expr import IntImm
from kdd.core.ir.types import Type, f32, s32, u8, u16, u32

from ..errors import CodegenUnsupported
from . import isa
from .operand import Imm, Reg, Rows, iga_type

DST_STRIDES = (1, 2, 4)
SRC_STRIDES = (0, 1, 2, 4, 8, 16, 32)
_UINT = {1: u8, 2: u16, 4: u32}


def _place(cg, buf, off, what: str) -> int:
    if not isinstance(off, IntImm):
        raise CodegenUnsupported(f"{what}: register offset is not a constant")
    return cg.buf(buf.name).start + off.value


def _aligned(cg, byte: int, what: str) -> int:
    if byte % cg.rb:
        raise CodegenUnsupported(f"{what} does not start at a register boundary")
    return byte // cg.rb


def dpas(cg, x) -> None:
    f = x.func
    a = x.ops
    d = _aligned(cg, _place(cg, a.dst, a.dst_offset, "dpas destination"), "dpas destination")
    s0 = _aligned(cg, _place(cg, a.src0, a.src0_offset, "dpas src0"), "dpas src0")
    s1 = _aligned(cg, _place(cg, a.src1, a.src1_offset, "dpas src1 (B)"), "dpas src1 (B)")
    s2 = _aligned(cg, _place(cg, a.src2, a.src2_offset, "dpas src2 (A)"), "dpas src2 (A)")
    name = "dpasw" if f.is_dpasw else "dpas"
    dt = iga_type(f.dst_type)
    # The target's form says how the sources are read: f32 data multiplied in tf32 is spelled ``:tf32``.
    key = (f.simd, f.src2_type, f.src1_type)
    forms = cg.dpas_forms.get(key)
    if forms is None:
        forms = cg.dpas_forms[key] = cg.target.shapes(fma="dpas", simd=f.simd, a=f.src2_type, b=f.src1_type)
    if not forms:
        raise CodegenUnsupported(f"{cg.target.name} has no SIMD{f.simd} dpas of {f.src2_type} x {f.src1_type}")
    math = forms[0].math
    t1, t2 = (math, math) if math else (iga_type(f.src1_type), iga_type(f.src2_type))
    cg.em.raw(f"(W) {name}.{f.sdepth}x{f.rcount} ({f.simd}|M0) r{d}:{dt} r{s0}:{dt} r{s1}:{t1} r{s2}:{t2}", "xmx")


def vector_fma(cg, x) -> None:
    """``mad`` (``dst = src0 + src1 * src2``) or ``dp4a`` over the call's SIMD lanes."""
    f = x.func
    a = x.ops
    is_mad = type(f).__name__ == "Mad"
    dst_t = f.dst_type if is_mad else s32
    t1 = f.src1_type if is_mad else (u32 if not f.src1_type.is_signed else s32)
    t2 = f.src2_type if is_mad else (u32 if not f.src2_type.is_signed else s32)
    size2 = t2.scalar.size
    stride2 = f.src2_stride // size2 if f.src2_stride else 0
    dst = Reg(_place(cg, a.dst, a.dst_offset, "fma destination"), dst_t.base, 1)
    src0 = Reg(_place(cg, a.src0, a.src0_offset, "fma src0"), dst_t.base, 1)
    src1 = Reg(_place(cg, a.src1, a.src1_offset, "fma src1"), t1.base, 1)
    src2 = Reg(_place(cg, a.src2, a.src2_offset, "fma src2"), t2.base, stride2)
    mark = len(cg.temps)
    src1 = _byte_aligned(cg, src1, f.simd)
    src2 = _byte_aligned(cg, src2, f.simd)
    isa.alu(cg, "mad" if is_mad else "dp4a", f.simd, dst, [src0, src1, src2], ternary=True)
    cg.release_temps(mark)


def _byte_aligned(cg, src: Reg, lanes: int) -> Reg:
    """A byte-typed ternary source where the target can encode it: copied to a temporary when it starts
    at a byte the target's ternary subregister field cannot name (``XeIsa.ternary_byte_align``)."""
    align = cg.xe.ternary_byte_align
    if src.size != 1 or src.byte % align == 0:
        return src
    n = 1 if src.stride == 0 else lanes
    t = cg.temp(src.type, n * max(src.stride, 1))
    isa.alu(cg, "mov", n, t.retype(src.type, src.stride or 1), [src if n > 1 else src.scalar()])
    return Reg(t.byte, src.type, src.stride)


def _stable_order(values: list[int]) -> list[int]:
    """The positions of ``values`` in ascending order of value, equal values in their own order."""
    return sorted(range(len(values)), key=values.__getitem__)


def _runs(dst_bytes: list[int], src_bytes: list[int], dsize: int, ssize: int, top: int):
    """The shorter of the run lists over the pairs in destination order and in source order
    (a VNNI packing is strided in the destination but contiguous in the source)."""
    by_dst = _runs_in(_stable_order(dst_bytes), dst_bytes, src_bytes, dsize, ssize, top)
    if min(src_bytes, default=0) < 0:
        return by_dst
    by_src = _runs_in(_stable_order(src_bytes), dst_bytes, src_bytes, dsize, ssize, top)
    return by_src if len(by_src) < len(by_dst) else by_dst


def _runs_in(order, dst_bytes: list[int], src_bytes: list[int], dsize: int, ssize: int, top: int):
    """Maximal runs ``(dst byte, src byte, count, dst stride, src stride)`` (strides in elements;
    a src stride of -1 marks a run of zeros) over the pairs taken in ``order``."""
    d, s = [dst_bytes[k] for k in order], [src_bytes[k] for k in order]
    i, n, out = 0, len(d), []
    while i < n:
        j = i + 1
        ds = ss = None
        while j < n and j - i < top:
            dd = d[j] - d[j - 1]
            if dd % dsize or dd // dsize not in DST_STRIDES:
                break
            zero = s[i] < 0
            if (s[j] < 0) != zero:
                break
            sd = 0 if zero else s[j] - s[j - 1]
            if not zero and (sd % ssize or sd // ssize not in SRC_STRIDES):
                break
            if ds is None:
                ds, ss = dd, sd
            elif dd != ds or sd != ss:
                break
            j += 1
        count = j - i
        # power-of-two pieces keep execution sizes legal
        while count:
            k = 1 << (count.bit_length() - 1)
            out.append((d[i], s[i], k, (ds or dsize) // dsize, -1 if s[i] < 0 else (ss or 0) // ssize))
            i += k
            count -= k
    return out


def _as_dwords(dst_bytes: list[int], src_bytes: list[int], size: int):
    """A copy of ``size``-byte elements as a copy of dwords, when every destination dword is whole
    and comes from one aligned source dword (halves the moves of a 16-bit transposition)."""
    if size >= 4 or min(src_bytes, default=0) < 0 or len(dst_bytes) * size % 4:
        return None
    per = 4 // size
    order = _stable_order(dst_bytes)
    d, s = [dst_bytes[k] for k in order], [src_bytes[k] for k in order]
    for head in range(0, len(d), per):
        if d[head] % 4 or s[head] % 4:
            return None
        for j in range(1, per):
            if d[head + j] - d[head] != j * size or s[head + j] - s[head] != j * size:
                return None
    return d[::per], s[::per]


def _move_runs(cg, pairs_dst, pairs_src, src_t: Type, dst_t: Type, op: str = "mov") -> None:
    """One ``op`` per run of (destination byte, source byte or -1 for zero) pairs."""
    same = src_t == dst_t
    if same and op == "mov":
        wide = _as_dwords(pairs_dst, pairs_src, src_t.scalar.size)
        if wide is not None:
            pairs_dst, pairs_src, src_t = wide[0], wide[1], u32
            dst_t = u32
    # a same-type copy moves bits as unsigned integers; 8-byte ones (f64 on xehpc) keep their type
    dt = _UINT.get(dst_t.scalar.size, dst_t) if same and op == "mov" else dst_t
    st = _UINT.get(src_t.scalar.size, src_t) if same and op == "mov" else src_t
    runs = _runs(pairs_dst, pairs_src, dst_t.scalar.size, src_t.scalar.size, cg.xe.max_exec)
    if op == "mov" and not (st.is_float and dt.is_int):
        runs = _rows(cg, runs, dt, st)
    for d, s, k, ds, ss in runs:
        if isinstance(ss, Rows):    # a 2D source region (:func:`_rows`), legal as it is
            cg.em.op("mov", k, Reg(d, dt.base, ds), [ss])
            continue
        dst = Reg(d, dt.base, ds)
        if ss < 0:
            isa.move(cg, dst, Imm(0, _UINT[dst_t.scalar.size]) if dt.is_int else Imm(0.0, dt), k)
            continue
        src = Reg(s, st.base, ss if k > 1 else 0)
        if op == "mov" and st.is_float and dt.is_int:
            _round_to_int(cg, dst, src, k)
        elif op == "mov":
            isa.alu(cg, "mov", k, dst, [src], sat=dst_t.is_int and not same)
        else:
            isa.alu(cg, op, k, dst, [Reg(d, dt.base, ds), src])


def _rows(cg, runs: list, dt: Type, st: Type) -> list:
    """``runs`` with consecutive runs of one length, strides and destination stride that continue each
    other in the destination and step by one constant in the source merged into one ``mov`` whose source
    is a 2D region ``<v;w,h>`` (rows of ``w`` elements ``h`` apart, row starts ``v`` apart): a VNNI
    interleave of rows read 4 elements a ``mov`` instead of 2. Each merged ``mov`` reads and writes within
    one register, its width and strides ones the region rules take."""
    out, i, rb, top = [], 0, cg.rb, cg.xe.max_exec
    dsz, ssz = dt.scalar.size, st.scalar.size
    while i < len(runs):
        d0, s0, w, ds, hs = runs[i]
        j, vs = i + 1, None
        if w > 1 and hs in _HSTRIDES:
            while j < len(runs) and (j - i + 1) * w <= top:
                d, s, k, dds, ss = runs[j]
                step = s - runs[j - 1][1]
                if (k, dds, ss) != (w, ds, hs) or d != runs[j - 1][0] + w * ds * dsz or step % ssz \
                        or step // ssz not in _VSTRIDES or (vs is not None and step // ssz != vs):
                    break
                vs = step // ssz
                j += 1
        rows = j - i
        while rows & (rows - 1):        # whole powers of two of rows: legal execution sizes
            rows -= 1
        n = rows * w
        last_src = s0 + ((rows - 1) * (vs or 0) + (w - 1) * hs) * ssz
        if rows > 1 and d0 // rb == (d0 + (n - 1) * ds * dsz) // rb and s0 // rb == last_src // rb:
            out.append((d0, s0, n, ds, Rows(s0, st.base, vs, w, hs)))
            i += rows
        else:
            out.append(runs[i])
            i += 1
    return out


_HSTRIDES = (0, 1, 2, 4)
_VSTRIDES = (0, 1, 2, 4, 8, 16, 32)


def _round_to_int(cg, dst: Reg, src: Reg, k: int) -> None:
    """A reorder's float-to-integer conversion: round to nearest even, saturate, NaN to 0. The
    hardware's float-to-integer ``mov`` truncates toward zero, so ``rnde`` rounds first (into a
    temporary: the source may be read again) and the saturating ``mov`` converts the integral value."""
    mark = len(cg.temps)
    t = cg.temp(src.type, k)
    isa.alu(cg, "rnde", k, t, [src])
    isa.alu(cg, "mov", k, dst, [t], sat=True)
    cg.release_temps(mark)


def _source_bytes(layout, grid: list[tuple[int, ...]], inside: list[bool], base: int,
                  shift: tuple[int, ...] = ()) -> list[int]:
    """Per grid element inside the real dims, the byte of that index (plus ``shift``) in ``layout``
    from ``base``; -1 (a zero) for padding."""
    size = layout.dtype.size
    if shift:
        grid = [tuple(i + k for i, k in zip(idx, shift)) for idx in grid]
    return [base + layout.unchecked_offset(idx) * size if ok else -1 for idx, ok in zip(grid, inside)]


def _source_and_destination(cg, x, what: str):
    """A register-to-register operation's source base byte, and per destination element (padded grid,
    in row-major order): its indices, whether it lies inside the real dims, and its byte."""
    a, dst_l = x.ops, x.func.dst_layout
    sbase = _place(cg, a.src, a.src_offset, f"{what} source")
    dbase = _place(cg, a.dst, a.dst_offset, f"{what} destination")
    grid = list(product(*map(range, dst_l.padded_dims)))
    inside = [all(i < n for i, n in zip(idx, dst_l.dims)) for idx in grid]
    size = dst_l.dtype.size
    return sbase, grid, inside, [dbase + dst_l.unchecked_offset(idx) * size for idx in grid]


def reorder(cg, x) -> None:
    f = x.func
    src_l, dst_l = f.src_layout, f.dst_layout
    sbase, grid, inside, dst_bytes = _source_and_destination(cg, x, "reorder")
    src_bytes = _source_bytes(src_l, grid, inside, sbase)
    if x.ops.dst.name in cg.in_place:
        _in_place(cg, dst_bytes, src_bytes, src_l.dtype, dst_l.dtype)
        return
    _move_runs(cg, dst_bytes, src_bytes, src_l.dtype, dst_l.dtype)


def _in_place(cg, dst_bytes: list[int], src_bytes: list[int], src_t: Type, dst_t: Type) -> None:
    """A reorder whose destination took over its source's registers, one destination register at
    a time: before a register is written, the source data in it that is still to be read (by it
    or by a later register) is saved to a bounce buffer, and reads go there from then on."""
    rb = cg.rb
    dreg = [b // rb for b in dst_bytes]
    order, reads, need = _register_reads(dreg, src_bytes, rb)
    peak = _bounce_registers(order, reads, need)
    bounce = cg.temp(u32, max(peak, 1) * rb // 4, whole=True) if peak else None
    free = [bounce.byte + k * rb for k in range(peak)] if peak else []
    saved: dict[int, int] = {}
    for g in order:
        if need.get(g):
            saved[g] = free.pop()
            isa.alu(cg, "mov", rb // 4, Reg(saved[g], u32, 1), [Reg(g * rb, u32, 1)])
        sel = [k for k, r in enumerate(dreg) if r == g]
        moved = [saved[s // rb] + s % rb if s >= 0 and s // rb in saved else s for s in (src_bytes[k] for k in sel)]
        _move_runs(cg, [dst_bytes[k] for k in sel], moved, src_t, dst_t)
        for r in reads[g]:
            need[r].discard(g)
            if r in saved and not need[r]:
                free.append(saved.pop(r))


def _register_reads(dreg: list[int], src_bytes: list[int], rb: int):
    """The destination registers in order, the source registers each reads, and the destination registers
    that read each source register."""
    order = sorted(set(dreg))
    reads: dict[int, set] = {g: set() for g in order}
    for g, s in zip(dreg, src_bytes):
        if s >= 0:
            reads[g].add(s // rb)
    need: dict[int, set] = {}
    for g in order:
        for r in reads[g]:
            need.setdefault(r, set()).add(g)
    return order, reads, need


def _bounce_registers(order: list[int], reads: dict[int, set], need: dict[int, set]) -> int:
    """How many registers an in-place reorder saves at once (its bounce buffer's size): a register is
    saved before it is written while a destination register still has to read it."""
    live, peak = set(), 0
    pending = {r: set(v) for r, v in need.items()}
    for g in order:
        if pending.get(g):
            live.add(g)
            peak = max(peak, len(live))
        for r in reads[g]:
            pending[r].discard(g)
            if r in live and not pending[r]:
                live.discard(r)
    return peak


def reduce(cg, x) -> None:
    f = x.func
    src_l, dst_l = f.src_layout, f.dst_layout
    if src_l.dtype != dst_l.dtype or not src_l.dtype.is_float and src_l.dtype != s32:
        raise CodegenUnsupported(f"reduce from {src_l.dtype} to {dst_l.dtype}")
    sbase, grid, inside, dst_bytes = _source_and_destination(cg, x, "reduce")
    reduced = product(*(range(src_l.dims[d] if d in f.dims else 1) for d in range(src_l.ndims)))
    for i, combo in enumerate(reduced):
        src_bytes = _source_bytes(src_l, grid, inside, sbase, combo)
        if i == 0:
            _move_runs(cg, dst_bytes, src_bytes, src_l.dtype, dst_l.dtype)
        else:
            _move_runs(cg, [d for d, ok in zip(dst_bytes, inside) if ok],
                       [s for s, ok in zip(src_bytes, inside) if ok], src_l.dtype, dst_l.dtype, op="add")


def eltwise(cg, x) -> None:
    f = x.func
    base = _place(cg, x.ops.buf, x.ops.offset, "eltwise buffer")
    dt = f.dtype
    v = Reg(base, dt, 1)
    n = f.elems
    if f.alg == "relu" and f.alpha == 0:
        isa.alu(cg, "sel", n, v, [v, Imm(0.0, dt)], cmod=("ge", cg.flags.take(min(n, cg.xe.max_exec))))
        return
    if f.alg == "linear":
        isa.alu(cg, "mul", n, v, [v, Imm(float(f.alpha), dt)])
        isa.alu(cg, "add", n, v, [v, Imm(float(f.beta), dt)])
        return
    if f.alg == "square":
        isa.alu(cg, "mul", n, v, [v, v])
        return
    if dt != f32:    # the recipes below compute in f32 registers (and Xe's math unit has no f64 exp/inv)
        raise CodegenUnsupported(f"eltwise {f.alg} on {dt} is not lowered for Xe (relu without alpha, linear and square are)",
                                 "post_ops")
    if f.alg == "abs":
        _abs(cg, v, n)
        return
    if f.alg == "sqrt":
        isa.alu(cg, "math.sqt", n, v, [v])
        return
    recipe = _RECIPES.get("leaky_relu" if f.alg == "relu" else f.alg)
    if recipe is None:
        raise CodegenUnsupported(f"eltwise {f.alg} is not lowered for Xe", "post_ops")
    top = cg.xe.max_exec
    # Scratch vectors a recipe uses, each a whole number of registers (a chunk of at most ``top`` lanes).
    lanes = -(-min(n, top) * 4 // cg.rb) * cg.rb // 4
    t = cg.temp(f32, lanes * _SCRATCH.get(f.alg, 1))
    for c in range(0, n, top):
        recipe(cg, v.at(c), t, min(top, n - c), f) if f.alg not in _SCRATCH else \
            recipe(cg, v.at(c), [t.at(i * lanes) for i in range(_SCRATCH[f.alg])], min(top, n - c), f)


LOG2E = 1.4426950408889634


def _sigmoid_of(cg, x: Reg, t: Reg, k: int, scale: float) -> None:
    """``t = 1 / (1 + exp(scale * x))``: ``math.exp`` is 2^x, so the scale carries log2(e)."""
    isa.alu(cg, "mul", k, t, [x, Imm(scale * LOG2E, f32)])
    isa.alu(cg, "math.exp", k, t, [t])
    isa.alu(cg, "add", k, t, [t, Imm(1.0, f32)])
    isa.alu(cg, "math.inv", k, t, [t])


def _leaky_relu(cg, x, t, k, f):
    isa.alu(cg, "mul", k, t, [x, Imm(float(f.alpha), f32)])
    flag = cg.flags.take(k)
    isa.alu(cg, "cmp", k, None, [x, Imm(0.0, f32)], cmod=("lt", flag))
    isa.alu(cg, "mov", k, x, [t], pred=flag)


def _exp(cg, x, t, k, f):
    isa.alu(cg, "mul", k, t, [x, Imm(LOG2E, f32)])
    isa.alu(cg, "math.exp", k, x, [t])


def _logistic(cg, x, t, k, f):
    _sigmoid_of(cg, x, t, k, -1.0)
    isa.alu(cg, "mov", k, x, [t])


def _swish(cg, x, t, k, f):
    _sigmoid_of(cg, x, t, k, -float(f.alpha))
    isa.alu(cg, "mul", k, x, [x, t])


def _tanh(cg, x, t, k, f):
    # tanh x = 2 sigmoid(2x) - 1
    _sigmoid_of(cg, x, t, k, -2.0)
    isa.alu(cg, "mul", k, t, [t, Imm(2.0, f32)])
    isa.alu(cg, "add", k, x, [t, Imm(-1.0, f32)])


def _gelu_tanh(cg, x, t, k, f):
    # 0.5 x (1 + tanh(u)) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3)
    isa.alu(cg, "mul", k, t, [x, x])
    isa.alu(cg, "mul", k, t, [t, Imm(0.044715, f32)])
    isa.alu(cg, "mul", k, t, [t, x])
    isa.alu(cg, "add", k, t, [t, x])
    _sigmoid_of(cg, t, t, k, -2.0 * 0.7978845608028654)
    isa.alu(cg, "mul", k, x, [x, t])


def _elu(cg, x, t, k, f):
    isa.alu(cg, "mul", k, t, [x, Imm(LOG2E, f32)])
    isa.alu(cg, "math.exp", k, t, [t])
    isa.alu(cg, "add", k, t, [t, Imm(-1.0, f32)])
    isa.alu(cg, "mul", k, t, [t, Imm(float(f.alpha), f32)])
    flag = cg.flags.take(k)
    isa.alu(cg, "cmp", k, None, [x, Imm(0.0, f32)], cmod=("le", flag))
    isa.alu(cg, "mov", k, x, [t], pred=flag)


# erf by Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7 over the reals, as oneDNN's kernels
# approximate it): erf z = 1 - (a1 t + ... + a5 t^5) exp(-z^2), t = 1 / (1 + p z), for z >= 0, odd in z.
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def _gelu_erf(cg, x, scratch, k, f):
    # 0.5 x (1 + erf(x / sqrt 2)) with q = poly(t) exp(-z^2), z = |x| / sqrt 2: x - 0.5 x q for x >= 0,
    # 0.5 x q below (erf is odd).
    t, w, q = scratch
    isa.alu(cg, "and", k, t.retype(u32), [x.retype(u32), Imm(0x7FFFFFFF, u32)])
    isa.alu(cg, "mul", k, t, [t, Imm(0.7071067811865476, f32)])                 # z
    isa.alu(cg, "mul", k, w, [t, t])
    isa.alu(cg, "mul", k, w, [w, Imm(-LOG2E, f32)])
    isa.alu(cg, "math.exp", k, w, [w])                                          # exp(-z^2)
    isa.alu(cg, "mul", k, t, [t, Imm(_ERF_P, f32)])
    isa.alu(cg, "add", k, t, [t, Imm(1.0, f32)])
    isa.alu(cg, "math.inv", k, t, [t])                                          # t
    isa.alu(cg, "mul", k, q, [t, Imm(_ERF_A[4], f32)])
    for a in reversed(_ERF_A[:4]):
        isa.alu(cg, "add", k, q, [q, Imm(a, f32)])
        isa.alu(cg, "mul", k, q, [q, t])
    isa.alu(cg, "mul", k, q, [q, w])
    isa.alu(cg, "mul", k, q, [q, x])
    isa.alu(cg, "mul", k, q, [q, Imm(0.5, f32)])                                # 0.5 x q
    isa.alu(cg, "add", k, t, [x, q.negated()])
    flag = cg.flags.take(k)
    isa.alu(cg, "cmp", k, None, [x, Imm(0.0, f32)], cmod=("ge", flag))
    isa.alu(cg, "sel", k, x, [t, q], pred=flag)


_RECIPES = {"leaky_relu": _leaky_relu, "exp": _exp, "logistic": _logistic, "swish": _swish, "tanh": _tanh,
            "gelu_tanh": _gelu_tanh, "gelu_erf": _gelu_erf, "elu": _elu}
_SCRATCH = {"gelu_erf": 3}   # recipes that take a list of scratch vectors instead of one


def _abs(cg, v: Reg, n: int) -> None:
    isa.alu(cg, "and", n, v.retype(u32), [v.retype(u32), Imm(0x7FFFFFFF, u32)])
