"""Hovers of ``[config]``: a knob, the ``line`` key, and the table header.

A knob hover says what the knob means (its ``KNOBS`` doc), the value in effect
and where it came from, any error or issue about it, and what the whole
config in effect gives: the tiling (per-thread and per-group tiles, the
thread-group grid, the number of thread groups) and the register and SLM
budget, each line with its formula. ``tg`` also draws the group's threads;
on sm_90, ``fma`` and ``iter`` draw how a warp's lanes hold the C tile.
The header hover lists every knob in effect, with a section for the
defaults the heuristic filled in.
"""
from __future__ import annotations

import re

from kdd.core.config import KNOB_BY_KEY, KNOBS, LINE_KEYS, Budget, BudgetLine, Knob, Tiling
from kdd.core.config.budget import FLOOR
from kdd.core.config.mapping import LINE_KEY

from .hover_lanes import fma_form, fragment_section, warp_tile_section
from .hover_problem import error_text
from .hover_text import block, code, join, section, table, times
from .schema import LINE

GRID_LIMIT = 16
NEEDS_PROBLEM = "(the config in effect is shown once [problem] and [target] are valid)"


def _line_form(knob: Knob, value) -> str:
    return code(f"{knob.onednn}={knob.codec.format(value)}")


def _knob_head(knob: Knob) -> str:
    return join(f"**{code(knob.key)}** (oneDNN {code(knob.onednn + '=')}): {knob.doc}",
                f"Allowed: {knob.allowed}. Example: {code(knob.example)}.")


def _in_effect(ctx, knob: Knob) -> str:
    if ctx.config is None:
        return NEEDS_PROBLEM
    source = ctx.user.sources.get(knob.key, "default (not written)")
    return f"In effect: {_line_form(knob, getattr(ctx.config, knob.key))}, {source}."


def _problems(ctx, key: str) -> str:
    """The error that set ``key`` aside, and the issues the config in effect has with it."""
    lines = []
    if key in ctx.user.errors:
        lines.append(f"{error_text(ctx.user.errors[key])} (the default is used instead)")
    lines += [f"**{i.severity}**: {i.message}" for i in ctx.issues if i.knob == key]
    return "\n\n".join(lines)


def _worker(ctx) -> str:
    return "warps" if ctx.target.lanes.fixed else "threads"  # a thread of fixed lanes is a warp


def _role_dims(tiling: Tiling, role: str, attr: str) -> str:
    dims = [f"{d.name}{getattr(d, attr)}" for d in tiling.role(role) if getattr(d, attr) > 1]
    return " ".join(dims) or "-"


def tiling_section(ctx) -> str:
    """Per-dim blocks and the tiles and grids they make."""
    t = ctx.budget.tiling
    rows = [(code(d.name), d.role.upper(), d.size, d.iter, d.tg, d.loop, d.block, d.grid, d.padded)
            for d in t.dims if d.size > 1 or d.block > 1]
    worker = _worker(ctx)
    device = ctx.target.device
    lines = [
        f"- per thread (`iter`): C {t.m_thread}x{t.n_thread} (M x N), K {t.k_iter} per iteration",
        f"- per thread group: C {t.m_group}x{t.n_group} (M x N), K {t.k_group} in {t.k_iters} iterations",
        f"- thread-group grid X x Y x Z = {times(t.tg_grid)} = {t.threads_per_group} {worker} "
        f"(X: N dims {_role_dims(t, 'n', 'tg')}; Y: M dims {_role_dims(t, 'm', 'tg')})",
        f"- kernel grid X x Y x Z = {times(t.kernel_grid)} = {t.groups} thread groups "
        f"({t.groups / device.cores:.3g} per {device.core_name} of the {device.cores}-{device.core_name} "
        f"{device.name})",
        f"- useful work: {t.efficiency:.1%} of the computed space (the rest is padding)",
    ]
    if t.split_k:
        lines.append(f"- the reduction is split over {t.kernel_grid[2]} groups in Z (partial sums, atomic stores)")
    return section("Tiling", table(("dim", "role", "size", "iter", "tg", "loop", "group block", "groups",
                                    "padded"), rows), "\n".join(lines))


def group_picture(ctx) -> str:
    """The thread ids of one thread group laid out over its Y (M) x X (N) grid."""
    import numpy as np  # start-up imports no numpy (docs/architecture.md)

    x, y, z = ctx.budget.tiling.tg_grid
    # Only the shown corner is built: a group may be far too large to draw (the validator says so).
    shown = np.arange(min(y, GRID_LIMIT))[:, None] * x + np.arange(min(x, GRID_LIMIT))
    width = len(str(int(shown.max())))
    lines = ["[" + " ".join(str(v).rjust(width) for v in row) + (" …" if x > GRID_LIMIT else "") + "]"
             for row in shown]
    if y > GRID_LIMIT:
        lines.append("…")
    more = f"; {z} such layers along Z" if z > 1 else ""
    return section(f"{_worker(ctx).capitalize()} of one group (rows: Y = M, columns: X = N; id = y*{x} + x{more})",
                   block("\n".join(lines)))


def _what(line: BudgetLine) -> str:
    return f"{line.title} ({line.note})" if line.note else line.title


