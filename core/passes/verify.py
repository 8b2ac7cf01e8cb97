"""The IR verifier: what a code generator may take for granted of kernel IR, checked on one IR.

``verify_ir(ir, target, ...)`` returns every broken rule as a :class:`Problem`
(empty when the IR is sound); ``verify_trace`` checks the builder's IR and
the IR after every pass. The rules:

- **types**: every expression has the type its constructor gives its
  operands (a node made around the constructor is caught here), a use of a
  variable has the type of its binding, conditions and masks are bool,
  offsets integers, and no value has a packed 4-bit type (a memory type only);
- **scope**: every variable is bound (``let``, ``for``, ``alloc``) by a
  statement around its use, or is free in the kernel (its buffers, group and
  thread ids); no name is bound twice;
- **bounds**: register and SLM accesses (loads, stores, a call's buffer
  operands) stay inside their ``alloc`` wherever the offset's range is known
  (constants, loop indices, launch ids and lets of them, by interval
  analysis), SLM only where the access is neither masked nor under an ``if``;
- **sends** follow the target's message rules (``Target.messages``): a
  block message moves at most ``messages.block`` bytes from one scalar
  address, a scattered one at most ``messages.scattered_lanes`` addresses
  with one offset per lane, each moving a vector of one of
  ``messages.vectors`` elements; SLM messages address an SLM buffer, global
  ones a kernel buffer; the register operand is a register buffer;
- **fused operations** (``add3``, ``mad``) are instructions the target
  encodes (``Target.fused_int_ops``: operand widths, immediate positions
  and widths), and every multiply-add call (integer ``mad``, ``dp4a``,
  ``dpas``, ``mma``) multiplies types one of the target's FMA forms takes
  (``Target.fma_shapes``: no ``u8*s8`` ``fma`` on sm_90, no tf32 ``dpas`` on
  Xe-HPG);
- **64-bit integer arithmetic** only where the target has it or its code
  generator emulates that operation (``Target.int64``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping

from ..ir.expr import Binary, BoolImm, Broadcast, Cast, Expr, IntImm, Load, Op, Ternary, Unary, Var
from ..ir.funcs import (HOPPER_FUNCS, Dp4a, Dpas, Eltwise, Mad, Mma, MbarrierExpectTx, MbarrierInit, MbarrierWait,
                        Reduce, Reorder, Send, Send2D, SendKind, SendOp, TensorBox, TensorLoad, Wgmma)
from ..ir.node import Node
from ..ir.printer import print_ir
from ..ir.simplify import alignment_of
from ..ir.stmt import Alloc, For, FuncCall, If, Let, MemKind, Stmt, Store
from ..ir.types import s32
from ..ir.visitor import IRVisitor
from .intervals import IntervalAnalysis, type_range
from .peephole import fused_problem
from .tree import distinct_nodes, own_exprs


@dataclass(frozen=True)
class Problem:
    """One broken rule: ``rule`` (types, scope, bounds, send, fused, int64), what is wrong, and the
    statement it is in, printed."""

    rule: str
    message: str
    where: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.message} (in: {self.where})"

    def to_dict(self) -> dict:
        return {"rule": self.rule, "message": self.message, "where": self.where}


class VerifyError(Exception):
    """IR broke verifier rules; ``problems`` lists them."""

    def __init__(self, stage: str, problems: list[Problem]):
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"the IR after '{stage}' is not sound: {problems[0]}{more}")
        self.stage = stage
        self.problems = problems


@dataclass
class _Binding:
    var: Var
    size: int | None = None        # bytes of an allocated buffer
    kind: MemKind | None = None    # where it lives (None: a value, or a kernel buffer)


def verify_ir(ir: Stmt, target, free: Iterable[Var] = (),
              ranges: Mapping[str, tuple[int, int]] | None = None) -> list[Problem]:
    """Every rule ``ir`` breaks on ``target``. ``free``: the variables the kernel binds outside its IR
    (buffers, launch ids); ``ranges``: known ranges of free variables (launch ids)."""
    return _Verifier(target, free, ranges or {}).run(ir)


def verify_kernel(kernel, ir: Stmt | None = None) -> list[Problem]:
    """``verify_ir`` of ``ir`` (default: the built body) with what ``kernel`` (``builder.Kernel``) knows."""
    from ..targets import get_target
    from .options import kernel_options, launch_ranges

    options = kernel_options(kernel)
    free = [a.var for a in kernel.args] + [Var.make(s32, name) for name, _, _ in options["var_ranges"]]
    return verify_ir(kernel.body if ir is None else ir, get_target(kernel.target), free, launch_ranges(options))


def verify_trace(kernel, trace) -> list[tuple[str, list[Problem]]]:
    """``(stage, problems)`` for the builder's IR (stage ``build``) and the IR after every pass."""
    stages = [("build", trace.input)] + [(e.name, e.ir) for e in trace.entries]
    out, seen = [], {}
    for name, ir in stages:
        if id(ir) not in seen:  # a pass that changed nothing hands on the same object
            seen[id(ir)] = verify_kernel(kernel, ir)
        out.append((name, seen[id(ir)]))
    return out


