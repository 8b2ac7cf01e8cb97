"""Register and SLM budget of a config, estimated before any IR is built.

The arithmetic kernel authors do by hand (seed 002: ``C: 32*64*4/64=128``),
per SIMD thread, in the target's register unit (see
:mod:`kdd.core.targets.target`: GRFs per thread on Xe, 32-bit registers per
lane on sm_90). Every line keeps its formula so hover can show it.

Registers, for a thread tile ``m x n`` of C and ``k`` per iteration:

- ``c``: accumulators, ``m*n*acc/unit``;
- ``a`` / ``b``: the A and B tiles, ``m*k*a/unit`` and ``k*n*b/unit``, divided
  by the subtile count of the split operand (``S=``), A halved for ``dpasw``
  (the thread pair shares it);
- ``slm_load``: with SLM buffering, this thread's share of the group's
  global→SLM copy, ``(m_group*k*a + k*n_group*b) / threads`` times the
  staging buffers (``gmem``, at least 1);
- ``headers`` (Xe): one GRF per message header, one per load/store stream
  with ``P=r``; ``addresses`` (sm_90): a 64-bit address per global stream, a
  32-bit one per shared-memory stream;
- ``convert``: with ``fma_type``, the A and B tiles as loaded, ``m*k*mem/unit`` and ``k*n*mem/unit`` in
  their memory type, before the reorder that converts them (SLM tiles and copies hold the memory type);
- ``decompress``: weight decompression (seed 002's ``i8data`` and scale/zp lines): the B tile as
  stored, ``k*n*wei/unit``, the scale and zero-point rows, ``n*type/unit`` each, and their spread over a
  K pack of B's layout, ``2*n*b/unit`` each (``kdd.core.builder.decompress``);
- ``temps``: the block of C converted to the destination type before a store
  when it differs from the accumulator type;
- ``reserved``: the target's fixed reserve (kernel arguments, IDs, ...).

Only the registers every build must hold at once (``c``, ``a``, ``b``: the
floor) refuse a config here; whether the rest fits is the built kernel's
register model and allocation to say (one register model, reported by the
compile), and the defaults keep tiles whose whole estimate fits.

SLM: each buffer holds the group's A (``m_group*k``) and B (``k*n_group``)
tiles of the tensors buffered in SLM (``k`` times the K slices with ``tg``
over K); ``bufs`` of them must fit the target's per-group SLM. K slicing
adds one C tile per thread of every slice but the first (``slm_c``). These are estimates: the generator's register allocation (Xe)
and ptxas (sm_90) give the measured numbers.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import ceil, prod

from kdd.core.problem.data_types import post_op_type
from kdd.core.problem.post_ops import Bias, Binary, Sum
from kdd.core.targets import Target

from .issues import ConfigIssue
from .kernel_config import KernelConfig
from .operands import operands
from .tiling import Tiling, derive_tiling

Term = tuple[str, int]
FLOOR = ("c", "a", "b", "decompress")  # the budget lines every build of the config holds in registers at once


@dataclass(frozen=True)
class BudgetLine:
    """One labelled amount (registers or SLM bytes) with the formula that gave it."""

    label: str
    title: str
    amount: int
    formula: str
    note: str = ""

    def __str__(self) -> str:
        return f"{self.label}: {self.formula}" + (f" ({self.note})" if self.note else "")


def _quotient(label: str, title: str, nums: list[Term | int], dens: list[int]) -> BudgetLine:
    """``ceil(prod(nums) / prod(dens))`` with its formula, exact division shown without ceil."""
    terms = [(str(t), t) if isinstance(t, int) else t for t in nums]
    num, den = prod(v for _, v in terms), prod(dens)
    expr = "*".join(text for text, _ in terms) + "".join(f"/{d}" for d in dens)
    amount = -(-num // den)  # exact integers
    return BudgetLine(label, title, amount, f"{expr} = {amount}" if num % den == 0 else f"ceil({expr}) = {amount}")


def _sum(label: str, title: str, parts: list[tuple[str, int]], note: str = "") -> BudgetLine:
    total = sum(v for _, v in parts)
    expr = " + ".join(f"{name} {v}" for name, v in parts) if parts else "0"
    return BudgetLine(label, title, total, f"{expr}{note} = {total}")


def _bytes(count: str | int, t) -> str:
    """The bytes of ``count`` elements of ``t`` as a formula: ``count*size``, ``count/2`` for 4-bit types."""
    return f"{count}/2" if t.scalar.is_packed else f"{count}*{t.size}"


def _decompression(d, choice, ops, k: int, n: int, unit: int) -> BudgetLine:
    """The decompression's buffers beside B, each whole registers as the builder allocates them."""
    pairs = ceil(2 * n * ops.b.size / unit)
    copies = choice.bufs if choice is not None else 1  # ping-pong: two raw tiles
    parts = [(f"raw {'2*' if copies == 2 else ''}{_bytes(f'{k}*{n}', ops.b_memory)}/{unit}",
              copies * ceil(k * n * ops.b_memory.scalar.bits / 8 / unit))]
    for name, t in (("scale", d.scale), ("zp", d.zero_point)):
        if t is None:
            continue
        if t.scalar.is_packed:  # the row's bytes, and the row unpacked into 16-bit integers
            parts.append((f"{name} bytes {n}/2/{unit}", ceil(n / 2 / unit)))
            parts.append((f"{name} row {n}*2/{unit}", ceil(n * 2 / unit)))
        else:
            parts.append((f"{name} row {n}*{t.size}/{unit}", ceil(n * t.size / unit)))
        parts.append((f"{name} pairs 2*{n}*{ops.b.size}/{unit}", pairs))
    if choice is not None and choice.mode == "denorm_sub" and d.zero_point is not None:
        parts.append((f"512 pairs 2*{n}*{ops.b.size}/{unit}", pairs))
    return _sum("decompress", "decompression buffers", parts)


