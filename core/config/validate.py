"""Checks of a complete config against its problem and target, as structured issues.

``validate_config`` never raises on a bad config: it lists what is wrong.
Errors: an instruction, type combination, SIMD width or register count the
target does not have; tiles naming dims the problem lacks or blocking dims
of the wrong role; an ``iter`` tile that is not a multiple of the
instruction's shape; a thread group larger than the target allows; dpasw
with an odd X; subtiles that do not split evenly; register or SLM overflow;
a matrix instruction form the builder does not generate (:mod:`.buildable`);
a loop with whole iterations of padding; a reduction split across the grid
with post-ops or into a destination narrower than the accumulator; K
slicing (``tg`` over K) with bwd_w's bias gradient.
Warnings: padding (blocks that exceed or do not divide a dim, an M per
thread padded to the instruction's M), under half of the issued multiply lanes useful (:mod:`.lanes`), reduced precision. Info: a reduction split across thread groups.
"""
from __future__ import annotations

from math import ceil, prod

from kdd.core.layout.layout import parse_layout
from kdd.core.problem.post_ops import Bias
from kdd.core.targets import FmaShape, Target

from .budget import estimate_budget
from .buildable import buildable, unbuilt_reason
from .issues import ConfigIssue
from .kernel_config import KernelConfig
from .knobs import did_you_mean
from .lanes import MIN_USEFUL, lane_use
from .operands import operands
from .tiling import Tiling, derive_tiling, mad_over_batch

# Which GEMM roles each tile knob may block.
TILE_ROLES = {"iter": "bmnk", "tg": "mnk", "loop": "k", "unroll": "k"}
_ROLE_WORDS = {"m": "M", "n": "N", "k": "K", "b": "batch"}


def validate_config(problem, config: KernelConfig, target: Target, reduced: bool = False) -> list[ConfigIssue]:
    """Every issue of a complete ``config`` for ``problem`` on ``target``.

    ``reduced`` says ``problem`` is a reduced check problem run with knobs
    sized for a larger one: loop iterations that compute only padding are
    then expected, not an error.
    """
    config.require_complete("validate_config")
    if config.schedule != "classic":
        return _check_schedule(config, target)
    issues: list[ConfigIssue] = []
    shape = _check_fma(problem, config, target, issues)
    if not target.registers.allows(config.regs):
        r = target.registers
        allowed = " or ".join(map(str, r.modes)) if r.modes else f"{r.min_regs}..{r.max_regs}"
        issues.append(ConfigIssue("regs", f"regs={config.regs} is not available on {target.name} (allowed: {allowed})"))
    tiles_ok = _check_tiles(problem, config, issues)
    tiling = derive_tiling(problem, config)
    if tiles_ok:
        _check_padding(tiling, issues, reduced)
    if tiles_ok and tiling.split_k:
        _check_split(problem, issues)
    if tiles_ok and tiling.k_slices > 1 and problem.prop == "bwd_w" and problem.post_ops:
        issues.append(ConfigIssue("tg", "tg splits K across the threads of a group, and the bias gradient of bwd_w "
                                        "is not summed across them; drop the bias or tg over K dims"))
    if shape is not None:
        _check_shape(tiling, config, shape, issues)
    if shape is not None and tiles_ok and not reduced:
        _check_lanes(problem, config, target, tiling, issues)
    _check_group(tiling, config, target, issues)
    if config.prefetch.enabled and not target.messages.prefetch:
        issues.append(ConfigIssue("prefetch", f"prefetch is an Xe knob; on {target.name} buffer through shared "
                                              f"memory with slm bufs"))
    _check_onednn_only(problem, config, tiling, issues)
    if target.registers.allows(config.regs):
        issues += estimate_budget(problem, config, target).issues()
    return issues


def _check_schedule(config: KernelConfig, target: Target) -> list[ConfigIssue]:
    """A CUTLASS-style schedule (``schedule=tma*``) is built from ``tile``, ``stages`` and ``cluster`` alone
    (the builder refuses, naming the knob, what it cannot generate); the tiling knobs are not read."""
    if target.isa != "ptx":
        return [ConfigIssue("schedule", f"schedule={config.schedule} is an sm_90 schedule; {target.name} runs "
                                        "schedule=classic")]
    return []


