"""What kdd knows about a GPU target, as plain immutable data.

A :class:`Target` describes one instruction-set target (``xehpg``, ``xehpc``,
``sm_90``): its register file, SIMD widths, multiply-add instructions and their
shapes, shared local memory, thread-group limits, the command that checks its
assembly, and the devices built on it with their peak rates.

Conventions used throughout kdd:

- The IR's *thread* is a SIMD thread: an Xe hardware thread, an NVIDIA warp.
  ``RegisterFile.reg_bytes`` is what one register holds *for that thread*: a
  GRF row (32 B on Xe-HPG, 64 B on Xe-HPC), and on ``sm_90`` one 32-bit
  register in each of the 32 lanes (128 B). A buffer of ``n`` bytes therefore
  needs ``ceil(n / reg_bytes)`` registers: GRFs per thread on Xe, 32-bit
  registers per lane on ``sm_90``.
- Multiply-add instructions are described in GEMM terms, ``C[m x n] += A[m x k]
  * B[k x n]``, by :class:`FmaShape`. For ``dpas``, ``m`` is the repeat count
  (rows of ``src2``), ``n`` the execution size (one column per channel) and
  ``k`` the systolic depth times the elements packed in a dword.
- Every number someone might quote carries a ``source`` string.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from kdd.core.ir.types import Type

FMA_KINDS = ("mad", "dp4a", "dpas", "dpasw", "fma", "mma")


@dataclass(frozen=True)
class Figure:
    """A number with its unit and where it comes from."""

    value: float
    unit: str
    source: str

    def __str__(self) -> str:
        return f"{self.value:g} {self.unit}"


@dataclass(frozen=True)
class FmaShape:
    """One multiply-add instruction form: ``C[m x n] += A[m x k] * B[k x n]`` per SIMD thread.

    ``a``, ``b``, ``acc`` are the operand and accumulator types as the problem
    names them; ``math`` names a reduced-precision compute format when the
    instruction does not compute in the operand type (``tf32`` for f32 data).
    ``simd`` is the execution size the form requires (32 = a warp on sm_90).
    ``spelling`` is the mnemonic with its operand types (dst, src0, src1, src2 on Xe), for display.
    ``depth`` is the systolic depth of ``dpas`` (dwords of K per channel; ``m`` is its largest repeat
    count), 1 for other forms. ``fragments`` (warp-wide forms, sm_90 ``mma``): how operand ``a``
    (m x k), ``b`` (k x n) and ``c`` (m x n) lie in the warp's registers, as blocks ``(dim, size,
    stride)`` inner first, ``dim`` 0 the operand's rows and 1 its columns, strides counted in
    elements of the fragment's storage (element ``i`` of 4-byte register ``r`` of lane ``l`` is at
    ``(r * 32 + l) * (4 / size) + i``).
    """

    fma: str
    a: Type
    b: Type
    acc: Type
    m: int
    n: int
    k: int
    simd: int
    spelling: str
    math: str = ""
    depth: int = 1
    fragments: tuple[tuple[str, tuple[tuple[int, int, int], ...]], ...] = ()

    def __post_init__(self):
        if self.fma not in FMA_KINDS:
            raise ValueError(f"unknown fma kind '{self.fma}' (known: {', '.join(FMA_KINDS)})")
        if min(self.m, self.n, self.k, self.simd) < 1:
            raise ValueError(f"{self.spelling}: shape and simd must be positive")

    @property
    def flops(self) -> int:
        """Floating-point (or integer) operations of one instruction: a multiply and an add per MAC."""
        return 2 * self.m * self.n * self.k

    def operand_bytes(self, operand: str) -> int:
        """Bytes of operand ``a`` (m x k), ``b`` (k x n) or ``c`` (m x n, accumulator type)."""
        sizes = {
            "a": self.m * self.k * self.a.size,
            "b": self.k * self.n * self.b.size,
            "c": self.m * self.n * self.acc.size,
        }
        try:
            return sizes[operand]
        except KeyError:
            raise ValueError(f"operand must be one of a, b, c; got '{operand}'") from None

    def fragment(self, operand: str) -> tuple[tuple[int, int, int], ...]:
        """The register blocks of operand ``a``, ``b`` or ``c`` (see ``fragments``)."""
        for name, blocks in self.fragments:
            if name == operand:
                return blocks
        raise ValueError(f"{self.spelling} has no fragment layout for operand '{operand}'")

    def matches(self, a: Type, b: Type, acc: Type | None = None) -> bool:
        """Whether this form multiplies ``a`` by ``b`` (and accumulates in ``acc`` when given)."""
        return self.a == a and self.b == b and (acc is None or self.acc == acc)


@dataclass(frozen=True)
class RegisterFile:
    """The registers one SIMD thread can hold.

    ``reg_bytes``: bytes of one register across the thread (see module doc).
    ``lane_bytes``: bytes one lane sees of a register (sm_90: 4), or ``None``
    where registers are not per lane (Xe GRFs).
    ``modes``: the selectable per-thread register counts (Xe: 128 or 256
    GRFs, the large-GRF mode halving threads per vector engine); empty when
    any count from ``min_regs`` to ``max_regs`` may be requested (sm_90's
    ``.maxnreg``).
    ``granularity``: registers are allocated per thread in multiples of this.
    ``core_bytes``: the register file of one Xe-core / SM, which bounds how
    many threads of a group can be resident at once.
    ``reserved``: registers kdd sets aside for kernel arguments, thread
    payload, indices and temporaries before any buffer is placed.
    ``large_for``: the FMA kinds whose kernels default to the largest mode
    (large GRF) rather than the smallest.
    """

    reg_bytes: int
    lane_bytes: int | None
    modes: tuple[int, ...]
    min_regs: int
    max_regs: int
    granularity: int
    core_bytes: int
    reserved: int
    source: str
    reserved_source: str
    large_for: tuple[str, ...] = ()

    @property
    def allocation_unit(self) -> int:
        """Registers allocated at once for one SIMD thread: a whole warp's 256 on sm_90
        (8 per lane x 32 lanes), one GRF on Xe."""
        lanes = self.reg_bytes // self.lane_bytes if self.lane_bytes else 1
        return self.granularity * lanes

    def allows(self, regs: int) -> bool:
        """Whether ``regs`` registers per thread is a valid request on this target."""
        if self.modes:
            return regs in self.modes
        return self.min_regs <= regs <= self.max_regs

    def allocated(self, regs: int) -> int:
        """Registers actually allocated for a request of ``regs`` (rounded up to the granularity)."""
        return ceil(regs / self.granularity) * self.granularity

    def regs_for(self, nbytes: int) -> int:
        """Registers needed to hold ``nbytes`` of one thread's data."""
        return ceil(nbytes / self.reg_bytes)