def _post_op_tiles(problem, ops, elems: int, unit: int, main_loop: int) -> BudgetLine | None:
    """The registers the epilogue's post-ops hold beyond those the main loop's A, B and staging buffers
    give back: C in the post-ops' type where the accumulator is another, and the largest right-hand side a
    sum, bias or binary post-op loads (each a whole C tile in C's layout, one at a time). None without
    such a tile. Without this line a defaults tile that fits the main loop ran out of registers in the
    epilogue (a 64x32 f32 C with a per-tensor binary post-op on xehpc: 128 GRFs of C, 128 of its operand)."""
    if problem.prop != "fwd":     # bwd_w's only post-op, the bias gradient, is a reduction of its own
        return None
    loads = [ops.c if isinstance(op, Sum) else op.dt for op in problem.post_ops if isinstance(op, (Sum, Bias, Binary))]
    work = post_op_type(ops.acc)
    tiles = ([("C", work)] if problem.post_ops and work != ops.acc else []) + \
        ([("operand", max(loads, key=lambda t: t.size))] if loads else [])
    if not tiles:
        return None
    parts = [(f"{name} {elems}*{t.size}/{unit}", ceil(elems * t.size / unit)) for name, t in tiles]
    need = sum(v for _, v in parts)
    amount = max(0, need - main_loop)
    return BudgetLine("post_ops", "post-op tiles", amount,
                      f"max(0, {' + '.join(text for text, _ in parts)} - {main_loop} of the main loop's "
                      f"buffers) = {amount}")


def _addressing(streams: list[tuple[str, int, bool]], target: Target, reuse_headers: bool) -> BudgetLine:
    """Registers that address a thread's load/store streams, given as ``(name, bytes per
    iteration, in shared memory)``: message headers on Xe, address registers on sm_90."""
    if target.addressing.kind == "reg":
        return _sum("headers", "address registers", [(s, 1 if shared else 2) for s, _, shared in streams],
                    " (64-bit global, 32-bit shared)")
    if reuse_headers:
        return _sum("headers", "message headers", [(s, 1) for s, _, _ in streams], " (P=r)")
    msg = target.max_message_bytes
    return _sum("headers", "message headers", [(s, ceil(nbytes / msg)) for s, nbytes, _ in streams],
                f" (1 per {msg}-B message)")


