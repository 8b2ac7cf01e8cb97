"""Weight decompression in registers (seed 002): integer B tiles turned into the FMA's float operand.

Each reduction iteration loads the thread's B tile as it is in memory (``b_raw``, 8-bit, memory order,
block messages) and the group's scale and zero-point rows for the tile's N columns (``b_scale``,
``b_zp``: one row, the thread's K tile lies in one group), then writes ``b`` in the FMA's register
layout (dpas's VNNI pairs of K) in the ``fpmath`` type. The ``decompress`` knob picks how, the seed's
steps:

=============  =====================================================================  ==================
mode           per weight                                                             seed 002
=============  =====================================================================  ==================
``cvt``        ``f = f16(w)``, then ``(f - zp) * s``: a subtract and a multiply      TRY1, TRY2.0
``mad``        ``f = f16(w)``, then ``mad(-zs, f, s)`` with ``zs = f16(zp * s)``      TRY2.1
               once per row
``denorm``     ``u16(w)`` read as f16 is ``w * 2^-24``; ``* 32768`` makes it           TRY2.2
               ``w * 2^-9``, then ``mad(-zs, f, s * 512)``
``denorm_sub`` the same ``w * 2^-9``, then ``mad(-zp, f, 512)`` and ``* s``             TRY2.3
=============  =====================================================================  ==================

4-bit weights (``u4``, ``s4``) load as their bytes (``b_raw`` holds pairs, :mod:`.packed`) and unpack
straight into ``b`` as 16-bit integers, a nibble a lane: ``w & 15`` and ``w >> 4`` (signed: ``(w << 12) >> 12``
and an arithmetic ``>> 4`` of the byte read as ``s8``); ``cvt`` and ``mad`` then convert ``b`` in place, the
denormal modes read those 16 bits as they are. 4-bit zero points unpack their row the same way (``b_zp`` as
16-bit integers from the bytes of ``b_zp_raw``).

The row math (``zs``, ``s * 512``, the zero point as f16) runs once per tile on the N row and is spread
into ``*_pairs`` buffers holding one K pack of B's layout, so every step over ``b`` is ``lanes``
elements of ``b`` against the same offsets of a pair buffer (the knob's ``.lanes``, seed TRY2.0's
"decompression concurrency"). ``zs`` rounded to f16 and the scale times 512 are the seed's accuracy
caveats; :func:`kdd.core.interp.check.default_tol` widens the check's tolerance by them.
"""
from __future__ import annotations

from dataclasses import replace

from kdd.core.ir.expr import Broadcast, FloatImm, IntImm, Load, Op, Ternary, var
from kdd.core.ir.funcs import SendOp
from kdd.core.ir.stmt import Group, Stmt, Store, seq
from kdd.core.ir.types import Type, f16, s8, s16, s32, u8, u16, u64
from kdd.core.config.decompress import RAW_LOAD, Decompress
from kdd.core.layout.layout import Block, Layout
from kdd.core.layout.view import View
from kdd.core.problem.decompression import SCALES, ZERO_POINTS, Decompression

from .errors import BuildError
from .kernel import KernelArg
from .loads import MessageRules, contiguous_role, inner_last, transfer
from kdd.core.ir.names import Names
from .origin import Origin
from .packed import byte_access, halved
from .tile import MatrixDim, RegTensor, TileAccess, row_major

DENORM_UP = 32768.0   # u16 bits w read as f16 are w * 2^-24 (a denormal); * 2^15 gives w * 2^-9
SCALE_UP = 512.0      # and 2^9 brings it back


