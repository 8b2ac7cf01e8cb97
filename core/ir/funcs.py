"""IR functions: the hardware operations a ``FuncCall`` statement invokes.

A function is an immutable, hashable description (which message, which FMA
shape); the call supplies the operands as expressions. Each function documents
its argument list; ``docs/ir-semantics.md`` states what each one computes and
the interpreter is its executable form. Buffer operands are ``Var`` buffers
plus byte offsets, so a call reads and writes memory, never expression values.
"""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass
from enum import Enum

from .expr import Broadcast, BoolImm
from .types import Type, f32


# Each function class's named tuple of operands (``Func.operands``), by the class that declares them.
_OPERAND_TUPLES: dict[type, type] = {}


class Func:
    """Base of IR functions.

    ``OPERANDS`` names the call's arguments in order; :meth:`operands` gives
    them as a named tuple, so passes read ``call.ops.mem_offset`` instead of a
    position, and ``NARGS`` (the exact argument count) follows from it.
    """

    OPERANDS: tuple[str, ...] = ()
    NAME = "func"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "OPERANDS" in cls.__dict__ or not hasattr(cls, "_operands_owner"):
            cls._operands_owner = cls  # the class whose named tuple of operands this one's calls use
            cls.NARGS = len(cls.OPERANDS)

    def check_args(self, args) -> None:
        if len(args) != self.NARGS:
            raise TypeError(f"{self} takes {self.NARGS} arguments ({', '.join(self.OPERANDS)}), "
                            f"got {len(args)}")

    def operands(self, args) -> tuple:
        """``args`` as this function's named tuple of operands."""
        owner = self._operands_owner
        named = _OPERAND_TUPLES.get(owner)
        if named is None:  # made on first use: a compile calls a few of the functions defined here
            named = _OPERAND_TUPLES[owner] = namedtuple(f"{owner.__name__}Operands", owner.OPERANDS)
        return named(*args)

    def __str__(self) -> str:
        return self.NAME


# -- synchronization -------------------------------------------------------------------------

@dataclass(frozen=True)
class Barrier(Func):
    """Thread-group barrier (signal + wait); orders SLM accesses of the group."""

    NAME = "barrier"


@dataclass(frozen=True)
class BarrierSignal(Func):
    """Split barrier: signal arrival (Xe ``barriermsg``); pairs with ``BarrierWait``."""

    NAME = "barrier_signal"


@dataclass(frozen=True)
class BarrierWait(Func):
    """Split barrier: wait until every thread of the group signalled."""

    NAME = "barrier_wait"


@dataclass(frozen=True)
class Fence(Func):
    """Memory fence over ``scope`` (``"slm"`` or ``"global"``; ``"async"``: this warp's shared-memory
    stores made visible to the async proxy, sm_90's ``wgmma`` and tensor copies)."""

    scope: str = "slm"

    def __str__(self) -> str:
        return f"fence.{self.scope}"


# -- memory ----------------------------------------------------------------------------------

class SendOp(Enum):
    LOAD = "load"
    STORE = "store"
    ATOMIC_ADD = "atomic_add"
    ATOMIC_FETCH_ADD = "atomic_fetch_add"  # integers: adds the register values, returns the old memory values
    PREFETCH = "prefetch"


class SendKind(Enum):
    BLOCK = "block"          # contiguous bytes from one address
    SCATTERED = "scattered"  # one address per lane (gather/scatter)


@dataclass(frozen=True)
class Send(Func):
    """A memory message: ``elems`` elements of ``type`` between memory and registers.

    Operands: ``(mem, mem_offset, reg, reg_offset, mask)``.
    ``mem_offset`` is a byte offset; for ``SCATTERED`` it is a vector (one byte
    offset per lane). ``mask`` is a bool (vector for scattered: one per lane) selecting
    the elements that are accessed: as on the hardware, masked-off loads leave
    their register bytes unchanged and masked-off stores write nothing. Register data is dense: element i at
    ``reg_offset + i * type.size``. ``space`` is ``"global"`` or ``"slm"``. ``ATOMIC_ADD`` adds the
    register elements into memory; ``ATOMIC_FETCH_ADD`` (32-bit integers) does the same and replaces each
    register element by the memory value it found (threads that add to one element see each other's adds
    in some order, one at a time: a counter gives each a different old value).

    ``vec`` (scattered only) is the vector size of the message (LSC ``d32x8``): each of the
    ``lanes = elems // vec`` lanes moves ``vec`` consecutive elements from its address, element
    ``v`` of lane ``l`` at memory ``mem_offset[l] + v * type.size`` and at register element
    ``v * lanes + l`` (the hardware's order: one register block per vector element).
    """

    op: SendOp
    kind: SendKind
    space: str
    type: Type
    elems: int
    vec: int = 1
    OPERANDS = ("mem", "mem_offset", "reg", "reg_offset", "mask")

    def __post_init__(self):
        if self.vec < 1 or self.elems % self.vec or (self.vec > 1 and self.kind is not SendKind.SCATTERED):
            raise ValueError(f"a send of {self.elems} elements cannot have vector size {self.vec} "
                             "(vectors: scattered messages, a divisor of the elements)")

    @property
    def lanes(self) -> int:
        """Addresses of the message: one for a block, ``elems // vec`` for a scattered one."""
        return self.elems // self.vec if self.kind is SendKind.SCATTERED else 1

    def __str__(self) -> str:
        vec = f".vec{self.vec}" if self.vec > 1 else ""
        return f"send.{self.op.value}.{self.kind.value}.{self.space}.{self.type}x{self.elems}{vec}"