def _check_onednn_only(problem, config: KernelConfig, tiling: Tiling, issues: list[ConfigIssue]) -> None:
    """The knobs kdd reads from oneDNN's lines: the one it obeys (``global_reduction``), the layouts it
    compares with the problem's, and those it keeps without generating (warnings, see docs/config.md)."""
    if not config.global_reduction and tiling.split_k:
        issues.append(ConfigIssue("global_reduction", "global-reduction=0, but loop leaves K to the kernel grid "
                                                      "(raise loop so that iter x tg x loop covers K)"))
    if not config.walk_order.is_empty:
        issues.append(ConfigIssue("walk_order", f"walk-order={config.walk_order} is kept but not generated: kdd "
                                                f"walks the kernel grid in its own order (N dims on X, M on Y, B "
                                                f"and K on Z)", "warning"))
    if config.slm.sync >= 0:
        issues.append(ConfigIssue("slm", f"s=...v{config.slm.sync} (oneDNN's SLM sync scheme) is kept but not "
                                         f"generated: kdd places its own barriers", "warning"))
    if config.vec != config.simd:
        issues.append(ConfigIssue("vec", f"vec={config.vec} is kept but not generated: kdd's multiply-add vectors "
                                         f"are simd={config.simd} lanes", "warning"))
    if config.pad_slm:
        issues.append(ConfigIssue("pad_slm", "pad-slm=1 is kept but not generated: kdd lays SLM tiles out dense",
                                  "warning"))
    if config.decompress is not None and getattr(problem, "decompression", None) is None:
        issues.append(ConfigIssue("decompress", f"decompress={config.decompress} has no effect: the problem has no "
                                                f"weight decompression ([problem] scales)", "warning"))
    if config.bwd_d_optimize != "none":
        issues.append(ConfigIssue("bwd_d_optimize", f"bwd-d-optimize={config.bwd_d_optimize} is kept but not "
                                                    f"generated: kdd's bwd_d kernels mask the taps it would skip",
                                  "warning"))
    for tensor in ("src", "wei", "dst", "bia"):
        written = getattr(config, f"{tensor}_layout")
        if written == "any":
            continue
        compute = written.split(".")[0]
        mine = problem.tags.get(tensor, "any")
        if tensor == "bia" or mine == "any":
            where = "a vector" if tensor == "bia" else "its own choice for [problem] " + tensor + ' = "any"'
            issues.append(ConfigIssue(f"{tensor}_layout", f"{tensor}={written} is kept but not generated: kdd uses "
                                                          f"{where}", "warning"))
        elif not _same_layout(problem, tensor, compute, mine):
            issues.append(ConfigIssue(f"{tensor}_layout", f"{tensor}={written} disagrees with [problem] {tensor} = "
                                                          f'"{mine}"; write the same layout in both'))


def _same_layout(problem, tensor: str, a: str, b: str) -> bool:
    """Whether tags ``a`` and ``b`` lay ``tensor`` of ``problem`` out alike (unreadable tags differ)."""
    dims = problem.tensor_dims(tensor)
    dtype = getattr(problem.types, tensor)
    try:
        la, lb = (parse_layout(t, [n for _, n in dims], dtype, dim_names=[d for d, _ in dims]) for t in (a, b))
    except ValueError:
        return a == b
    return la.is_equal(lb)


def _check_fma(problem, config: KernelConfig, target: Target, issues: list[ConfigIssue]) -> FmaShape | None:
    """Instruction, types and SIMD width; returns the instruction form when they are valid."""
    ops = operands(problem)
    if config.fma not in target.fma_kinds:
        issues.append(ConfigIssue("fma", f"{target.name} has no '{config.fma}' instruction "
                                         f"(has: {', '.join(target.fma_kinds)})"))
        return None
    typed = target.shapes(fma=config.fma, a=ops.a, b=ops.b)
    if not typed:
        combos = sorted({f"{s.a}*{s.b}" for s in target.shapes(fma=config.fma)})
        issues.append(ConfigIssue("fma", f"{config.fma} on {target.name} does not multiply {ops.a}*{ops.b} "
                                         f"(it takes {', '.join(combos)})"))
        return None
    if not buildable(typed):
        others = [k for k in target.fma_kinds if buildable(target.shapes(fma=k, a=ops.a, b=ops.b))]
        issues.append(ConfigIssue("fma", f"{unbuilt_reason(typed[0])}; use fma={' or '.join(others) or 'mad'}"))
        return None
    typed = buildable(typed)
    if config.simd not in target.simd_widths:
        issues.append(ConfigIssue("simd", f"simd={config.simd} is not a SIMD width of {target.name} "
                                          f"(widths: {', '.join(map(str, target.simd_widths))})"))
        return None
    sized = [s for s in typed if s.simd == config.simd]
    if not sized:
        widths = sorted({s.simd for s in typed})
        issues.append(ConfigIssue("simd", f"{config.fma} on {target.name} needs simd="
                                          f"{' or '.join(map(str, widths))}, got simd={config.simd}"))
        return None
    exact = [s for s in sized if s.acc == ops.acc]
    shape = (exact or sized)[0]
    if shape.acc != ops.acc:
        issues.append(ConfigIssue("fma", f"{config.fma} accumulates {ops.a}*{ops.b} in {shape.acc}, the problem "
                                         f"accumulates in {ops.acc}: reduced precision", "warning"))
    if shape.math:
        issues.append(ConfigIssue("fma", f"{config.fma} computes {ops.a}*{ops.b} in {shape.math}: reduced "
                                         f"precision", "warning"))
    return shape