class Decompressor:
    """The statements and buffers of one thread's B decompression (see the module docstring).

    ``b``: the FMA's B tile (``fpmath`` type, its layout, a whole buffer: offset 0); ``access``: B's tile in
    the weights (GEMM ``k x n`` view); ``k_tile``: the thread's K extent, which must lie in one group."""

    def __init__(self, d: Decompression, choice: Decompress, b: RegTensor, access: TileAccess,
                 k_tile: int, weights: Type, rules: MessageRules, names: Names):
        if not (isinstance(b.offset, int) and b.offset == 0):
            raise ValueError("a decompressed B tile is a whole register buffer")
        self.d, self.b, self.rules, self.names = d, b, rules, names
        self.choice = Decompress(choice.mode, choice.lanes or rules.simd, choice.bufs)
        if choice.mode.startswith("denorm") and (weights.is_signed or d.math != f16):
            raise BuildError(f"decompress={choice.mode} reads u8 bits as an f16 denormal: it needs u8 weights "
                             f"and fpmath f16 (cvt and mad take any)", knob="decompress")
        if not d.per_oc and d.group_k % k_tile:
            raise BuildError(f"the thread's K tile ({k_tile}) must divide the scale group ({d.group_k}): one scale "
                             f"row per tile", knob="iter")
        self.origin = Origin("decompress", "decompress")
        bt, _, np_ = b.layout.dims
        self.weights = weights
        self.packed = byte_access(access, "wei").role if weights.scalar.is_packed else None
        raw_access = self.raw_source(access)
        raw_dims = b.layout.dims if self.packed is None else halved(b.layout.dims, self.packed)
        self.raw = RegTensor(names.fresh("b_raw", u64), _raw_layout(weights, raw_dims, raw_access), 0, b.roles)
        self.scale_row = RegTensor(names.fresh("b_scale", u64), row_major(d.scale, (bt, 1, np_)), 0, b.roles)
        self.zp_row, self.zp_raw = None, None
        if d.zero_point is not None:
            zp = d.zero_point
            if zp.scalar.is_packed:  # the row's bytes, unpacked into 16-bit integers
                zp = s16 if zp.is_signed else u16
                self.zp_raw = RegTensor(names.fresh("b_zp_raw", u64), row_major(u8, (bt, 1, np_ // 2)), 0, b.roles)
            self.zp_row = RegTensor(names.fresh("b_zp", u64), row_major(zp, (bt, 1, np_)), 0, b.roles)
        self.pack = _pack(b.layout)
        self.pairs = {name: RegTensor(names.fresh(f"b_{name}_pairs", u64), self.pack, 0, b.roles)
                      for name in self._pair_names()}
        self.args = self._views(access)

    # -- what it needs ---------------------------------------------------------------------------
    def _pair_names(self) -> tuple[str, ...]:
        names = ("scale", "zp") if self.d.zero_point is not None else ("scale",)
        # denorm_sub's mad multiplies by 512 from a register (a ternary's src1 takes no immediate): kept
        # once, as the seed keeps it in r2.0, rather than moved before every mad
        return names + ("up",) if self.choice.mode == "denorm_sub" and self.d.zero_point is not None else names

    @property
    def buffers(self) -> list[RegTensor]:
        """Every register buffer besides ``b``, for the builder's allocations."""
        rows = [self.raw, self.scale_row] + [r for r in (self.zp_raw, self.zp_row) if r is not None]
        return rows + list(self.pairs.values())

    def raw_source(self, access: TileAccess) -> TileAccess:
        """The access the raw tile is loaded through: B's own, or the bytes of 4-bit weights."""
        return access if self.packed is None else byte_access(access, "wei").access

    def raw_rules(self, rules: MessageRules) -> MessageRules:
        """The raw tile's message rules: 4-bit rows are half the bytes of 8-bit ones, so a row of 16 bytes
        (32 weights, a dpas K step) still counts as a block row, which vector messages then gather."""
        if self.packed is None:
            return rules
        return replace(rules, min_block_bytes=min(rules.min_block_bytes, 16))

    def _views(self, access: TileAccess) -> list[tuple[KernelArg, TileAccess]]:
        """Kernel arguments of the scales (and zero points) and the accesses of their rows: a view over B's
        view dims reading ``[k / gk, n / gn]`` of a row-major ``[ceil(K / gk), ceil(N / gn)]`` tensor."""
        view = access.view
        k_tensor, n_tensor = ("k", "n") if "n" in dict(view.tensor_dims) else (None, "oc")  # GEMM or conv
        n_at = view.tensor_dim_index(n_tensor)
        N = view.tensor_dims[n_at][1]
        column = view.mapping[n_at]
        if "g" in dict(view.tensor_dims):  # a grouped convolution's output channels: g * OC/g + oc
            g_at = view.tensor_dim_index("g")
            column, N = view.mapping[g_at] * N + column, view.tensor_dims[g_at][1] * N
        if self.d.per_oc:
            rows, cols = self.d.groups(1, N)
            k_row, k_mask = IntImm.make(s32, 0), None
        else:
            k_at = view.tensor_dim_index(k_tensor)
            rows, cols = self.d.groups(view.tensor_dims[k_at][1], N)
            k_row, k_mask = view.mapping[k_at] // self.d.group_k, view.masks[k_at]
        k_dim = MatrixDim(((access.roles[1].dims[-1][0], 1),))
        roles = (access.roles[0], k_dim, access.roles[2])
        out = []
        for name, dtype in ((SCALES, self.d.scale), (ZERO_POINTS, self.d.zero_point)):
            if dtype is None:
                continue
            layout = Layout.dense(dtype, (rows, cols), [(0, rows), (1, cols)])
            # a column per N (groups of 1) maps N as it is, so the row is one block message
            columns = column if self.d.group_n == 1 else column // self.d.group_n
            v = View(name, name, view.dims, (("kg", rows), ("ng", cols)), (k_row, columns),
                     (k_mask, view.masks[n_at]), layout)
            arg = KernelArg(name, var(name, u64), dtype, layout, v.tensor_dims, "input")
            row = TileAccess(v, arg.var, "global", roles, access.starts, access.bounded, access.facts)
            out.append((arg, byte_access(row, name).access if dtype.scalar.is_packed else row))
        return out

    # -- the statements -------------------------------------------------------------------------
    def statements(self, load_raw: Stmt) -> Stmt:
        """``load_raw`` (the raw tile's load), the rows' loads and math, the conversion into ``b``."""
        rows = [self.scale_row] + ([self.zp_raw or self.zp_row] if self.zp_row is not None else [])
        loads = [transfer(SendOp.LOAD, acc, reg, self.rules, self.names, Origin("decompress.rows", "decompress"))
                 for (_, acc), reg in zip(self.args, rows)]
        unpack_zp = [] if self.zp_raw is None else \
            _unpack(self.zp_raw, self.zp_row, 2, self.d.zero_point.is_signed, self.choice.lanes, self.origin)
        if self.choice.bufs == 2:  # the load the ping-pong pass moves an iteration ahead
            load_raw = Group.make(RAW_LOAD, load_raw, origin=Origin("decompress.raw", "decompress"))
        return seq(load_raw, *loads, *unpack_zp, *self._rows(), *self._convert(), *self._chunks())

    def _rows(self) -> list[Stmt]:
        """The pair buffers from the rows: each value of the row written to every K of the pack."""
        mode, t = self.choice.mode, self.d.math
        n = self.scale_row.layout.dims[2]
        def row(reg: RegTensor):  # ``count`` values of a row from column ``at``, in the math type
            return lambda count, at: Load.make(Type(reg.dtype.scalar, count), reg.buf, at * reg.dtype.size).cast(t)
        s = row(self.scale_row)
        z = row(self.zp_row) if self.zp_row is not None else None
        values = {"scale": s}
        # the mad modes add their pair buffer: it holds the negated zs (or zero point), so the mad's
        # addend needs no negation (a ternary's src0 takes no source modifier in kdd's Xe lowering)
        if mode in ("mad", "denorm") and z is not None:
            values["zp"] = lambda lanes, at: -(z(lanes, at) * s(lanes, at))  # zs, rounded to the math type
        elif mode == "denorm_sub" and z is not None:
            values["zp"] = lambda lanes, at: -z(lanes, at)
        elif z is not None:
            values["zp"] = z
        if mode == "denorm":
            values["scale"] = lambda lanes, at: s(lanes, at) * FloatImm.make(t, SCALE_UP)
        if "up" in self.pairs:
            values["up"] = lambda lanes, at: Broadcast.make(FloatImm.make(t, SCALE_UP), lanes)
        out = []
        for name, value in values.items():
            out += _spread(self.pairs[name], self.pack, n, value, self.choice.lanes, self.origin)
        return out

    def _convert(self) -> list[Stmt]:
        """The raw tile into ``b``'s layout: converted to the math type, or (denormal modes) zero-extended
        to 16 bits, whose bits ``b`` is then read as. One move per run of N columns whose raw and ``b``
        offsets both step evenly (at most ``lanes``, and 16: a VNNI row of f16 holds 16 columns): a byte
        row into every other f16 of a VNNI row."""
        import numpy as np

        to = u16 if self.choice.mode.startswith("denorm") else self.d.math
        raw, b = self.raw.layout, self.b.layout
        bt, kp, np_ = b.dims
        lanes = min(self.choice.lanes, 16)
        if self.packed is not None:
            wide = s16 if self.weights.is_signed else u16
            unpacked = RegTensor(self.b.buf, Layout(wide, b.dims, b.blocks), 0, self.b.roles)
            out = _unpack(self.raw, unpacked, self.packed, self.weights.is_signed, lanes, self.origin)
            return out if to == u16 else out + self._widen(wide)
        out = []
        for bi in range(bt):
            for k in range(kp):
                idx = np.array([[bi, k, c] for c in range(np_)])
                for run, r0, rs, b0, bs in _even_runs(raw.offsets_of(idx), b.offsets_of(idx), lanes):
                    value = Load.make(Type(raw.dtype.scalar, run), self.raw.buf, r0 * raw.dtype.size,
                                      stride=rs * raw.dtype.size).cast(Type(to.scalar, run))
                    out.append(Store.make(self.b.buf, b0 * to.size, value, stride=bs * to.size,
                                          origin=self.origin))
        return out

    def _widen(self, wide: Type) -> list[Stmt]:
        """``b``'s unpacked 16-bit integers converted in place into the math type, ``lanes`` at a time."""
        t, lanes = self.d.math, self.choice.lanes
        return [Store.make(self.b.buf, off * t.size, Load.make(Type(wide.scalar, lanes), self.b.buf, off * t.size)
                           .cast(Type(t.scalar, lanes)), origin=self.origin)
                for off in range(0, self.b.layout.padded_elems(), lanes)]

    def _chunks(self) -> list[Stmt]:
        """``b`` rescaled ``lanes`` elements at a time against the same offsets of the pair buffers."""
        import numpy as np

        t, lanes, mode = self.d.math, self.choice.lanes, self.choice.mode
        layout = self.b.layout
        bt, kp, np_ = layout.dims
        idx = np.stack(np.meshgrid(np.arange(bt), np.arange(kp), np.arange(np_), indexing="ij"), -1).reshape(-1, 3)
        where = layout.offsets_of(idx)
        coords = np.empty((layout.padded_elems(), 3), dtype=np.int64)
        coords[where] = idx
        pack_k = self.pack.dims[1]
        at_pack = self.pack.offsets_of(np.stack([coords[:, 0], coords[:, 1] % pack_k, coords[:, 2]], -1))
        out = []
        pairs = self.pairs
        for start in range(0, layout.padded_elems(), lanes):
            p0 = int(at_pack[start])
            if not np.array_equal(at_pack[start:start + lanes], p0 + np.arange(lanes)):
                raise BuildError(f"decompression lanes {lanes} cross the pattern of B's layout; take fewer",
                                 knob="decompress")
            vec = Type(t.scalar, lanes)
            off = start * t.size
            f = Load.make(vec, self.b.buf, off)
            sc = Load.make(vec, pairs["scale"].buf, p0 * t.size)
            zp = Load.make(vec, pairs["zp"].buf, p0 * t.size) if "zp" in pairs else None
            if mode.startswith("denorm"):
                f = f * FloatImm.make(t, DENORM_UP)
            if mode == "cvt":
                value = (f - zp) * sc if zp is not None else f * sc
            elif mode in ("mad", "denorm"):
                value = Ternary.make(Op.MAD, zp, f, sc) if zp is not None else f * sc
            elif zp is not None:  # denorm_sub: (f * 512 - zp) * s
                value = Ternary.make(Op.MAD, zp, f, Load.make(vec, pairs["up"].buf, p0 * t.size)) * sc
            else:
                value = f * FloatImm.make(t, SCALE_UP) * sc
            out.append(Store.make(self.b.buf, off, value, origin=self.origin))
        return out


def _even_runs(src, dst, lanes: int):
    """``(count, src offset, src step, dst offset, dst step)`` of consecutive entries of the offset
    sequences ``src`` and ``dst`` whose offsets both step evenly, at most ``lanes`` each (a step of 1 for
    a run of one)."""
    n, c = len(src), 0
    while c < n:
        rs = int(src[c + 1] - src[c]) if c + 1 < n else 1
        ds = int(dst[c + 1] - dst[c]) if c + 1 < n else 1
        run = 1
        while c + run < n and run < lanes and src[c + run] - src[c + run - 1] == rs and \
                dst[c + run] - dst[c + run - 1] == ds:
            run += 1
        yield run, int(src[c]), rs if run > 1 else 1, int(dst[c]), ds if run > 1 else 1
        c += run


def _unpack(src: RegTensor, dst: RegTensor, role: int, signed: bool, lanes: int, origin: Origin) -> list[Stmt]:
    """``dst`` (16-bit integers) from the 4-bit pairs in ``src``'s bytes, whose matrix dim ``role`` counts
    pairs (:mod:`.packed`): element ``i`` of that dim is nibble ``i % 2`` of byte ``i / 2``. A run of a
    nibble's elements whose byte and ``dst`` offsets step evenly is one shift or mask."""
    import numpy as np

    dims = dst.layout.dims
    idx = np.indices(dims).reshape(len(dims), -1).T
    pair = idx.copy()
    pair[:, role] //= 2
    so, do = src.layout.offsets_of(pair), dst.layout.offsets_of(idx)
    byte, wide = (s8, s16) if signed else (u8, u16)
    out = []
    for high in (0, 1):
        sel = idx[:, role] % 2 == high
        order = np.argsort(do[sel], kind="stable")
        for run, s0, ss, d0, ds in _even_runs(so[sel][order], do[sel][order], lanes):
            w = Load.make(Type(byte.scalar, run), src.buf, s0, stride=ss).cast(Type(wide.scalar, run))
            value = w >> 4 if high else (w << 12) >> 12 if signed else w & 15
            out.append(Store.make(dst.buf, d0 * wide.size, value, stride=ds * wide.size, origin=origin))
    return out


def _spread(dst: RegTensor, pack: Layout, n: int, value, lanes: int, origin: Origin) -> list[Stmt]:
    """``dst[b, j, c] = value(c)`` for every K ``j`` of the pack: runs of columns whose offsets step
    evenly, at most ``lanes`` a store (``value(count, first_column)`` gives the vector)."""
    import numpy as np

    t = pack.dtype
    out = []
    bt, kpack, _ = pack.dims
    for b in range(bt):
        for j in range(kpack):
            offs = pack.offsets_of(np.array([[b, j, c] for c in range(n)]))
            for run, c, _, at, step in _even_runs(np.arange(n), offs, lanes):
                out.append(Store.make(dst.buf, at * t.size, value(run, b * n + c), stride=step * t.size,
                                      origin=origin))
    return out


def _raw_layout(weights: Type, dims: tuple[int, int, int], access: TileAccess) -> Layout:
    """The raw bytes' register layout. Weights with N contiguous (``ab``) are rows of K as memory holds
    them: a byte row converts into every other f16 of a VNNI row. Weights with K contiguous (``ba``: the
    keys of an attention) are columns of ``DWORD`` K bytes per N row, as 2D block loads 4 bytes wide land
    them: each K pair of a column is two bytes of every 4, one region ``<4;2,1>`` for a whole VNNI row.
    4-bit weights are these layouts of their bytes (``dims`` count pairs along the packed dim)."""
    order = inner_last(contiguous_role(access.view, access.roles))
    bt, kp, np_ = dims
    weights = u8 if weights.scalar.is_packed else weights
    if order[-1] != 1 or kp % DWORD:
        return row_major(weights, dims, order)
    blocks = [Block(1, DWORD, 1), Block(2, np_, DWORD), Block(1, kp // DWORD, DWORD * np_)]
    if bt > 1:
        blocks.append(Block(0, bt, kp * np_))
    return Layout(weights, dims, tuple(blocks))


DWORD = 4


def _pack(layout: Layout) -> Layout:
    """One K pack of ``layout`` (its innermost K block, 1 when K is not innermost) with its B and N
    blocks in the same order, dense: the pattern every K pack of the tile repeats."""
    blocks = list(layout.blocks)
    pack_k = blocks[0].size if blocks and blocks[0].dim == 1 else 1
    kept = [b for b in blocks if b.dim != 1]
    if pack_k > 1:
        kept.insert(0, Block(1, pack_k, 1))
    stride, out = 1, []
    for b in kept:
        out.append(Block(b.dim, b.size, stride))
        stride *= b.size
    dims = (layout.dims[0], pack_k, layout.dims[2])
    return Layout(layout.dtype, dims, tuple(out))