@dataclass(frozen=True)
class Send2D(Func):
    """A 2D block load (Xe-HPC ``load_block2d``): ``array`` blocks of ``height`` rows of ``width``
    elements of ``type``, side by side, from a surface of rows in global memory ``mem``.

    Operands (printed by name): ``(mem, base, surface_width, surface_height, pitch, x, y, reg,
    reg_offset)``. The surface starts at byte ``base`` of ``mem``, has ``surface_height`` rows of
    ``surface_width`` bytes, ``pitch`` bytes apart. Block ``a``'s element ``(r, c)`` is the surface's
    element at column ``x + a * width + c`` (elements) of row ``y + r``, zero where that lies outside
    the surface (``x``, ``y`` may be negative); it lands at register byte
    ``reg_offset + ((a * height + r) * width + c) * type.size``. The IR takes the blocks whose rows are
    a power of two bytes and, with ``array > 1``, whose blocks fill whole registers, where the
    hardware's padding (rows to a power of two, blocks to a register) is none; the verifier checks
    that and the target's limits.
    """

    type: Type
    width: int
    height: int
    array: int = 1
    op = SendOp.LOAD
    space = "global"
    NAMED = True
    OPERANDS = ("mem", "base", "surface_width", "surface_height", "pitch", "x", "y", "reg", "reg_offset")

    def __post_init__(self):
        if min(self.width, self.height, self.array) < 1:
            raise ValueError(f"a 2D block of {self.array} x {self.width} x {self.height} elements")

    @property
    def elems(self) -> int:
        """Elements the message moves (its register bytes over the element size)."""
        return self.width * self.height * self.array

    def __str__(self) -> str:
        return f"load_block2d.{self.space}.{self.type}.{self.width}x{self.height}x{self.array}"


def always_enabled(mask) -> bool:
    """Whether a send's ``mask`` is true for every element (``true`` or a broadcast of it)."""
    while isinstance(mask, Broadcast):
        mask = mask.a
    return isinstance(mask, BoolImm) and mask.value


def never_enabled(mask) -> bool:
    """Whether a send's ``mask`` is false for every element (``false`` or a broadcast of it)."""
    while isinstance(mask, Broadcast):
        mask = mask.a
    return isinstance(mask, BoolImm) and not mask.value


# -- multiply-accumulate -------------------------------------------------------------------

@dataclass(frozen=True)
class Mad(Func):
    """``dst[i] = src0[i] + src1[i] * src2[j]`` over ``simd`` lanes (Xe ``mad``; sm_90 ``fma``).

    Operands: ``(dst, dst_offset, src0, src0_offset, src1, src1_offset, src2, src2_offset)``.
    ``src2_stride`` is 0 when src2 is a broadcast scalar (the usual GEMM form).
    """

    simd: int
    dst_type: Type
    src1_type: Type
    src2_type: Type
    src2_stride: int = 0
    OPERANDS = ("dst", "dst_offset", "src0", "src0_offset", "src1", "src1_offset", "src2", "src2_offset")

    def __str__(self) -> str:
        return f"mad.{self.simd}.{self.dst_type}.{self.src1_type}.{self.src2_type}"


@dataclass(frozen=True)
class Dp4a(Func):
    """``dst[i] = src0[i] + dot4(src1[i], src2[j])`` on packed 8-bit quadruples (s32 accumulate).

    Operands as for ``Mad``.
    """

    simd: int
    src1_type: Type
    src2_type: Type
    src2_stride: int = 0
    OPERANDS = ("dst", "dst_offset", "src0", "src0_offset", "src1", "src1_offset", "src2", "src2_offset")

    def __str__(self) -> str:
        return f"dp4a.{self.simd}.{self.src1_type}.{self.src2_type}"


