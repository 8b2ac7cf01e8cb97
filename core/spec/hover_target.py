"""Hover of a target name (``[target] hw``): registers, SIMD, FMA forms, SLM, devices and peaks."""
from __future__ import annotations

from kdd.core.targets import TARGETS, Target

from .hover_text import code, count, join, section, table


def _registers(t: Target) -> str:
    r = t.registers
    modes = " or ".join(map(str, r.modes)) if r.modes else f"{r.min_regs}..{r.max_regs} (`.maxnreg`)"
    unit = f"{r.reg_bytes} B per register per thread" if r.lane_bytes is None else \
        f"{r.lane_bytes} B per lane, {r.reg_bytes} B across the warp"
    return section("Register file",
                   f"- registers per thread: {modes}, allocated in steps of {r.granularity}\n"
                   f"- register size: {unit}\n"
                   f"- per {t.device.core_name}: {r.core_bytes:,} bytes\n"
                   f"- reserved by kdd: {r.reserved} ({r.reserved_source})\n"
                   f"- source: {r.source}")


def _fmas(t: Target) -> str:
    rows = [(code(s.fma), f"{s.a}*{s.b}->{s.acc}", f"{s.m}x{s.n}x{s.k}", s.simd, s.flops, code(s.spelling),
             s.math or "") for s in t.fma_shapes]
    return section("Multiply-add forms (C[m x n] += A[m x k] * B[k x n] per thread)",
                   table(("fma", "types", "m x n x k", "simd", "ops", "spelling", "computes in"), rows),
                   f"Default preference: {', '.join(t.fma_preference)}.")


def _devices(t: Target) -> str:
    parts = []
    for d in t.devices:
        rows = [(p.engine, p.dtype, count(p.rate.value, "OP/s"), p.rate.source) for p in d.peaks]
        parts.append(join(
            f"**{d.name}**: {d.cores} {d.core_name}s at {d.clock_mhz} ({d.clock_mhz.source}); "
            f"memory {count(d.bandwidth.value, 'B/s')} ({d.bandwidth.source})",
            table(("engine", "type", "peak", "source"), rows)))
    return join(*parts)


def target_hover(name: str) -> str:
    """Everything kdd knows about target ``name``; the known names when it is not one."""
    t = TARGETS.get(name)
    if t is None:
        return f"Unknown target {code(name)}; known: {', '.join(code(n) for n in TARGETS)}."
    return join(
        f"**{t.name}**: {t.title} ({t.isa} ISA)",
        _registers(t),
        f"**SIMD widths**: {', '.join(map(str, t.simd_widths))} (default {t.default_simd})",
        _fmas(t),
        f"**Shared local memory**: {t.slm.per_group:,} bytes per thread group, {t.slm.per_core:,} per "
        f"{t.device.core_name} ({t.slm.source})",
        f"**Thread groups**: at most {t.max_group_items} work items; largest message {t.max_message_bytes} B "
        "per thread",
        f"**Assembly checked by**: {code(' '.join(t.assembler))}",
        _devices(t),
    )