def _verdict(total: int, capacity: int) -> str:
    return f"over by {total - capacity}" if total > capacity else f"{capacity - total} free"


def budget_section(budget: Budget, registers: dict | None = None) -> str:
    """Registers and SLM against the target's capacity. The register lines are the floor (C, A, B: what
    every build holds at once, the only register lines that refuse a config before the build) with their
    formulas; the total is the compile's (``registers``, its ``stats.registers``): the code generator's
    allocation with the built IR's register model beside it, or the model alone where none ran. Before a
    compile only the floor is known."""
    regs = table(("label", "what", "formula", "amount"),
                 [(code(b.label), _what(b), code(b.formula), b.amount) for b in budget.regs if b.label in FLOOR])
    if registers is None:
        reg_total = (f"**Floor: {budget.reg_floor} of {budget.reg_capacity}** {budget.reg_unit} "
                     f"({_verdict(budget.reg_floor, budget.reg_capacity)}); the total is the built kernel's "
                     f"allocation, once it is compiled")
    else:
        figure = registers["estimate"]
        reg_total = (f"**Total by the {registers['source']}: {figure} of {budget.reg_capacity}** "
                     f"{budget.reg_unit} ({_verdict(figure, budget.reg_capacity)})")
        if registers["allocated"] is not None:
            reg_total += f"; the built IR's register model: {registers['ir']}"
    slm_rows = [(code(b.label), _what(b), code(b.formula), b.amount) for b in budget.slm]
    slm = table(("label", "what", "formula", "bytes"), slm_rows) if slm_rows else "No SLM buffers."
    slm_over = budget.slm_total - budget.slm_capacity
    slm_total = (f"**SLM total: {budget.slm_total:,} of {budget.slm_capacity:,}** bytes per thread group "
                 f"({'over by ' + format(slm_over, ',') if slm_over > 0 else 'fits'})")
    return join(section("Registers (the floor every build holds; the total from the built kernel)", regs,
                        reg_total),
                section("SLM budget", slm, slm_total))


def _lanes(ctx, key: str) -> str:
    """On sm_90: the mma fragment (``fma``) or the warp's C tile (``iter``) as lane grids."""
    if not ctx.target.lanes.fixed or key not in ("fma", "iter"):
        return ""
    shape = fma_form(ctx.target, ctx.config, ctx.problem)
    if shape is None:
        return ""
    if key == "fma":
        return fragment_section(shape)
    t = ctx.budget.tiling
    return warp_tile_section(shape, t.m_thread, t.n_thread)


def config_effects(ctx, key: str | None = None) -> str:
    """Tiling, budget and (per ``key``) pictures of the config in effect."""
    if ctx.config is None:
        return NEEDS_PROBLEM
    return join(tiling_section(ctx), group_picture(ctx) if key == "tg" else "", _lanes(ctx, key),
                budget_section(ctx.budget, ctx.registers))


def knob_hover(ctx, key: str, via_line: str = "") -> str:
    """Hover of knob ``key`` (``via_line``: the ``line`` token that sets it, if that is where it was hovered)."""
    knob = KNOB_BY_KEY[key]
    where = f"Set in `line` by {code(via_line)}." if via_line else ""
    return join(_knob_head(knob), where, _in_effect(ctx, knob), _problems(ctx, key), config_effects(ctx, key))


def line_hover(ctx, text: str, offset: int | None) -> str:
    """Hover of ``line``: the knob of the token under the cursor, or the whole line."""
    if offset is not None:
        for m in re.finditer(r"\S+", text):
            name = m.group().partition("=")[0]
            if m.start() <= offset < m.end() and name in LINE_KEYS:
                return knob_hover(ctx, LINE_KEYS[name][0].key, via_line=m.group())
    set_here = [k for k, origin in ctx.user.sources.items() if origin.key == LINE_KEY]
    listed = ", ".join(code(k) for k in set_here) or "none"
    return join(f"**{code('line')}**: {LINE.doc}", f"Knobs set by this line: {listed}.", _problems(ctx, "line"),
                config_effects(ctx))


def config_table_hover(ctx) -> str:
    """Hover of the ``[config]`` header: every knob in effect and the defaults filled in."""
    head = "**[config]**: kernel parameters; every knob left out comes from the default heuristic"
    errors = "\n\n".join(f"`{k}`: {error_text(e)}" for k, e in ctx.user.errors.items())
    if ctx.config is None:
        return join(head, errors, NEEDS_PROBLEM)
    sources = ctx.user.sources
    in_effect = [k for k in KNOBS if getattr(ctx.config, k.key) is not None]  # optional knobs may be unset
    rows = [(code(k.key), _line_form(k, getattr(ctx.config, k.key)), str(sources.get(k.key, "default")))
            for k in in_effect]
    defaults = [f"- {code(k.key)}: {_line_form(k, getattr(ctx.config, k.key))}" for k in in_effect
                if k.key not in sources]
    return join(head, errors,
                table(("knob", "in effect", "from"), rows),
                section("Defaults in effect", "\n".join(defaults) or "none: every knob is written"),
                f"As one oneDNN config line: {code(ctx.config.line())}",
                config_effects(ctx))