def _check_tiles(problem, config: KernelConfig, issues: list[ConfigIssue]) -> bool:
    """Dim names and roles of every tile knob; False when a tile names an unknown dim."""
    gemm = problem.gemm_dims()
    role_of = {name: role for role in "bmnk" for name, _ in getattr(gemm, role)}
    ok = True
    for knob, roles in TILE_ROLES.items():
        tile = getattr(config, knob)
        for dim in tile:
            if dim not in role_of:
                ok = False
                issues.append(ConfigIssue(knob, f"{knob} names '{dim}', which is not a dimension of this "
                                                f"{problem.op} problem (dims: {', '.join(role_of)})"
                                          + did_you_mean(dim, role_of)))
            elif tile.get(dim) > 1 and role_of[dim] not in roles:
                allowed = " and ".join(_ROLE_WORDS[r] for r in roles)
                issues.append(ConfigIssue(knob, f"{knob} blocks '{dim}', a {_ROLE_WORDS[role_of[dim]]} dim; "
                                                f"{knob} blocks {allowed} dims only"))
    for dim in config.unroll:
        u, loop = config.unroll.get(dim), config.loop.get(dim)
        if loop % u:
            issues.append(ConfigIssue("unroll", f"unroll {dim}{u} does not divide loop {dim}{loop}"))
    return ok


def _check_padding(tiling: Tiling, issues: list[ConfigIssue], reduced: bool) -> None:
    """Warn where blocks exceed or do not divide a dim, naming the knob that starts the padding.

    A ``loop`` block with a whole iteration past the dim is an error: it
    computes nothing but padding (``loop = "kh1000000"`` on kh=3 would run a
    million empty iterations). Idle threads of a group only warn: the group
    size is bounded by the target.
    """
    for d in tiling.dims:
        empty = None if reduced else _empty_blocks(d)
        if empty:
            issues.append(ConfigIssue(*empty))
            continue
        for knob, block in (("iter", d.iter), ("tg", d.iter * d.tg), ("loop", d.block)):
            if block > d.size or d.size % block:
                if block > d.size and d.grid == 1:
                    what = f"covers {block} of '{d.name}' but it is {d.size}"
                else:
                    what = f"block {block} of '{d.name}' does not divide {d.size}"
                issues.append(ConfigIssue(knob, f"{what}: {d.padded - d.size} of {d.padded} computed "
                                                f"'{d.name}' are padding ({d.size / d.padded:.0%} useful)",
                                          "warning"))
                break
    if tiling.split_k:
        parts = prod(d.grid for d in tiling.role("k"))
        issues.append(ConfigIssue("loop", f"the reduction is split across {parts} thread groups "
                                          f"(partial sums, atomic stores)", "info"))