# Buffer operands of calls: (buffer operand, its offset operand, bytes accessed from the offset).
def _operands(call: FuncCall) -> list[tuple[str, str, int]]:
    f = call.func
    if isinstance(f, (Send, Send2D)):
        return [("reg", "reg_offset", f.elems * f.type.size)]
    if isinstance(f, Dpas):
        c = f.rcount * f.simd * f.dst_type.size
        return [("dst", "dst_offset", c), ("src0", "src0_offset", c),
                ("src1", "src1_offset", f.sdepth * 4 * f.simd), ("src2", "src2_offset", f.rcount * f.sdepth * 4)]
    if isinstance(f, Mma):
        c = f.m * f.n * f.c_type.size
        return [("d", "d_offset", c), ("a", "a_offset", f.m * f.k * f.a_type.size),
                ("b", "b_offset", f.k * f.n * f.b_type.size), ("c", "c_offset", c)]
    if isinstance(f, (Mad, Dp4a)):
        dst = f.simd * (f.dst_type.size if isinstance(f, Mad) else 4)
        k = 1 if isinstance(f, Mad) else 4
        src2 = (f.simd if f.src2_stride else 1) * k * f.src2_type.size
        return [("dst", "dst_offset", dst), ("src0", "src0_offset", dst),
                ("src1", "src1_offset", f.simd * k * f.src1_type.size), ("src2", "src2_offset", src2)]
    if isinstance(f, (Reorder, Reduce)):
        return [("src", "src_offset", f.src_layout.size_bytes()), ("dst", "dst_offset", f.dst_layout.size_bytes())]
    if isinstance(f, Eltwise):
        return [("buf", "offset", f.elems * f.dtype.size)]
    if isinstance(f, (MbarrierInit, MbarrierExpectTx, MbarrierWait)):
        return [("bar", "bar_offset", 8)]
    if isinstance(f, TensorLoad):       # the swizzle permutes bytes inside the box's rows
        return [("slm", "slm_offset", f.bytes), ("bar", "bar_offset", 8)]
    if isinstance(f, TensorBox):
        return [("slm", "slm_offset", f.bytes)]
    if isinstance(f, Wgmma):            # ... and inside 1024-byte blocks, so the spans hold
        return [("d", "d_offset", f.n * 64), ("a", "a_offset", 63 * 128 + 16 * f.a_type.size),
                ("b", "b_offset", (f.n // 64 - 1) * f.b_block + 15 * 128 + 64 * f.b_type.size if f.b_major == "n"
                 else (f.n - 1) * 128 + 16 * f.b_type.size)]
    return []


def _misaligned(e: Expr, align: int) -> bool:
    """Whether every value of ``e`` is known to be off a multiple of ``align`` (unknown is not misaligned:
    strength reduction hides offsets in registers)."""
    mod, rem = alignment_of(e)
    return (mod == 0 or mod % align == 0) and rem % align != 0


def _fma_form(f) -> tuple | None:
    """``(target FMA kinds, A type, B type, accumulator type)`` of a multiply-add call, else None (float
    ``mad``: Xe mixes f32, f16 and bf16 sources freely, so only its integer forms are judged)."""
    if isinstance(f, Mad) and f.src1_type.is_int and f.src2_type.is_int:
        return ("mad", "fma"), f.src2_type, f.src1_type, f.dst_type
    if isinstance(f, Dp4a):
        return ("dp4a",), f.src2_type, f.src1_type, s32
    if isinstance(f, Dpas):
        return ("dpasw" if f.is_dpasw else "dpas",), f.src2_type, f.src1_type, f.dst_type
    if isinstance(f, Mma):
        return ("mma",), f.a_type, f.b_type, f.c_type
    return None


class _Verifier(IRVisitor):
    """Checks statements in program order with the names bound where each sits (``bindings``)."""

    statements_only = True

    def __init__(self, target, free: Iterable[Var], ranges):
        self.target = target
        self.bindings: dict[str, _Binding] = {v.name: _Binding(v) for v in free}
        self.bound_once: set[str] = set()
        self.analysis = IntervalAnalysis(ranges)
        self.checked: set[int] = set()
        self.problems: list[Problem] = []
        self._where: Stmt | None = None
        self.guarded = False  # inside an ``if``
        self._ifs = 0  # the ``if`` statements around the one checked
        self._shadowed: list[tuple[str, _Binding | None]] = []  # per open scope: its name, the binding it hid
        self._printed: dict[int, str] = {}

    def run(self, ir: Stmt) -> list[Problem]:
        self.visit(ir)
        return self.problems

    def visit_Stmt(self, s: Stmt) -> None:
        self.guarded = self._ifs > 0
        self._where = s
        for e in own_exprs(s):
            self.expression(e)
        self.statement(s)
        bound = self.bind(s)
        if bound is not None:
            self._shadowed.append(bound)
        if isinstance(s, If):
            self._ifs += 1

    def leave_Stmt(self, s: Stmt) -> None:
        """Closes the scope ``s`` opened (restoring the binding it shadowed)."""
        if isinstance(s, If):
            self._ifs -= 1
        elif isinstance(s, (Let, For, Alloc)):
            name, outer = self._shadowed.pop()
            if outer is None:
                del self.bindings[name]
            else:
                self.bindings[name] = outer

    # -- reporting ----------------------------------------------------------------------------

    def fail(self, rule: str, message: str) -> None:
        s = self._where
        if s is not None and id(s) not in self._printed:
            self._printed[id(s)] = print_ir(s).text.splitlines()[0].strip()[:160]
        self.problems.append(Problem(rule, message, "" if s is None else self._printed[id(s)]))

    # -- statements ---------------------------------------------------------------------------

    def bind(self, s: Stmt) -> tuple[str, _Binding | None] | None:
        """Opens the scope ``s`` binds; returns the name and the binding it shadows, to restore."""
        if isinstance(s, Let):
            var, binding = s.var, _Binding(s.var)
            if var.type.is_int or var.type.is_bool:
                lo, hi, _ = self.analysis.of(s.value)
                self.analysis.ranges.setdefault(var.name, (lo, hi))
        elif isinstance(s, For):
            var, binding = s.var, _Binding(s.var)
            lo, _, _ = self.analysis.of(s.init)
            _, hi, _ = self.analysis.of(s.bound)
            self.analysis.ranges.setdefault(var.name, (lo, max(lo, hi - 1)))
        elif isinstance(s, Alloc):
            var, binding = s.buf, _Binding(s.buf, s.size, s.kind)
        else:
            return None
        if var.name in self.bound_once:
            self.fail("scope", f"'{var.name}' is bound twice")
        self.bound_once.add(var.name)
        outer = self.bindings.get(var.name)
        self.bindings[var.name] = binding
        return var.name, outer

    def statement(self, s: Stmt) -> None:
        if isinstance(s, Let) and s.value.type != s.var.type:
            self.fail("types", f"let {s.var.name}.{s.var.type} = a value of type {s.value.type}")
        elif isinstance(s, For):
            for name, e in (("init", s.init), ("bound", s.bound)):
                if e.type != s.var.type:
                    self.fail("types", f"loop {s.var.name}.{s.var.type} has a {name} of type {e.type}")
        elif isinstance(s, If) and not s.cond.type.is_bool:
            self.fail("types", f"if condition of type {s.cond.type}")
        elif isinstance(s, Store):
            if not s.offset.type.is_int:
                self.fail("types", f"store offset of type {s.offset.type}")
            if s.mask is not None and s.mask.type.lanes not in (1, s.value.type.lanes):
                self.fail("types", f"store mask of {s.mask.type.lanes} lanes for {s.value.type.lanes} values")
            nbytes = (s.value.type.lanes - 1) * s.stride + s.value.type.scalar.size
            self.access(s.buf, s.offset, nbytes, masked=s.mask is not None)
        elif isinstance(s, FuncCall):
            self.call(s)

    def call(self, s: FuncCall) -> None:
        if isinstance(s.func, Send):
            self.send(s)
        elif isinstance(s.func, Send2D):
            self.send2d(s)
        elif isinstance(s.func, HOPPER_FUNCS):
            self.hopper(s)
        form = _fma_form(s.func)
        if form is not None:
            problem = self.target.fma_form_problem(*form)
            if problem:
                self.fail("fused", f"{s.func}: {problem}")
        ops = s.ops
        masked = isinstance(s.func, Send) and not _always(ops.mask)
        for buf, off, nbytes in _operands(s):
            if isinstance(getattr(ops, buf), Var):
                self.access(getattr(ops, buf), getattr(ops, off), nbytes, masked)
            else:
                self.fail("types", f"operand {buf} of {s.func} is not a buffer")

    def hopper(self, s: FuncCall) -> None:
        """Tensor copies, transaction barriers and warpgroup MMAs: sm_90 only; a tensor copy's strides are
        multiples of 16 bytes and its coordinates past its rank 0; no offset is provably off the alignment
        the hardware requires (barriers 8 bytes, swizzled boxes 1024, descriptors 16)."""
        f, ops = s.func, s.ops
        if self.target.isa != "ptx":
            self.fail("target", f"{f} is an sm_90 operation, not one of {self.target.name}")
        if hasattr(ops, "bar_offset") and _misaligned(ops.bar_offset, 8):
            self.fail("align", f"{f}: a barrier at an offset not a multiple of 8")
        if isinstance(f, TensorBox):
            if any(s % 16 for s in f.strides):
                self.fail("send", f"{f}: the tensor's strides must be multiples of 16 bytes")
            if any(not (isinstance(e, IntImm) and e.value == 0) for e in (ops.x0, ops.x1, ops.x2, ops.x3,
                                                                           ops.x4)[f.rank:]):
                self.fail("types", f"{f}: the coordinates past the tensor's {f.rank} dims must be 0")
            if _misaligned(ops.slm_offset, 1024):
                self.fail("align", f"{f}: a swizzled box must start at a multiple of 1024 bytes")
        if isinstance(f, Wgmma):
            for what in ("a_offset", "b_offset"):
                if _misaligned(getattr(ops, what), 16):
                    self.fail("align", f"{f}: {what} must be a multiple of 16 (a descriptor's address unit)")

    def send(self, s: FuncCall) -> None:
        f, ops = s.func, s.ops
        mem, offset, reg, reg_offset, mask = ops.mem, ops.mem_offset, ops.reg, ops.reg_offset, ops.mask
        limits = self.target.messages
        nbytes = f.elems * f.type.size
        if f.kind is SendKind.BLOCK:
            if nbytes > limits.block:
                self.fail("send", f"a block message of {nbytes} bytes; {self.target.name} moves at most "
                                  f"{limits.block}")
            if offset.type.lanes != 1 or mask.type.lanes != 1:
                self.fail("send", "a block message takes one address and one mask")
        else:
            lanes = f.lanes
            if lanes > limits.scattered_lanes:
                self.fail("send", f"a scattered message of {lanes} addresses; {self.target.name} takes at "
                                  f"most {limits.scattered_lanes}")
            vector = limits.vector_problem(f.vec, f.type.size)
            if vector is not None:
                self.fail("send", f"a scattered message with {vector} on {self.target.name}")
            if f.vec > 1 and f.op is SendOp.ATOMIC_ADD:
                self.fail("send", "an atomic message moves one element per lane")
            if offset.type.lanes != lanes or mask.type.lanes not in (1, lanes):
                self.fail("send", f"a scattered message of {lanes} addresses with {offset.type.lanes} offsets "
                                  f"and {mask.type.lanes} mask lanes")
        if not offset.type.is_int or not reg_offset.type.is_int or not mask.type.is_bool:
            self.fail("types", "a send's offsets are integers and its mask bool")
        memory = self.bindings.get(mem.name) if isinstance(mem, Var) else None
        want = MemKind.SLM if f.space == "slm" else None
        if memory is not None and memory.kind is not want:
            where = "an SLM buffer" if want is MemKind.SLM else "a kernel buffer"
            self.fail("send", f"a {f.space} message addresses '{mem.name}', which is not {where}")
        if isinstance(mem, Var):
            self.access(mem, offset, nbytes if f.kind is SendKind.BLOCK else f.vec * f.type.size, not _always(mask))
        register = self.bindings.get(reg.name) if isinstance(reg, Var) else None
        if register is not None and register.kind is not MemKind.GRF:
            self.fail("send", f"the register operand '{reg.name}' is not a register buffer")

    def send2d(self, s: FuncCall) -> None:
        """A 2D block load: the target has them, the block is one of its messages and one the IR's dense
        register order describes (rows a power of two bytes, array blocks whole registers), constant surface
        sizes within its limits, and no base or start column that is provably off its alignment."""
        f, ops = s.func, s.ops
        limits = self.target.messages.block2d
        if limits is None:
            self.fail("send", f"{f}: {self.target.name} has no 2D block messages")
            return
        size, row = f.type.size, f.width * f.type.size
        problem = limits.block_problem(size, f.width, f.height, f.array, self.target.registers.reg_bytes)
        if problem is None and row & (row - 1):
            problem = f"rows of {row} bytes (the registers pad a row to a power of two)"
        if problem is None and f.array > 1 and row * f.height % self.target.registers.reg_bytes:
            problem = f"blocks of {row * f.height} bytes side by side (each starts on a register)"
        sizes = (ops.surface_width, ops.surface_height, ops.pitch)
        if problem is None and not all(isinstance(e, IntImm) for e in sizes):
            problem = "a surface whose width, height or pitch is not a constant"
        if problem is None:
            problem = limits.surface_problem(*(e.value for e in sizes))
        aligns = (("base", ops.base, limits.base_align), ("start column", ops.x, 4 // math.gcd(4, size)))
        for what, e, align in aligns:
            mod, rem = alignment_of(e)
            if problem is None and (mod == 0 or mod % align == 0) and rem % align:
                problem = f"a {what} of {rem} modulo {mod}, off its alignment to {align}"
        if problem is not None:
            self.fail("send", f"{f}: {problem} on {self.target.name}")
        memory = self.bindings.get(ops.mem.name) if isinstance(ops.mem, Var) else None
        if memory is not None and memory.kind is not None:
            self.fail("send", f"a 2D block message addresses '{ops.mem.name}', which is not a kernel buffer")
        if not all(e.type.is_int and e.type.lanes == 1 for e in (ops.base, ops.x, ops.y, ops.reg_offset)):
            self.fail("types", f"{f}: its base, start and register offset are integer scalars")

    def access(self, buf: Var, offset: Expr, nbytes: int, masked: bool) -> None:
        binding = self.bindings.get(buf.name)
        conditional = masked or self.guarded  # an SLM access under a mask or an ``if`` may never happen
        if binding is None or binding.size is None or (conditional and binding.kind is not MemKind.GRF):
            return
        if not offset.type.is_int:
            return
        lo, hi, wrapped = self.analysis.of(offset)
        if wrapped or (lo, hi) == type_range(offset.type):
            return  # the offset's range is not known here (a header, a loaded value)
        if lo < 0 or hi + nbytes > binding.size:
            self.fail("bounds", f"bytes [{lo}, {hi + nbytes}) of '{buf.name}', which has {binding.size}")

    # -- expressions --------------------------------------------------------------------------

    def expression(self, e: Expr) -> None:
        for n in distinct_nodes(e):
            if isinstance(n, Var):
                self.use(n)
            if id(n) in self.checked:
                continue
            self.checked.add(id(n))
            self.node(n)

    def use(self, v: Var) -> None:
        binding = self.bindings.get(v.name)
        if binding is None:
            self.fail("scope", f"'{v.name}' is used where nothing binds it")
        elif binding.var.type != v.type:
            self.fail("types", f"'{v.name}' is bound as {binding.var.type} and used as {v.type}")

    def node(self, n: Node) -> None:
        if isinstance(n, Expr) and n.type.scalar.is_packed:
            self.fail("types", f"{n} has the 4-bit type {n.type}, a memory type only (read its bytes as u8)")
        if isinstance(n, Var) or not isinstance(n, Expr):
            return
        try:
            rebuilt = n.rebuild(*n.field_values())
        except (TypeError, ValueError) as exc:
            self.fail("types", f"{n}: {exc}")
            return
        if rebuilt.type != n.type:
            self.fail("types", f"{n} has type {n.type}; its operands make {rebuilt.type}")
        if isinstance(n, Load) and not n.offset.type.is_int:
            self.fail("types", f"load offset of type {n.offset.type}")
        if isinstance(n, Ternary) and n.op in (Op.ADD3, Op.MAD):
            problem = fused_problem(self.target.fused_int_ops, n)
            if problem is not None:
                self.fail("fused", f"{n}: {problem}")
        if (isinstance(n, (Unary, Binary, Ternary)) and n.type.is_int and n.type.scalar.bits == 64
                and n.op is not Op.IIF and not self.target.int64.allows(n.op.name)):
            self.fail("int64", f"64-bit integer {n.op.name.lower()} on {self.target.name}, which has no 64-bit "
                               f"integer ALU and no emulation of it: {n}")
        if isinstance(n, Cast) and n.type.lanes != n.a.type.lanes:
            self.fail("types", f"{n}: a cast keeps its lane count")


def _always(mask: Expr) -> bool:
    if isinstance(mask, Broadcast):
        mask = mask.a
    return isinstance(mask, BoolImm) and mask.value


def verify_problems_text(stages: list[tuple[str, list[Problem]]]) -> str:
    """One line per problem, ``stage: rule: message (in: statement)``."""
    return "".join(f"{stage}: {p}\n" for stage, ps in stages for p in ps)