@dataclass(frozen=True)
class SharedMemory:
    """Shared local memory (Xe SLM, CUDA shared memory)."""

    per_group: int
    per_core: int
    source: str


@dataclass(frozen=True)
class Peak:
    """A peak throughput of one engine for one data type (``engine``: ``vector`` or ``matrix``)."""

    engine: str
    dtype: str
    rate: Figure


@dataclass(frozen=True)
class Device:
    """A product built on a target: its size, clock, memory bandwidth and peak rates."""

    name: str
    cores: int
    core_name: str
    clock_mhz: Figure
    bandwidth: Figure
    peaks: tuple[Peak, ...]
    # What SYCL's ``info::device::max_compute_units`` reports (portBLAS sizes its split K by it)
    compute_units: Figure | None = None

    def peak(self, dtype: str, engine: str = "matrix") -> Figure:
        """The peak rate of ``engine`` for ``dtype``; raises ``KeyError`` naming what exists."""
        for p in self.peaks:
            if p.dtype == dtype and p.engine == engine:
                return p.rate
        have = ", ".join(f"{p.engine}:{p.dtype}" for p in self.peaks)
        raise KeyError(f"{self.name} has no {engine} peak for {dtype} (has: {have})")


@dataclass(frozen=True)
class Addressing:
    """How memory messages take their address.

    ``"header"``: from a message header, a GRF the kernel writes before each
    send (Xe); ``"reg"``: from an address register plus an immediate offset,
    ``[reg + imm]`` (PTX).
    """

    kind: str
    source: str


