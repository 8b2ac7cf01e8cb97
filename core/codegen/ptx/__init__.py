"""The PTX code generator (``sm_90``): final kernel IR to per-lane PTX, with ptxas's and nvdisasm's figures.

API::

    from kdd.core.codegen.ptx import generate_ptx
    listing = generate_ptx(kernel, body, target)   # the same arguments as codegen.generate_asm
    d = listing.to_dict()

``d`` has the shape of the Xe listing (``protocol/asm.schema.json``) plus
what only the NVIDIA path has:

- ``asm``: the PTX module. Every instruction is preceded by ``.loc 1 N 0``
  where ``N`` is the instruction's own 1-based line in ``asm``, so the line
  info ptxas writes (``-lineinfo``) leads every SASS instruction back to its
  PTX line.
- ``lines``: per PTX line ``text``, ``live_regs`` (the most live general
  registers over the SASS instructions made from that line, by nvdisasm; a
  line that made none repeats the line before it), ``live`` (the register
  buffers in scope) and ``ir_node`` (printed IR line, builder step, config
  knob, as on Xe).
- ``sass``: per SASS instruction ``offset``, ``text``, ``live_regs`` (from
  ``nvdisasm --print-life-ranges --life-range-mode count``), ``ptx_line``
  (0-based index into ``lines``, from the cubin's line table, what
  ``nvdisasm --print-line-info`` prints, joined by instruction offset) and
  ``ir_node`` (that PTX line's). This is what ``kdd compile --emit sass``
  shows. ptxas and nvdisasm run in a thread while the IR node map and the
  register model are computed.
- ``registers``: ``peak`` (nvdisasm's most live registers), ``allocated``
  (ptxas ``-v``: registers per thread), ``spill_stores``/``spill_loads``/
  ``stack`` (bytes), ``budget`` (255, or the config's ``regs``), ``source``
  naming the tools; ``estimate`` the config-time estimate.
- ``launch``: ``block`` (threads: 32 per IR thread in x), ``grid``,
  ``shared_bytes`` (one dynamic shared array holds every SLM buffer),
  ``params`` (the kernel arguments, in order, as 64-bit pointers) and
  ``entry`` (the kernel's name in the module); :mod:`.device` launches with it.
- the entry has ``.maxntid`` (the launch's block) with ``.minnctapersm 1``:
  ``.maxntid`` alone makes ptxas aim at full occupancy (32 registers for a
  small block, and spills); the config's ``regs`` below 255 adds ``.maxnreg``.
- ``assembler``: ptxas's report (``ok`` is false on errors, warnings or any
  spill; a missing ptxas says so with the reason); ``cubin`` bytes are on
  ``listing.cubin`` (not in the JSON).

``check=False`` skips ptxas and nvdisasm (``live_regs`` are then 0 and
``sass`` empty); ``disassemble=False`` runs ptxas alone (its report,
registers and spills) and leaves out what only a listing shows: nvdisasm's
SASS and live registers, the IR line of each PTX line and the IR register
model (what a compile that shows no listing needs, for a fraction of the
time). Modules: ``lanes`` (which lane holds which byte, slots),
``emitter`` (registers and lines), ``lower`` (the IR visitor), ``tools``
(ptxas and nvdisasm runners and parsers), ``line_table`` (the cubin's DWARF
line table), ``device`` (running a cubin on a GPU and comparing with the
float64 reference).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..assembler import Background
from ..listing import AsmLine, Listing, assembler_line, ir_model_registers, ir_nodes
from .asyncs import plan_waits
from .hopper import SWIZZLE_ALIGN
from .lower import PtxLowering, Redo
from .swizzle import shift_for
from .tools import PtxasResult, SassLine, find_tool, ptxas, sass

PTX_VERSION = "8.0"     # CUDA 12.0: any CUDA 12 driver can JIT it


@dataclass
class PtxListing(Listing):
    """A :class:`Listing` with the SASS view, ptxas's resources, the launch shape and the cubin."""

    sass: list[dict] = field(default_factory=list)
    resources: dict = field(default_factory=dict)
    launch: dict = field(default_factory=dict)
    cubin: bytes | None = None

    def to_dict(self) -> dict:
        out = super().to_dict()
        out["registers"].update({k: self.resources.get(k) for k in ("spill_stores", "spill_loads", "stack")})
        out["registers"]["allocated"] = self.resources.get("registers")
        out["registers"]["source"] = "allocated: ptxas -v; peak and live_regs: nvdisasm --print-life-ranges"
        out["sass"] = self.sass
        out["launch"] = self.launch
        return out

    def header(self) -> list[str]:
        r = self.resources
        out = [f"// target {self.target}: ptxas allocated {r.get('registers')} registers, nvdisasm peak "
               f"{self.peak} live at PTX line {self.peak_line + 1}; spills {r.get('spill_stores')} B stored, "
               f"{r.get('spill_loads')} B loaded; stack {r.get('stack')} B; budget {self.budget}"]
        st, dy = self.mix["static"], self.mix["dynamic"]
        out.append("// mix (static / dynamic): " + ", ".join(f"{p} {st[p]}/{dy[p]}" for p in st))
        if self.assembler:
            out.append(assembler_line(self.assembler))
        return out


