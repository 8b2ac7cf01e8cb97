"""A reduced problem for the correctness check: the same kernel structure at a size the check runs.

Checking the real problem (a 4096^3 GEMM) would take minutes, so a problem over
:data:`REDUCED_MACS` multiply-adds is checked at a reduced shape under that
(:func:`reduce_for_check`; a check refuses more than :data:`MAX_CHECK_MACS`
unless asked). What the reduction keeps:

- kernel sizes, strides, both paddings and dilations: an output spatial size
  shrinks and its input by whole strides, so the right padding stays;
- the tail of every dim: a size ``d`` over its block ``B`` becomes
  ``B + tail`` with ``tail = (d - 1) % B + 1`` (two blocks, the last as
  partial as the full problem's);
- two trips of every loop the full shape runs: a dim is cut to two thread
  groups' blocks (``iter * tg * loop`` of the config), or, where one group
  covers it, to two trips of its reduction loop (``iter * tg``), the K loop
  included.

Blocks come from the config's tiling of the full problem (``blocks``); without
one, a unit per kind of dim stands in (64 channels and M/N/K, 8 for the
minibatch, groups and output spatial sizes, 2 for GEMM batch dims). Only when
that is still over the bound does a dim go below two blocks or two trips,
largest cut first; the :class:`Reduction` says which.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from .conv_shape import ConvShape
from .gemm_shape import GemmShape

CHANNELS, MINIBATCH, SPATIAL, GEMM, BATCH = 64, 8, 8, 64, 2

# The interpreter runs a few tens of millions of multiply-adds a second: beyond this a check would
# keep an editor waiting for many seconds, so it is refused unless asked for.
MAX_CHECK_MACS = 1 << 25
# What an automatic reduction aims at: the simulators run a few million thread-instructions a second
# (about one per multiply-add in the small tiles of a reduced shape), and the on-save check runs the code.
REDUCED_MACS = 1 << 22


def check_macs(problem) -> int:
    """Multiply-adds a correctness check of ``problem`` interprets (half its flops)."""
    return problem.flops() // 2


@dataclass(frozen=True)
class Block:
    """How a config tiles one dim: ``block`` elements per thread group (``iter * tg * loop``) and
    ``trip`` elements per reduction-loop trip (``iter * tg``; equal to ``block`` without a loop)."""

    block: int
    trip: int


@dataclass(frozen=True)
class Reduction:
    """The check shape of a problem: ``shape``, the sizes it changed (``changes``: ``"mb 22 -> 6"``),
    the dims it had to cut below two blocks or two loop trips, or to another tail, to fit the bound
    (``short``), and ``config_note`` when the check runs another config than the compiled one."""

    shape: ConvShape | GemmShape
    changes: tuple[str, ...] = ()
    short: tuple[str, ...] = ()
    config_note: str | None = None   # set when the check shape runs another config than the compiled one

    @property
    def reduced(self) -> bool:
        return bool(self.changes)

    def describe(self) -> str:
        """What was reduced and what was kept, in one sentence."""
        if not self.changes:
            return "not reduced"
        kept = "kernel sizes, strides, padding, dilation and tails kept"
        loops = ("; two trips of every loop the full shape runs" if not self.short else
                 f"; cut further to fit the bound: {', '.join(self.short)} (fewer thread groups or loop trips "
                 f"than the full shape, or another tail)")
        note = f"; {self.config_note}" if self.config_note else ""
        return f"reduced {', '.join(self.changes)} ({kept}{loops}){note}"

    def to_dict(self) -> dict:
        return {"shape": self.shape.canonical(), "changes": list(self.changes), "short": list(self.short),
                "text": self.describe()}


def _tail(d: int, unit: int) -> int:
    return (d - 1) % unit + 1


# How much of the kernel's structure a size keeps: two blocks or two loop trips with the tail; fewer
# spatial points or minibatch entries (every padding, stride and loop trip still run); a lone tail.
STRUCTURE, FEWER, TAIL = 0, 1, 2


@dataclass
class _Dim:
    """One reducible size: its name, full size, the sizes it may take (largest first) with what each
    keeps (``levels``: :data:`STRUCTURE`, :data:`FEWER`, :data:`TAIL`) and whether it still runs two
    trips of the dim's loops (``two``)."""

    name: str
    full: int
    rungs: list[int]
    levels: list[int]
    two: list[bool]
    at: int = 0

    @property
    def size(self) -> int:
        return self.rungs[self.at]