@dataclass(frozen=True)
class FusedIntOps:
    """Three-operand integer instructions the target has (``add3``, ``mad``), which peephole fusion may form.

    ``max_bits``: the widest integer type they take. ``imm_bits``: the widest
    immediate operand they encode, a signed value (Xe: 16 bits, ``:w``);
    ``imm_operands``: the operand positions of ``op(a, b, c)`` that may be an
    immediate (Xe ternary instructions: src0 and src2, never src1).
    """

    ops: tuple[str, ...]
    max_bits: int
    imm_bits: int
    imm_operands: tuple[int, ...]
    source: str

    def problem(self, op: str, bits: int, imms: dict[int, int]) -> str | None:
        """Why ``op`` (``add3``, ``mad``) on ``bits``-bit integers with immediates ``{position: value}``
        (positions 0, 1, 2 of ``op(a, b, c)``) is not an instruction of this target; None when it is."""
        if op not in self.ops:
            return f"this target has no {op} (has: {', '.join(self.ops) or 'none'})"
        if bits > self.max_bits:
            return f"{op} takes at most {self.max_bits}-bit integers, not {bits}-bit"
        half = 1 << (self.imm_bits - 1)
        for position, value in sorted(imms.items()):
            if position not in self.imm_operands:
                return f"operand {position} of {op} cannot be an immediate ({value})"
            if not -half <= value < half:
                return f"immediate {value} of {op} does not fit {self.imm_bits} bits"
        return None


@dataclass(frozen=True)
class Int64:
    """64-bit integer arithmetic: ``native`` when the ALU has it, else only the ``emulated`` operations
    (IR operator names) that the code generator lowers as 32-bit sequences."""

    native: bool
    emulated: tuple[str, ...]
    source: str

    def allows(self, op: str) -> bool:
        """Whether a 64-bit integer operation ``op`` (``Op`` name: ``ADD``, ``MUL``...) may appear in IR."""
        return self.native or op in self.emulated


@dataclass(frozen=True)
class Lanes:
    """The lanes of one SIMD thread.

    ``fixed``: the lanes of a thread where the hardware fixes them (a warp's
    32 on sm_90), None where the kernel picks them (Xe: the ``simd`` knob).
    ``alu``: the lanes one 32-bit ALU instruction covers (Xe: the widest dword
    execution size; sm_90: the warp), so ``n`` lanes of an operation take
    ``ceil(n / alu)`` instructions.
    """

    fixed: int | None
    alu: int
    source: str