@dataclass(frozen=True)
class Dpas(Func):
    """Xe systolic ``dpas.sdepth x rcount``: ``dst(M=rcount x N=simd) = src0 + src1 * src2``.

    Operands: ``(dst, dst_offset, src0, src0_offset, src1, src1_offset, src2, src2_offset)``.
    src1 is the B operand (K x N, packed K-pairs/quads per dword), src2 the A
    operand (M x K), per the hardware's operand order (the builder's transposed
    form passes the GEMM's A as src1 and its B as src2: ``C^T = B^T A^T``).
    ``is_dpasw`` marks the dpasw form that shares src2 between thread pairs.
    """

    sdepth: int
    rcount: int
    simd: int
    dst_type: Type
    src1_type: Type
    src2_type: Type
    is_dpasw: bool = False
    OPERANDS = ("dst", "dst_offset", "src0", "src0_offset", "src1", "src1_offset", "src2", "src2_offset")

    def __str__(self) -> str:
        name = "dpasw" if self.is_dpasw else "dpas"
        return f"{name}.{self.sdepth}x{self.rcount}.{self.dst_type}.{self.src1_type}.{self.src2_type}"


@dataclass(frozen=True)
class Mma(Func):
    """NVIDIA warp ``mma.sync.m{m}n{n}k{k}``: ``D(m x n) = A(m x k) * B(k x n) + C``.

    Operands: ``(d, d_offset, a, a_offset, b, b_offset, c, c_offset)``;
    fragments are distributed over the warp's 32 lanes as the PTX ISA fixes.
    """

    m: int
    n: int
    k: int
    a_type: Type
    b_type: Type
    c_type: Type
    OPERANDS = ("d", "d_offset", "a", "a_offset", "b", "b_offset", "c", "c_offset")

    def __str__(self) -> str:
        return f"mma.m{self.m}n{self.n}k{self.k}.{self.c_type}.{self.a_type}.{self.b_type}"


# -- data movement and elementwise -------------------------------------------------------------

@dataclass(frozen=True)
class Reorder(Func):
    """Copies a register tensor from ``src_layout`` to ``dst_layout`` (with type conversion).

    Operands: ``(src, src_offset, dst, dst_offset)``.
    """

    src_layout: object
    dst_layout: object
    OPERANDS = ("src", "src_offset", "dst", "dst_offset")

    def __str__(self) -> str:
        return f"reorder[{_layouts(self.src_layout, self.dst_layout)}]"


@dataclass(frozen=True)
class Reduce(Func):
    """Sums ``src_layout`` over the dims in ``dims`` into ``dst_layout``. Operands as ``Reorder``."""

    src_layout: object
    dst_layout: object
    dims: tuple[int, ...]
    OPERANDS = ("src", "src_offset", "dst", "dst_offset")

    def __str__(self) -> str:
        return f"reduce[{_layouts(self.src_layout, self.dst_layout)} over {','.join(map(str, self.dims))}]"


def _layouts(src, dst) -> str:
    """``512 f16 (16,32):(32,1) -> f16 ((8,2),32):((1,256),8)``: the element count and both layouts
    (type and CuTe shape:stride per logical dim), so a printed reorder says what it moves where."""
    return f"{src.elems()} {src.dtype} {src.cute()} -> {dst.dtype} {dst.cute()}"


@dataclass(frozen=True)
class Eltwise(Func):
    """Applies ``alg`` (relu, gelu_tanh, swish, linear, ...) to ``elems`` values of ``dtype`` in place.

    Operands: ``(buf, offset)``. ``alpha``/``beta`` follow oneDNN's eltwise
    conventions. ``dtype`` is f32, or f64 for f64 problems (whose post-ops run
    in double precision).
    """

    alg: str
    elems: int
    alpha: float = 0.0
    beta: float = 0.0
    dtype: Type = f32
    OPERANDS = ("buf", "offset")

    def __str__(self) -> str:
        dtype = "" if self.dtype == f32 else f".{self.dtype}"
        return f"eltwise.{self.alg}{dtype}[{self.elems}, alpha={self.alpha:g}, beta={self.beta:g}]"


# -- Hopper: asynchronous tensor copies, transaction barriers, warpgroup MMAs (sm_90a) -----------------
#
# A transaction barrier (``mbarrier``) is 8 bytes of SLM at ``bar + bar_offset``. It counts the arrivals
# of its current phase and the bytes of the copies the phase still waits for; a phase completes when
# every expected arrival came and every expected byte landed, and the next phase starts (its parity
# flips). ``docs/ir-semantics.md`` ("Hopper") states the whole protocol.