@dataclass(frozen=True)
class Budget:
    """Estimated registers per thread and SLM bytes per group, with their capacities."""

    regs: tuple[BudgetLine, ...]
    reg_capacity: int
    reg_unit: str
    slm: tuple[BudgetLine, ...]
    slm_capacity: int
    tiling: Tiling

    @property
    def reg_total(self) -> int:
        return sum(line.amount for line in self.regs)

    @property
    def slm_total(self) -> int:
        return sum(line.amount for line in self.slm)

    def line(self, label: str) -> BudgetLine:
        """The register or SLM line called ``label``."""
        for line in (*self.regs, *self.slm):
            if line.label == label:
                return line
        raise KeyError(f"no budget line '{label}' (have: {', '.join(x.label for x in (*self.regs, *self.slm))})")

    @property
    def reg_floor(self) -> int:
        """The registers no builder can do without: the C accumulators and the A and B buffers a
        multiplication reads at once. Staging buffers, headers, temporaries and the reserve depend on
        how the kernel is built, so only the built kernel's allocation says whether they fit."""
        return sum(line.amount for line in self.regs if line.label in FLOOR)

    @property
    def floor_text(self) -> str:
        """The floor as its lines and sum, ``c 32 + a 8 + b 32 = 72``."""
        return " + ".join(f"{x.label} {x.amount}" for x in self.regs if x.label in FLOOR) + f" = {self.reg_floor}"

    @property
    def within_estimate(self) -> bool:
        """Whether the whole estimate fits: how the defaults keep a margin when they pick tiles."""
        return self.reg_total <= self.reg_capacity and self.slm_total <= self.slm_capacity

    def issues(self) -> tuple[ConfigIssue, ...]:
        """Errors for what cannot fit whatever the builder does: a register floor over the capacity,
        or an SLM overflow. (The estimate beyond the floor is checked on the built kernel.)"""
        out = []
        if self.reg_floor > self.reg_capacity:
            parts = ", ".join(f"{x.label} {x.amount}" for x in self.regs if x.label in FLOOR)
            out.append(ConfigIssue("regs", f"register budget overflow: the C accumulators and the A and B buffers "
                                           f"alone need {self.reg_floor} > {self.reg_capacity} {self.reg_unit} "
                                           f"({parts})"))
        if self.slm_total > self.slm_capacity:
            parts = ", ".join(str(x) for x in self.slm)
            out.append(ConfigIssue("slm", f"SLM overflow: {self.slm_total} > {self.slm_capacity} bytes per "
                                          f"thread group ({parts})"))
        return tuple(out)

    def __str__(self) -> str:
        lines = [str(x) for x in self.regs]
        lines.append(f"all: {self.reg_total} of {self.reg_capacity} {self.reg_unit}")
        lines += [str(x) for x in self.slm]
        lines.append(f"slm: {self.slm_total} of {self.slm_capacity} bytes")
        return "\n".join(lines)


