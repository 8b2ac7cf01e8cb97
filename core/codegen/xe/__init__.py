"""The Xe code generator (Xe-HPG ``xehpg``, Xe-HPC ``xehpc``): final IR to IGA assembly.

``lower_kernel(kernel, body, target)`` returns a :class:`~kdd.core.codegen.listing.Listing`
without assembling it; ``kdd.core.codegen.generate_asm`` adds the assembler report.
Modules: ``abi`` (payload registers), ``liveness`` (program points, live
intervals, buffer roles), ``regalloc`` (the GRF allocator), ``allocation``
(the allocator's walk: every allocation decision, without code; the IR
register model of Xe), ``operand``
(regions and immediates), ``emitter`` (lines with live registers), ``isa``
(expressions, region-legal ALU, emulation), ``sends`` (LSC messages and
headers), ``tensor`` (dpas, mad, reorders), ``lower`` (the IR visitor),
``stats`` (instruction mix, roofline), ``verify`` (the independent register
verifier used by tests).
"""
from __future__ import annotations

from kdd.core.toolchain import find_tool

from ..assembler import Assembly
from ..errors import AssemblerRejected
from ..listing import AsmLine, Listing, ir_model_registers, ir_nodes
from .allocation import BodyFacts, with_remat
from .lower import XeLowering
from .stats import instruction_mix, roofline


def _budget(kernel, target) -> int:
    return kernel.regs or target.registers.modes[0]


def _lower(kernel, body, target, budget: int) -> XeLowering:
    """Lowering with the allocator's answers to running out (``allocation.with_remat``: headers stop rotating,
    then values are recomputed); out of registers is raised when nothing is left to recompute."""
    facts = BodyFacts(body, target, [a.var.name for a in kernel.args])

    def attempt(remat, rotation, compact, linger):
        cg = XeLowering(kernel, body, target, budget, remat, rotation, compact, linger, facts)
        cg.run()
        cg.rematerialized = sorted(remat)
        return cg
    return with_remat(attempt, body)


def lower_kernel(kernel, body, target, ir_map: bool = True) -> Listing:
    """Lower ``body`` (final IR of ``kernel``) for ``target``; raises ``OutOfRegisters`` or
    ``CodegenUnsupported``. Without ``ir_map`` the lines carry no IR node and the listing no IR register
    model figure (``ir`` None): what only a shown listing or the stats read."""
    return _listing(kernel, body, target, _lowered(kernel, body, target), ir_map)


def _lowered(kernel, body, target) -> XeLowering:
    """The lowering of ``body`` in the config's budget, its registers closed: the code, not yet the listing."""
    cg = _lower(kernel, body, target, _budget(kernel, target))
    cg.regs.close()
    return cg


def _listing(kernel, body, target, cg: XeLowering, ir_map: bool = True) -> Listing:
    """The listing of a finished lowering: lines (with their IR nodes), peak, allocations, mix and roofline
    (and with ``ir_map`` the IR register model's figure)."""
    nodes = ir_nodes(body) if ir_map else {}
    lines = [AsmLine(ln.text, ln.busy, None, nodes.get(id(ln.node)) if ln.node is not None else None)
             for ln in cg.em.lines]
    peak, peak_line = -1, 0
    for i, ln in enumerate(cg.em.lines):
        if ln.pipe is not None and ln.busy > peak:
            peak, peak_line = ln.busy, i
    rb = cg.rb
    allocations = [{"label": a.label, "category": a.category, "start": a.start, "bytes": a.size,
                    "first_line": a.first_line, "last_line": a.last_line}
                   for a in cg.regs.history if a.last_line >= a.first_line]
    by_label: dict[str, int] = {}
    for a in allocations:
        if a["first_line"] <= peak_line <= a["last_line"]:
            by_label[a["label"]] = by_label.get(a["label"], 0) + a["bytes"]
    by_label = {k: -(-v // rb) for k, v in by_label.items()}
    abi = [f.to_dict(rb) for f in cg.payload]
    model = ir_model_registers(kernel, body, target) if ir_map else None
    return Listing(target.name, lines, peak, peak_line, _budget(kernel, target), model, by_label,
                   instruction_mix(cg.em.lines, cg.loops), roofline(kernel, target, cg.em.lines), abi,
                   allocations=allocations, reg_bytes=rb, rematerialized=cg.rematerialized,
                   slm_bytes=max((b + s for b, s in cg.slm_base.values()), default=0))


def assembled(kernel, body, target, check: bool = True, ir_map: bool = True) -> Listing:
    """:func:`lower_kernel`'s listing with (``check``) the assembler's report; a listing the installed
    assembler rejects raises :class:`AssemblerRejected` (a generator bug). Without ``ir_map`` (figures
    only: no listing or stats shows this report) the binary is not disassembled and assembled again:
    the report's ``round_trip`` (not tried) and ``version`` are None, and iga64 runs once, not four times."""
    cg = _lowered(kernel, body, target)
    if not check:
        return _listing(kernel, body, target, cg, ir_map)
    # iga64 (three runs: assemble, disassemble, assemble again) runs as processes while this thread
    # maps IR lines, walks the IR register model and counts the mix: a compile waits for the longer
    asm = "\n".join(ln.text for ln in cg.em.lines) + "\n"  # the listing's asm
    running = Assembly(asm, target.assembler, f"-p={target.xe.iga_platform}", round_trip=ir_map, versioned=ir_map)
    try:
        listing = _listing(kernel, body, target, cg, ir_map)
    finally:
        report = running.report()  # its scratch folder goes whatever happens
    if report.binary_bytes is None and find_tool(target.assembler[0]) is not None:
        raise AssemblerRejected(report.tool, report.messages)
    listing.assembler = report.to_dict()
    return listing