def _keeps(n: int, d: int, b: int, t: int) -> bool:
    """Whether size ``n`` runs what size ``d`` runs of a dim with block ``b`` and loop trip ``t``: as many
    thread groups' blocks up to two, the same tail, and as many loop trips in a group up to two."""
    return (min(-(-n // b), 2) == min(-(-d // b), 2) and (d <= b or (n - 1) % b == (d - 1) % b)
            and min(-(-min(n, b) // t), 2) == min(-(-min(d, b) // t), 2))


def _dim(name: str, d: int, blk: Block, fewer: tuple[int, ...] = (), valid: Callable[[int], bool] = lambda n: True,
         least: int = 1) -> _Dim:
    """The sizes ``d`` may shrink to: two groups' blocks with the tail, then two loop trips with the tail
    (:data:`STRUCTURE`), then the ``fewer`` sizes, then one block's or trip's tail and ``least``
    (:data:`TAIL`); each valid by ``valid``. It starts at the smallest structure rung."""
    b, t = blk.block, blk.trip
    levels: dict[int, int] = {}
    if d > b:
        levels[b + _tail(d, b)] = STRUCTURE
    if d > t and t < b:     # two loop trips: all the structure within one group, fewer groups beyond
        levels.setdefault(t + _tail(min(d, b), t), STRUCTURE if d <= b else FEWER)
    levels.setdefault(d, STRUCTURE)
    for n in fewer:
        levels.setdefault(n, FEWER)
    for n in (_tail(d, b), _tail(d, t), least):
        levels.setdefault(n, TAIL)
    ordered = sorted((n for n in levels if n <= d and valid(n)), reverse=True)
    start = min((n for n in ordered if levels[n] == STRUCTURE), default=d)
    ordered = ordered[ordered.index(start):] if start in ordered else ordered
    return _Dim(name, d, ordered, [levels[n] for n in ordered], [_keeps(n, d, b, t) for n in ordered])


def _dims(shape, blocks: dict[str, Block]) -> list[_Dim]:
    def blk(name: str, unit: int) -> Block:
        return blocks.get(name) or Block(unit, unit)
    if isinstance(shape, GemmShape):
        return [*(_dim(f"b{i}", b, blk(f"b{i}", BATCH)) for i, b in enumerate(shape.batch)),
                *(_dim(n, getattr(shape, n), blk(n, GEMM)) for n in "mnk")]
    mb = blk("mb", MINIBATCH)
    out = [_dim("g", shape.g, blk("g", MINIBATCH)),
           _dim("mb", shape.mb, mb, tuple(n + _tail(shape.mb, n) for n in (8, 4, 2) if n < mb.block)),
           _dim("ic", shape.ic // shape.g, blk("ic", CHANNELS)), _dim("oc", shape.oc // shape.g, blk("oc", CHANNELS))]
    for a in shape.used_axes:
        o, i, s = getattr(shape, f"o{a}"), getattr(shape, f"i{a}"), getattr(shape, f"s{a}")
        b = blocks.get(f"o{a}") or blocks.get(f"i{a}")
        b = Block(max(b.block, SPATIAL), max(b.trip, 1)) if b else Block(SPATIAL, SPATIAL)
        out.append(_dim(f"o{a}", o, b, tuple(n + _tail(o, n) for n in (8, 4, 2)),
                        lambda n, o=o, i=i, s=s: i - (o - n) * s >= 1, least=min(o, 2)))
    return out


def _shape_of(shape, dims: list[_Dim]):
    sizes = {d.name: d.size for d in dims}
    if isinstance(shape, GemmShape):
        return replace(shape, batch=tuple(sizes[f"b{i}"] for i in range(len(shape.batch))),
                       m=sizes["m"], n=sizes["n"], k=sizes["k"])
    out = {"g": sizes["g"], "mb": sizes["mb"], "ic": sizes["g"] * sizes["ic"], "oc": sizes["g"] * sizes["oc"]}
    for a in shape.used_axes:
        o = sizes[f"o{a}"]
        out[f"o{a}"] = o
        out[f"i{a}"] = getattr(shape, f"i{a}") - (getattr(shape, f"o{a}") - o) * getattr(shape, f"s{a}")
    return replace(shape, **out)


def reduce_for_check(shape: ConvShape | GemmShape, macs: Callable[[object], int],
                     blocks: dict[str, Block] | None = None, bound: int = REDUCED_MACS) -> Reduction:
    """The check shape of ``shape`` (see the module doc): unchanged when ``macs(shape)`` is within
    ``bound``; else every dim at two blocks or two loop trips with its tail, then, while still over the
    bound, one dim a rung lower: the rung that keeps the most of the structure, the largest dim first."""
    if macs(shape) <= bound:
        return Reduction(shape)
    dims = _dims(shape, blocks or {})
    reduced = _shape_of(shape, dims)
    while macs(reduced) > bound:
        lower = [d for d in dims if d.at + 1 < len(d.rungs)]
        if not lower:
            break               # every dim at its least size: the kernel sizes alone are over the bound
        # Keep as much structure as the bound allows: the cut that keeps the most, the largest dim first.
        cut = min(lower, key=lambda d: (d.levels[d.at + 1], -d.size))
        cut.at += 1
        reduced = _shape_of(shape, dims)
    changes = tuple(f"{d.name} {d.full} -> {d.size}" for d in dims if d.size != d.full)
    short = tuple(d.name for d in dims if not d.two[d.at] and d.size != d.full)
    return Reduction(reduced, changes, short)


def reduce_problem(problem, blocks: dict[str, Block] | None = None, bound: int = REDUCED_MACS) -> Reduction:
    """:func:`reduce_for_check` of ``problem``'s shape, its multiply-adds counted as the check counts them."""
    return reduce_for_check(problem.shape, lambda shape: check_macs(replace(problem, shape=shape)), blocks, bound)