# The Xe listing's pipe names (protocol/asm.schema.json): xmx is the tensor cores here, send the memory
# instructions, control branches and barriers; shuffle is NVIDIA's own.
PIPES = (("xmx", ("mma.",)), ("shuffle", ("shfl.",)),
         ("send", ("ld.global", "st.global", "red.", "ld.shared", "st.shared", "cp.async")),
         ("control", ("bra", "ret", "bar.")))


def _pipe(text: str) -> str:
    body = text.strip().split(" ", 1)
    op = body[1] if body[0].startswith("@") and len(body) > 1 else body[0]
    for name, prefixes in PIPES:
        if op.startswith(prefixes):
            return name
    return "float" if any(t in op for t in (".f32", ".f16", ".f64", ".bf16")) else "int"


def _mix(lines) -> dict:
    static = {"float": 0, "int": 0} | {name: 0 for name, _ in PIPES}
    dynamic = dict(static)
    for ln in lines:
        if ln.kind == "op":
            p = _pipe(ln.text)
            static[p] += 1
            dynamic[p] += ln.weight
    return {"static": static, "dynamic": dynamic}


def _module(kernel, cg: PtxLowering, name: str) -> tuple[list[str], list, list[int]]:
    """The PTX text lines, the IR node of each, and for each emitted line its index in the text."""
    tg = tuple(kernel.tg)
    regs = kernel.regs     # the register cap the kernel was built for (.maxnreg)
    params = ", ".join([f".param .u64 p_{a.var.name}" for a in kernel.args]
                       + [f".param .align 64 .b8 {m['param']}[128]" for m in cg.tensor_maps])
    # wgmma and setmaxnreg need the architecture-specific target; swizzled tensor tiles a 1024-byte base
    head = [f".version {PTX_VERSION}", f".target {'sm_90a' if cg.sm90a else 'sm_90'}", ".address_size 64",
            '.file 1 "kernel.ptx"', "",
            f".extern .shared .align {SWIZZLE_ALIGN if cg.tma_slm else 16} .b8 kdd_smem[];", "",
            f".visible .entry {name}({params})",
            f".maxntid {32 * tg[0]}, {tg[1]}, {tg[2]}", ".minnctapersm 1",
            *([f".maxnreg {regs}"] if regs and regs < 255 else []), "{", *cg.em.declarations()]
    text, nodes, where = list(head), [None] * len(head), []
    for ln in cg.em.lines:
        if ln.kind == "op":
            text.append(f"\t.loc 1 {len(text) + 2} 0")
            nodes.append(ln.node)
        where.append(len(text))
        text.append(ln.text)
        nodes.append(ln.node)
    text.append("}")
    nodes.append(None)
    return text, nodes, where