def _empty_blocks(d) -> tuple[str, str] | None:
    """``(knob, message)`` when ``loop`` gives ``d`` reduction iterations with no element."""
    step = d.iter * d.tg
    useful = -(-d.size // step)
    if d.loop <= useful:
        return None
    return "loop", (f"loop runs {d.loop} iterations of {step} '{d.name}', but '{d.name}' is {d.size}: "
                    f"{d.loop - useful} would compute only padding (at most {d.name}{useful})")


def _check_split(problem, issues: list[ConfigIssue]) -> None:
    """A reduction split across thread groups whose sum atomics cannot finish (a destination narrower than
    the accumulator, post-ops, a narrow bias gradient) is finished by the last group to arrive
    (``kdd.core.builder.split_k``): say so, as oneDNN's reduction buffer is worth knowing about."""
    ops = operands(problem)
    biases = [op.dt for op in problem.post_ops if problem.prop == "bwd_w" and isinstance(op, Bias)]
    narrow = [t for t in (ops.c, *biases) if t != ops.acc]
    if narrow or (problem.post_ops and problem.prop != "bwd_w"):
        what = " and ".join(filter(None, [f"converts them to {narrow[0]}" if narrow else "",
                                          "applies the post-ops" if problem.post_ops and problem.prop != "bwd_w"
                                          else ""]))
        issues.append(ConfigIssue("loop", f"the partial sums are added into an {ops.acc} scratch buffer, and the "
                                          f"last thread group to arrive at each tile {what}", "info"))


def _check_shape(tiling: Tiling, config: KernelConfig, shape: FmaShape, issues: list[ConfigIssue]) -> None:
    """The thread tile (and its subtiles) must be whole instructions."""
    sub = config.subtiles
    if sub.a > 1 and sub.b > 1:
        issues.append(ConfigIssue("subtiles", f"split A or B, not both (got S={sub})"))
    # Lanes along the batch (depthwise) leave N free of the instruction's width.
    n_inst = 1 if mad_over_batch(config.fma, config.simd, tiling) else shape.n
    for role, size, inst, split in (("M", tiling.m_thread, shape.m, sub.a), ("N", tiling.n_thread, n_inst, sub.b),
                                    ("K", tiling.k_iter, shape.k, 1)):
        if size % inst and role == "M" and split == 1:
            # As oneDNN does: the multiplication's M block is padded; loads read zeros there, stores skip it.
            padded = -(-size // inst) * inst
            issues.append(ConfigIssue("iter", f"iter gives M={size} per thread, padded to {padded} for "
                                              f"{shape.fma}'s M={inst}: {padded - size} of {padded} rows of each "
                                              f"multiplication are padding", "warning"))
        elif size % inst:
            issues.append(ConfigIssue("iter", f"iter gives {role}={size} per thread, not a multiple of "
                                              f"{shape.fma}'s {role}={inst} ({shape.spelling})"))
        elif split > 1 and (size % split or (size // split) % inst):
            issues.append(ConfigIssue("subtiles", f"S={sub} splits {role}={size} into parts that are not "
                                                  f"multiples of {shape.fma}'s {role}={inst}"))


def _check_lanes(problem, config: KernelConfig, target: Target, tiling: Tiling, issues: list[ConfigIssue]) -> None:
    """Warn when under half of the multiply lanes issued do useful work (:mod:`.lanes`), saying why and, for
    a batch of small multiplications (depthwise: one per channel), the form that fills the lanes."""
    use = lane_use(problem, config, target)
    if use is None or use.fraction >= MIN_USEFUL:
        return
    hint = ""
    if use.extents["b"] >= config.simd and not mad_over_batch(config.fma, config.simd, tiling):
        hint = (f"; fma = \"mad\" with iter over the batch dims (a multiple of simd={config.simd}) and N per "
                f"thread not a multiple of simd puts the groups in the SIMD lanes, as oneDNN's depthwise kernels do")
    issues.append(ConfigIssue(use.knob(), f"{use.fraction:.1%} of the multiply lanes {config.fma} issues do useful "
                                          f"work ({use.useful} of {use.issued} multiply-adds), under half: "
                                          f"{use.reason()}{hint}", "warning"))


def _check_group(tiling: Tiling, config: KernelConfig, target: Target, issues: list[ConfigIssue]) -> None:
    x, y, z = tiling.tg_grid
    if target.registers.allows(config.regs) and config.simd in target.simd_widths:
        limit = target.max_group_threads(config.regs, config.simd)
        if x * y * z > limit:
            issues.append(ConfigIssue("tg", f"thread group {x}x{y}x{z} = {x * y * z} threads; {target.name} "
                                            f"allows {limit} with regs={config.regs} simd={config.simd} "
                                            f"({ceil(x * y * z / limit)}x too many)"))
    if config.fma == "dpasw" and x % 2:
        issues.append(ConfigIssue("tg", f"dpasw pairs threads along X; X={x} must be even"))