def estimate_budget(problem, config: KernelConfig, target: Target) -> Budget:
    """Registers and SLM that ``config`` needs on ``target`` for ``problem``.

    ``config`` must be complete (see :func:`~.defaults.resolve_config`).
    """
    config.require_complete("estimate_budget")
    t = derive_tiling(problem, config)
    ops = operands(problem, config)
    unit = target.registers.reg_bytes
    m, n, k = t.m_thread, t.n_thread, t.k_iter
    sa, sb, sacc, sc = ops.a.size, ops.b.size, ops.acc.size, ops.c.size
    mem_a, mem_b = (ops.converted.size,) * 2 if ops.converted else (sa, sb)  # what global and SLM hold
    sub = config.subtiles
    threads = t.threads_per_group
    slm, pf = config.slm, config.prefetch
    group_k = k * t.k_slices  # a group's K block per iteration: one slice per thread along K
    group_a = t.m_group * group_k * mem_a
    group_b = group_k * t.n_group * mem_b

    batch = [t.b_thread] if t.b_thread > 1 else []  # each batch element (group) has its own C, A and B tile
    regs = [_quotient("c", "C accumulators", batch + [m, n, sacc], [unit])]
    a_dens = [unit] + ([sub.a] if sub.a > 1 else []) + ([2] if config.fma == "dpasw" else [])
    regs.append(_quotient("a", "A buffer", batch + [m, k, sa], a_dens))
    regs.append(_quotient("b", "B buffer", batch + [k, n, sb], [unit] + ([sub.b] if sub.b > 1 else [])))

    slm_a, slm_b = slm.applies_to("A"), slm.applies_to("B")
    copy_terms = [f"{t.m_group}*{group_k}*{mem_a}"] * slm_a + [f"{group_k}*{t.n_group}*{mem_b}"] * slm_b
    copy_bytes = group_a * slm_a + group_b * slm_b
    if copy_terms:
        staging = max(slm.gmem, 1)
        regs.append(_quotient("slm_load", "SLM load buffers",
                              [(f"({'+'.join(copy_terms)})", copy_bytes), staging], [threads, unit]))
    else:
        regs.append(BudgetLine("slm_load", "SLM load buffers", 0, "no SLM buffering = 0"))

    per_thread_copy = {"A": ceil(group_a / threads), "B": ceil(group_b / threads)}
    streams = [("A", m * k * mem_a, slm_a), ("B", k * n * mem_b, slm_b), ("C", m * n * sc, False)]
    for name, on in (("A", slm_a), ("B", slm_b)):
        if on:
            streams += [(f"gmem {name}", per_thread_copy[name], False), (f"SLM {name}", per_thread_copy[name], True)]
    for name in "AB":
        if pf.applies_to(name):
            streams.append((f"prefetch {name}", per_thread_copy[name], False))
    regs.append(_addressing(streams, target, config.pipeline.reuse_headers))

    if ops.converted:
        regs.append(_sum("convert", f"A and B as loaded ({ops.converted})",
                         [(f"A {m}*{k}*{mem_a}/{unit}", ceil(m * k * mem_a / unit)),
                          (f"B {k}*{n}*{mem_b}/{unit}", ceil(k * n * mem_b / unit))]))
    if ops.decompressed:
        regs.append(_decompression(problem.decompression, config.decompress, ops, k, n, unit))
    if ops.c != ops.acc:
        block = min(m * n * sc, target.max_message_bytes)
        regs.append(_quotient("temps", "temporaries", [(f"min({m}*{n}*{sc},{target.max_message_bytes})", block)],
                              [unit]))
    else:
        regs.append(BudgetLine("temps", "temporaries", 0, f"C stored as {ops.acc}, no conversion = 0"))
    post = _post_op_tiles(problem, ops, prod(batch + [m, n]), unit,
                          sum(x.amount for x in regs if x.label in ("a", "b", "slm_load", "convert", "decompress")))
    if post is not None:
        regs.append(post)
    regs.append(BudgetLine("reserved", "reserved", target.registers.reserved, str(target.registers.reserved),
                           target.registers.reserved_source))

    slm_lines = []
    if slm_a:
        slm_lines.append(_quotient("slm_a", "SLM A tile", [t.m_group, group_k, mem_a, slm.bufs], []))
    if slm_b:
        slm_lines.append(_quotient("slm_b", "SLM B tile", [group_k, t.n_group, mem_b, slm.bufs], []))
    if t.k_slices > 1:
        x, y, _ = t.tg_grid
        slm_lines.append(_quotient("slm_c", "partial C tiles of K slices", [t.k_slices - 1, x * y, m, n, sacc], []))

    reg_unit = (f"GRFs ({unit} B) per thread" if target.registers.lane_bytes is None
                else f"{8 * target.registers.lane_bytes}-bit registers per lane")
    return Budget(tuple(regs), config.regs, reg_unit, tuple(slm_lines), target.slm.per_group, t)