def _lower(kernel, body) -> PtxLowering:
    """Lowering with shared-memory loads deferred into the reorders that read them; a buffer whose
    deferred bytes are read again after a barrier is lowered again without deferring. Where
    ``cp.async`` copies were issued or ``ldmatrix`` read a tile with conflicting rows, lowered once
    more with the barriers' waits planned from the first run's events (:mod:`.asyncs`) and those
    tiles swizzled (:mod:`.swizzle`)."""
    no_defer: frozenset = frozenset()
    while True:
        cg = PtxLowering(kernel, body, no_defer)
        try:
            cg.run()
            break
        except Redo as exc:
            if exc.buf in no_defer:
                raise
            no_defer = no_defer | {exc.buf}
    swizzles = {name: s for name, pitches in cg.pitches.items()
                if (s := shift_for(pitches, cg.slm_sizes[name])) is not None}
    if not cg.any_async and not swizzles:
        return cg
    plan = plan_waits(cg.events) if cg.any_async else None
    planned = PtxLowering(kernel, body, no_defer, plan, swizzles)
    planned.run()
    return planned


def _assemble(ptx: str, disassemble: bool) -> tuple[PtxasResult, list[SassLine], str | None]:
    """ptxas's result (for the module's ``.target``) and, when it made a cubin and ``disassemble``, nvdisasm's
    SASS lines (or why there are none)."""
    result = ptxas(ptx)
    found, why = sass(result.cubin) if result.cubin is not None and disassemble else ([], None)
    return result, found, why


def generate_ptx(kernel, body, target, check: bool = True, disassemble: bool = True) -> PtxListing:
    """Lower ``body`` (the final IR of ``kernel``) for ``sm_90``; with ``check`` run ptxas and (``disassemble``)
    nvdisasm and put their figures on the lines. Raises ``CodegenUnsupported`` for IR forms the
    PTX generator has no rule for."""
    cg = _lower(kernel, body)
    name = "kdd_kernel"
    text, nodes, where = _module(kernel, cg, name)
    # ptxas and nvdisasm run while this thread maps IR nodes and runs the register model.
    tools = Background(_assemble, "\n".join(text) + "\n", disassemble) if check else None
    ir = ir_nodes(body) if disassemble else {}
    model = ir_model_registers(kernel, body, target) if disassemble else None
    mix = _mix(cg.em.lines)
    result, found, why = tools.result() if tools is not None else (None, [], None)
    live = [0] * len(text)
    sass_lines: list[dict] = []
    report: dict = {}
    resources: dict = {}
    cubin = None
    if check:
        report, resources, cubin = result.report.to_dict(), result.resources, result.cubin
        if cubin is not None:
            if why:
                report["messages"] = report["messages"] + [why]
                report["ok"] = False
            for s in found:
                d = s.to_dict()
                if s.ptx_line is not None and 0 <= s.ptx_line < len(text):
                    live[s.ptx_line] = max(live[s.ptx_line], s.live_regs)
                    node = nodes[s.ptx_line]
                    if node is not None and id(node) in ir:
                        d["ir_node"] = ir[id(node)]
                sass_lines.append(d)
            made = {s["ptx_line"] for s in sass_lines}
            for i in range(1, len(live)):       # a line that made no SASS shows the line before it
                if i not in made:
                    live[i] = live[i - 1]
    lines = [AsmLine(t, live[i], None, ir.get(id(nodes[i])) if nodes[i] is not None else None)
             for i, t in enumerate(text)]
    peak = max(live) if live else 0
    peak_line = live.index(peak) if live else 0
    last = len(text) - 1
    allocations = [dict(a, first_line=where[a["first_line"]] if a["first_line"] < len(where) else last,
                        last_line=where[a["last_line"]] if a["last_line"] < len(where) else last)
                   for a in cg.allocations]
    budget = kernel.regs or target.registers.max_regs
    launch = {"entry": name, "grid": list(kernel.grid), "block": [32 * kernel.tg[0], kernel.tg[1], kernel.tg[2]],
              "shared_bytes": cg.slm_bytes, "params": [a.name for a in kernel.args]}
    if cg.tensor_maps:      # encoded at launch (cuTensorMapEncodeTiled), passed after the pointers
        launch["tensor_maps"] = [dict(m) for m in cg.tensor_maps]
    return PtxListing(target.name, lines, peak, peak_line, budget, model, {},
                      mix, {}, [], report, allocations, target.registers.reg_bytes, [], sass_lines, resources, launch,
                      cubin)


__all__ = ["PtxListing", "find_tool", "generate_ptx"]
