"""Useful multiply lanes: of the multiply-add lanes a config's kernel issues, the share the problem needs.

A multiply instruction has a shape (``dpas.8x8`` on f16: 8 rows x 8 columns x
16 K, 1024 multiply-adds; ``mad`` on 16 lanes: 16), and a kernel issues whole
instructions: its thread tile is padded up to the instruction's shape, and
its blocks up to the problem's dims. Issued lanes are therefore

    prod over dims of (grid * tg * loop)  x  prod over roles of (thread tile rounded up to the unit)

and useful ones the problem's GEMM extents, ``B * M * N * K`` (a
convolution's taps over input padding count as useful: the GEMM the kernel
computes has them). A depthwise convolution (``g == ic == oc``) is ``g``
GEMMs of N = 1 and K = ``kh * kw``: ``dpas`` pads N to its 8 or 16 columns
and K to 16 or 32, so about 2 % of its lanes do useful work, while ``mad``
with the groups in its SIMD lanes (oneDNN's depthwise kernels) uses them all.

This is the config's figure; the built kernel's (``kdd.core.passes.lane_use``: its multiply
instructions' shapes times their trip counts) is reported beside it by ``kdd compile --emit stats``.
Validation warns below :data:`MIN_USEFUL` and says why.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

from kdd.core.targets import FmaShape, Target

from .buildable import buildable, dpas_rcount
from .kernel_config import KernelConfig
from .operands import operands
from .tiling import Tiling, derive_tiling, mad_over_batch

MIN_USEFUL = 0.5  # below this share of useful lanes a config (the defaults included) is warned about
_ROLE = {"b": "batch", "m": "M", "n": "N", "k": "K"}


def _up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


@dataclass(frozen=True)
class Padded:
    """One source of idle lanes: ``what`` covers ``size`` real elements with ``computed``, started by ``knob``."""

    what: str
    size: int
    computed: int
    knob: str

    def __str__(self) -> str:
        return f"{self.what} {self.size} -> {self.computed} ({self.knob})"


@dataclass(frozen=True)
class LaneUse:
    """The multiply lanes of one config on one problem: ``useful`` of ``issued`` multiply-adds, the
    instruction's per-thread ``unit`` by GEMM role, and what pads (``padded``, largest waste first)."""

    fma: str
    useful: int
    issued: int
    unit: dict
    extents: dict
    padded: tuple[Padded, ...]

    @property
    def fraction(self) -> float:
        return self.useful / self.issued if self.issued else 1.0

    @property
    def oversized(self) -> tuple[str, ...]:
        """The roles whose whole extent is smaller than the instruction's unit: padding no tile avoids."""
        return tuple(r for r in "bmnk" if self.extents[r] < self.unit[r])

    def knob(self) -> str:
        """The knob a warning points at: ``fma`` when the instruction itself is larger than the problem,
        else the knob that starts the largest padding."""
        if self.oversized or not self.padded:
            return "fma"
        return self.padded[0].knob

    def reason(self) -> str:
        """Why lanes idle, in words."""
        parts = []
        if self.oversized:
            units = ", ".join(f"{_ROLE[r]}={self.unit[r]}" for r in self.oversized)
            real = ", ".join(f"{_ROLE[r]}={self.extents[r]}" for r in self.oversized)
            parts.append(f"{self.fma}'s {units} exceeds the problem's {real}")
        if self.padded:
            parts.append("padded " + ", ".join(map(str, self.padded)))
        return "; ".join(parts) or "no padding"

    def to_dict(self) -> dict:
        return {"fma": self.fma, "useful": self.useful, "issued": self.issued,
                "fraction": round(self.fraction, 4), "unit": dict(self.unit),
                "padded": [{"what": p.what, "size": p.size, "computed": p.computed, "knob": p.knob}
                           for p in self.padded], "reason": self.reason()}


def instruction_shape(problem, config: KernelConfig, target: Target) -> FmaShape | None:
    """The instruction form the builder uses for ``config`` (its accumulator type where the target has it),
    or None where the config names none the target has."""
    ops = operands(problem, config)
    sized = buildable(target.shapes(fma=config.fma, simd=config.simd, a=ops.a, b=ops.b))
    return next((s for s in sized if s.acc == ops.acc), sized[0]) if sized else None


def role_units(config: KernelConfig, shape: FmaShape, tiling: Tiling, target: Target) -> dict[str, int]:
    """What one instruction covers of the thread tile, by GEMM role (see :func:`units`)."""
    return units(shape, target, tiling.m_thread, mad_over_batch(config.fma, config.simd, tiling))


def units(shape: FmaShape, target: Target, m: int, over_batch: bool = False) -> dict[str, int]:
    """What one instruction covers by GEMM role for a thread tile of ``m`` rows: ``mad`` with its lanes along
    the batch (``over_batch``, :func:`~.tiling.mad_over_batch`) ``simd`` of the batch; ``dpas`` the repeat
    count the builder takes for ``m`` rows (``dpas_rcount``), its columns and K depth; others their shape."""
    if over_batch:
        return {"b": shape.simd, "m": 1, "n": 1, "k": 1}
    rows = dpas_rcount(shape, m, target.registers.reg_bytes) if shape.fma in ("dpas", "dpasw") else shape.m
    return {"b": 1, "m": rows, "n": shape.n, "k": shape.k}


def extents(problem) -> dict[str, int]:
    """The problem's GEMM extents by role: ``B``, ``M``, ``N`` and ``K`` (one group's, for a convolution)."""
    gemm = problem.gemm_dims()
    return {r: prod(size for _, size in getattr(gemm, r)) for r in "bmnk"}


def lane_bound(problem, shape: FmaShape, target: Target, over_batch: bool = False) -> float:
    """The largest share of useful lanes any tile of ``shape`` reaches on ``problem``: each role's extent
    over that extent rounded up to the instruction's unit (tiles can only add padding to this)."""
    ext = extents(problem)
    unit = units(shape, target, ext["m"], over_batch)
    return prod(ext[r] / _up(ext[r], unit[r]) for r in "bmnk")


def lane_use(problem, config: KernelConfig, target: Target, tiling: Tiling | None = None) -> LaneUse | None:
    """Useful multiply lanes of a complete classic-schedule ``config`` (``tiling``: its tiling, where the
    caller has it), or None where its instruction is not one the target has (validation reports that)."""
    shape = instruction_shape(problem, config, target)
    if shape is None or config.schedule != "classic":
        return None
    t = tiling or derive_tiling(problem, config)
    unit = role_units(config, shape, t, target)
    thread = {r: prod(d.iter for d in t.role(r)) for r in "bmnk"}
    issued = prod(d.grid * d.tg * d.loop for d in t.dims) * prod(_up(thread[r], unit[r]) for r in "bmnk")
    padded = [Padded(d.name, d.size, d.padded, _padding_knob(d)) for d in t.dims if d.padded > d.size]
    padded += [Padded(f"{_ROLE[r]} per thread", thread[r], _up(thread[r], unit[r]), "iter")
               for r in "bmnk" if thread[r] % unit[r]]
    padded.sort(key=lambda p: p.size / p.computed)
    ext = extents(problem)
    return LaneUse(config.fma, prod(ext.values()), issued, unit, ext, tuple(padded))


def _padding_knob(d) -> str:
    """The first tile knob whose block exceeds or does not divide dim ``d`` (as validation names it)."""
    for knob, block in (("iter", d.iter), ("tg", d.iter * d.tg), ("loop", d.block)):
        if block > d.size or d.size % block:
            return knob
    return "loop"