SWIZZLE_128B = 128


def swizzle128(offset):
    """Byte ``offset`` of a 128-byte-swizzled tile (1024-byte aligned) as stored: the 16-byte chunk
    index (bits 4-6) XORed with the row index in its 8-row group (bits 7-9); works on ints and arrays."""
    return offset ^ (((offset >> 7) & 7) << 4)


@dataclass(frozen=True)
class MbarrierInit(Func):
    """Initializes the barrier at SLM ``bar + bar_offset`` for ``count`` arrivals per phase, in phase 0
    with no bytes expected. Operands: ``(bar, bar_offset)``."""

    count: int
    OPERANDS = ("bar", "bar_offset")

    def __str__(self) -> str:
        return f"mbarrier.init[{self.count}]"


@dataclass(frozen=True)
class MbarrierExpectTx(Func):
    """The calling thread arrives once at the barrier and the current phase expects ``tx_bytes`` more
    bytes from tensor copies. Operands: ``(bar, bar_offset)``."""

    tx_bytes: int
    OPERANDS = ("bar", "bar_offset")

    def __str__(self) -> str:
        return f"mbarrier.arrive.expect_tx[{self.tx_bytes}]"


@dataclass(frozen=True)
class MbarrierWait(Func):
    """Waits until the phase of parity ``parity`` (0 or 1) of the barrier completed; the SLM bytes the
    copies of that phase wrote are then visible to the thread. Operands: ``(bar, bar_offset, parity)``."""

    NAME = "mbarrier.wait"
    OPERANDS = ("bar", "bar_offset", "parity")


TENSOR_RANK = 5     # the most dims a tensor map has


@dataclass(frozen=True)
class TensorBox(Func):
    """What a tensor copy (TMA, ``cp.async.bulk.tensor.Nd``, tile mode) moves: a box of ``box`` elements of
    ``type`` (innermost dim first) of a tensor of ``dims`` elements in global memory, through SLM.

    The tensor (constants: its map is encoded at launch) starts at byte 0 of ``mem``; dim 0 is dense and
    dim ``d >= 1`` is ``strides[d - 1]`` bytes apart (a multiple of 16; strides larger than the dims below
    make a strided view, e.g. every second pixel). ``x0 ..`` (operands) is the box's corner in the tensor,
    one per dim (negative or past-the-end corners allowed), those past the rank 0. Box element ``(c, i1,
    .., i_{r-1})`` is the tensor's element ``(x0 + c, x1 + i1, ..)``; in SLM it is at byte ``slm_offset +
    swizzle128(row * 128 + c * size)`` (:func:`swizzle128`), where ``row`` numbers the box's rows ``(i1,
    .., i_{r-1})`` with ``i1`` fastest (``box[0] * size == 128``)."""

    type: Type
    box: tuple[int, ...]
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    swizzle: int = SWIZZLE_128B
    NAMED = True
    NAME = "tensor_box"

    def __post_init__(self):
        rank = len(self.box)
        if (self.swizzle != SWIZZLE_128B or self.box[0] * self.type.size != 128
                or not all(1 <= b <= 256 for b in self.box) or not 2 <= rank <= TENSOR_RANK
                or len(self.dims) != rank or len(self.strides) != rank - 1):
            raise ValueError(f"a tensor copy box {self.box} of {self.type} with swizzle {self.swizzle} over dims "
                             f"{self.dims}, strides {self.strides}: kdd's boxes have 128-byte rows, 128-byte "
                             f"swizzle, 1..256 elements a dim, 2..{TENSOR_RANK} dims, a stride per dim above 0")

    @property
    def rank(self) -> int:
        return len(self.box)

    @property
    def cols(self) -> int:
        """Elements of a box row (128 bytes)."""
        return self.box[0]

    @property
    def rows(self) -> int:
        """Rows of the box: the product of its dims above 0."""
        n = 1
        for b in self.box[1:]:
            n *= b
        return n

    @property
    def bytes(self) -> int:
        return self.rows * self.cols * self.type.size

    def __str__(self) -> str:
        def x(t):
            return "x".join(map(str, t))
        return (f"{self.NAME}.{self.type}.{x(self.box)}.sw{self.swizzle}[{x(self.dims)}"
                f"{''.join(f'/{s}' for s in self.strides)}]")