@dataclass(frozen=True)
class Block2D:
    """2D block loads (Xe-HPC ``load_block2d``): a ``width x height`` block of elements, or ``array``
    such blocks side by side, from a row-pitched surface, out-of-surface elements read as zero.

    ``elem_bytes``: the element sizes; a block row holds ``width * elem`` bytes, at least
    ``min_row_bytes``, and ``width * array * elem`` is at most ``max_row_bytes``; ``max_height``
    rows; ``array`` is 1, 2 or 4 with ``array * elem <= max_array_bytes``. The surface: base
    address a multiple of ``base_align``, pitch a multiple of ``pitch_align`` and at least
    ``min_pitch`` bytes, width (bytes) a multiple of 4 and at least ``min_width`` bytes, width,
    pitch and height below ``max_surface``; the block's start column ``x`` (elements) lies on a
    dword. In registers a block row takes the next power of two of its bytes and each array
    element starts on a register; one message writes at most ``max_regs`` registers (its
    descriptor's response length).
    """

    elem_bytes: tuple[int, ...]
    min_row_bytes: int
    max_row_bytes: int
    max_height: int
    arrays: tuple[int, ...]
    max_array_bytes: int
    base_align: int
    pitch_align: int
    min_pitch: int
    min_width: int
    max_surface: int
    max_regs: int
    source: str

    def max_bytes(self, reg_bytes: int) -> int:
        """The most bytes one 2D block load moves with registers of ``reg_bytes``: its widest rows, its most
        rows, within the registers one message writes."""
        return min(self.max_row_bytes * self.max_height, self.max_regs * reg_bytes)

    @staticmethod
    def regs(elem: int, width: int, height: int, array: int, reg_bytes: int) -> int:
        """The registers a block takes: rows padded to a power of two bytes, each array block from a
        register."""
        row = 1 << (width * elem - 1).bit_length()
        return array * -(-row * height // reg_bytes)

    def block_problem(self, elem: int, width: int, height: int, array: int, reg_bytes: int) -> str | None:
        """Why a block of ``array`` x ``width`` x ``height`` ``elem``-byte elements is not one message
        into registers of ``reg_bytes``; None when it is."""
        if elem not in self.elem_bytes:
            return f"{elem}-byte elements (2D blocks move {', '.join(map(str, self.elem_bytes))}-byte ones)"
        if width * elem < self.min_row_bytes or width * array * elem > self.max_row_bytes:
            return (f"rows of {width} x {array} elements of {elem} bytes (a 2D block row is "
                    f"{self.min_row_bytes} to {self.max_row_bytes} bytes)")
        if not 1 <= height <= self.max_height:
            return f"{height} rows (at most {self.max_height})"
        if array not in self.arrays or array * elem > self.max_array_bytes:
            return f"an array of {array} blocks of {elem}-byte elements"
        regs = self.regs(elem, width, height, array, reg_bytes)
        if regs > self.max_regs:
            return f"{regs} registers of {reg_bytes} bytes (a 2D block load writes at most {self.max_regs})"
        return None

    def surface_problem(self, width: int, height: int, pitch: int) -> str | None:
        """Why a surface ``width`` bytes wide, ``height`` rows high, ``pitch`` bytes apart is not one a
        2D message reads; None when it is."""
        if width % 4 or width < self.min_width or width > self.max_surface:
            return f"a surface {width} bytes wide (dword multiples from {self.min_width})"
        if pitch % self.pitch_align or pitch < max(self.min_pitch, width) or pitch > self.max_surface:
            return (f"a pitch of {pitch} bytes (multiples of {self.pitch_align}, at least the width and "
                    f"{self.min_pitch})")
        if not 1 <= height <= self.max_surface:
            return f"a surface of {height} rows"
        return None


@dataclass(frozen=True)
class MessageLimits:
    """Sizes of the memory messages one SIMD thread issues.

    ``block``: the largest block message (one address, contiguous bytes);
    ``scattered_lanes``: the most addresses of one scattered message;
    ``address_bits``: the widths of a message's address, global and shared
    (``A64``/``A32`` on Xe, 64- and 32-bit registers in PTX); ``prefetch``:
    whether kdd's code generator has cache-prefetch messages (the ``prefetch`` knob);
    ``vectors``: the vector sizes of a scattered message (elements per address, LSC ``d32x8``),
    for elements of ``vector_bytes`` (1 alone everywhere else); ``block2d``: the 2D block loads,
    None where the target has none.
    """

    block: int
    scattered_lanes: int
    global_address_bits: int
    shared_address_bits: int
    prefetch: bool
    source: str
    vectors: tuple[int, ...] = (1,)
    vector_bytes: tuple[int, ...] = ()
    block2d: Block2D | None = None

    def vector_problem(self, vec: int, size: int) -> str | None:
        """Why a scattered message of ``vec`` elements of ``size`` bytes per address is not one of this
        target's messages; None when it is."""
        if vec not in self.vectors:
            return f"vector size {vec} (a scattered message takes {', '.join(map(str, self.vectors))})"
        if vec > 1 and size not in self.vector_bytes:
            return f"vectors of {size}-byte elements (vectors move {', '.join(map(str, self.vector_bytes))}-byte ones)"
        return None


@dataclass(frozen=True)
class XeIsa:
    """What an Xe code generator may emit on a target, beyond what its assembler accepts.

    ``iga_platform``: the ``iga64 -p`` name; ``flags``: the flag subregisters
    (16 bits each); ``native_int64``: 64-bit integer ALU (else ``addc``/``mach``
    emulation); ``max_exec``: the widest
    execution size of a dword ALU instruction; ``grf_banks``: register banks
    that operand reads alternate between (dpas operand buffers are placed on
    different banks); ``eot_regs``: how many of the last GRFs an end-of-thread
    message may use as its payload; ``min_message_lanes``: a scattered LSC
    message's address payload (and the header holding it) covers at least
    this many lanes, whatever its execution size; ``ternary_byte_align``: the
    byte offsets a byte-typed ``mad``/``dp4a`` source may start at are
    multiples of it (Xe-HPC encodes those subregisters in words).
    """

    iga_platform: str
    flags: tuple[str, ...]
    native_int64: bool
    max_exec: int
    grf_banks: int
    eot_regs: int
    min_message_lanes: int
    source: str
    ternary_byte_align: int = 1


@dataclass(frozen=True)
class Target:
    """One instruction-set target with everything the generator and the estimates need.

    ``max_group_items`` is the work-item (CUDA thread) limit of a group; on
    targets with ``large_grf_halves_group`` a group compiled for more than
    ``registers.modes[0]`` GRFs may hold half as many. ``devices[0]`` is the default device
    for rooflines. ``xe`` holds the Xe instruction-set facts (``None`` on
    other ISAs). ``default_group`` is the thread group (X, Y) the defaults
    heuristic starts from: 4x4 hardware threads on Xe (oneDNN's usual), 2x2 warps on sm_90.
    """

    name: str
    title: str
    isa: str
    registers: RegisterFile
    simd_widths: tuple[int, ...]
    default_simd: int
    fma_shapes: tuple[FmaShape, ...]
    fma_preference: tuple[str, ...]
    slm: SharedMemory
    max_group_items: int
    large_grf_halves_group: bool
    messages: MessageLimits
    lanes: Lanes
    int64: Int64
    addressing: Addressing
    fused_int_ops: FusedIntOps
    assembler: tuple[str, ...]
    devices: tuple[Device, ...]
    xe: XeIsa | None = None
    default_group: tuple[int, int] = (4, 4)

    @property
    def max_message_bytes(self) -> int:
        """The largest block message one thread issues (``messages.block``)."""
        return self.messages.block

    @property
    def device(self) -> Device:
        """The default device (first listed)."""
        return self.devices[0]

    @property
    def fma_kinds(self) -> tuple[str, ...]:
        """FMA kinds this target has, in table order, without repeats."""
        return tuple(dict.fromkeys(s.fma for s in self.fma_shapes))

    def shapes(self, fma: str | None = None, simd: int | None = None,
               a: Type | None = None, b: Type | None = None, acc: Type | None = None) -> tuple[FmaShape, ...]:
        """FMA forms matching every given filter."""
        return tuple(
            s for s in self.fma_shapes
            if (fma is None or s.fma == fma) and (simd is None or s.simd == simd)
            and (a is None or s.a == a) and (b is None or s.b == b) and (acc is None or s.acc == acc)
        )

    def fma_form_problem(self, kinds: tuple[str, ...], a: Type, b: Type, acc: Type) -> str | None:
        """Why no instruction of ``kinds`` (``("mad", "fma")``, ``("dpas",)``...) multiplies ``a`` (the A
        operand, Xe src2) by ``b`` (B, src1) into ``acc`` on this target; None when one does."""
        if any(s.matches(a, b, acc) for s in self.fma_shapes if s.fma in kinds):
            return None
        have = sorted({f"{s.a}*{s.b}->{s.acc}" for s in self.fma_shapes if s.fma in kinds})
        return (f"{'/'.join(kinds)} on {self.name} does not multiply {a}*{b} into {acc} "
                f"(it takes {', '.join(have) or 'nothing'})")

    def simd_for(self, fma: str) -> int:
        """The SIMD width kdd uses for ``fma`` unless told otherwise: ``default_simd`` when the
        instruction allows it, else the narrowest width it allows."""
        widths = sorted({s.simd for s in self.shapes(fma=fma)})
        if not widths:
            raise ValueError(f"{self.name} has no '{fma}' instruction (has: {', '.join(self.fma_kinds)})")
        return self.default_simd if self.default_simd in widths else widths[0]

    def max_group_threads(self, regs: int, simd: int) -> int:
        """Most SIMD threads one thread group may have with ``regs`` registers per thread.

        Bounded by the register file of one core (threads of a group are
        resident on one Xe-core / SM together) and by the work-item limit.
        """
        per_thread = self.registers.allocated(regs) * self.registers.reg_bytes
        by_regfile = self.registers.core_bytes // per_thread
        items = self.max_group_items
        if self.large_grf_halves_group and regs > self.registers.modes[0]:
            items //= 2
        return min(by_regfile, items // simd)