@dataclass(frozen=True)
class TensorLoad(TensorBox):
    """An asynchronous tensor copy of a :class:`TensorBox` from global memory into SLM, completing on a
    barrier. Operands (printed by name): ``(mem, x0, .., x4, slm, slm_offset, bar, bar_offset)``. Box
    elements where any coordinate falls outside ``[0, dims[d])`` are zero; the box's ``rows * 128`` bytes
    count as transaction bytes of the barrier's current phase."""

    NAME = "tensor_load"
    OPERANDS = ("mem", "x0", "x1", "x2", "x3", "x4", "slm", "slm_offset", "bar", "bar_offset")


@dataclass(frozen=True)
class TensorStore(TensorBox):
    """An asynchronous tensor copy of a :class:`TensorBox` from SLM into global memory (TMA store, CUTLASS's
    epilogue): box elements where any coordinate falls outside ``[0, dims[d])`` are not written. Each
    store is a group of its own; it may read its SLM bytes at any time until a :class:`TensorStoreWait`
    of the same thread leaves it no longer pending, so the SLM may be written again only after that.
    Operands (printed by name): ``(mem, x0, .., x4, slm, slm_offset)``."""

    NAME = "tensor_store"
    OPERANDS = ("mem", "x0", "x1", "x2", "x3", "x4", "slm", "slm_offset")


@dataclass(frozen=True)
class TensorStoreWait(Func):
    """Waits until at most ``pending`` of the calling thread's :class:`TensorStore` copies may still read
    their SLM (the newest ones); the SLM of every older one may be written again."""

    pending: int = 0

    def __str__(self) -> str:
        return f"tensor_store.wait[{self.pending}]"


@dataclass(frozen=True)
class Wgmma(Func):
    """A warpgroup MMA (``wgmma.mma_async.m64nNk16``): ``D(64 x n) += A(64 x 16) * B(16 x n)``, A and B
    read from SLM, D in registers; asynchronous: D holds the result after a :class:`WgmmaWait` that
    covers it. Four consecutive threads (warps) ``4q .. 4q+3`` issue it together; thread ``4q + r``
    holds rows ``16r .. 16r+15`` of D in its ``d`` buffer as ``mma.m16n8`` accumulator fragments side by
    side (register row ``i``, lane ``l``: row ``l / 4 + 8 * (i / 2 % 2)``, column ``8 * (i / 4) + 2 *
    (l % 4) + i % 2`` of its 16 rows).

    Operands: ``(d, d_offset, a, a_offset, b, b_offset)``. A element ``(m, k)`` is at SLM byte
    ``swizzle128(a_offset + m * 128 + k * size)`` of ``a`` (K-major 128-byte rows). B element ``(k, n)``,
    with ``b_major = "n"``, at ``swizzle128(b_offset + (n / 64) * b_block + k * 128 + (n % 64) * size)``
    of ``b`` (N-major rows of 64 elements, blocks of 64 columns ``b_block`` bytes apart); with ``"k"`` at
    ``swizzle128(b_offset + n * 128 + k * size)`` (K-major, as A). ``a`` and ``b`` are 1024-byte aligned."""

    n: int
    a_type: Type
    b_type: Type
    c_type: Type
    b_block: int
    b_major: str = "n"
    m = 64
    k = 16
    OPERANDS = ("d", "d_offset", "a", "a_offset", "b", "b_offset")

    def __post_init__(self):
        if self.b_major not in ("n", "k"):
            raise ValueError(f"wgmma B rows run along n or k, not {self.b_major!r}")

    def __str__(self) -> str:
        return f"wgmma.m64n{self.n}k16.{self.c_type}.{self.a_type}.{self.b_type}.b{self.b_major}"


@dataclass(frozen=True)
class WgmmaWait(Func):
    """Ends the group of warpgroup MMAs the thread issued since the last wait and waits until at most
    ``pending`` groups are still running: every older group's D is written."""

    pending: int = 0

    def __str__(self) -> str:
        return f"wgmma.wait[{self.pending}]"


@dataclass(frozen=True)
class SetMaxNreg(Func):
    """The calling warpgroup's registers per thread become ``regs`` (``setmaxnreg``, sm_90a): a producer
    gives registers back, consumers take them. No effect on values; all four warps of a warpgroup
    execute it together."""

    regs: int

    def __post_init__(self):
        if self.regs % 8 or not 24 <= self.regs <= 256:
            raise ValueError(f"setmaxnreg {self.regs}: a multiple of 8 in 24..256")

    def __str__(self) -> str:
        return f"setmaxnreg[{self.regs}]"


HOPPER_FUNCS = (MbarrierInit, MbarrierExpectTx, MbarrierWait, TensorLoad, TensorStore, TensorStoreWait, Wgmma, WgmmaWait,
                SetMaxNreg)
