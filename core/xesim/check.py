"""``kdd check --asm``: the assembled kernel run in the simulator against the float64 reference.

Inputs, poisoning, reference and tolerances are the interpreter check's
(:mod:`kdd.core.interp.check`), so the verdicts compare. The JSON object is
the same plus ``asm``: the simulator's figures, and ``first_wrong``: on a
wrong output the first global store that wrote a wrong element (``kind``
``store``), on a fault or an unsupported instruction that instruction; with
its disassembly line and its index among the listing's instructions, which
the engine maps to the IR node it came from.
"""
from __future__ import annotations

import math
import time

import numpy as np

from kdd.core.interp.check import (CheckResult, check_buffers, default_tol, kernel_caveat, kernel_math,
                                   kernel_reference, pack, verdict)

from .errors import SimError, SimulatorGap
from .program import Instr
from .run import Launch, load, simulate


def launch_of(kernel, listing: dict) -> Launch:
    """The launch of ``kernel`` with the SLM its listing lays out (its buffers as the final IR sized them)."""
    return Launch(tuple(kernel.grid), tuple(kernel.tg), kernel.simd, kernel.reg_bytes,
                  listing.get("slm_bytes", kernel.slm_bytes))


class _FirstWrongStore:
    """Watches global stores into outputs and remembers the first that wrote a wrong element: the
    expected bytes are the reference packed into the output's layout, compared within the tolerance."""

    def __init__(self, kernel, problem, refs, names, tol):
        self.found: Instr | None = None
        self.checks = []
        for arg in kernel.outputs:
            limit = tol if tol is not None else default_tol(problem, arg.dtype, kernel_math(kernel),
                                                            kernel_caveat(kernel))
            ref = refs[arg.name]
            with np.errstate(over="ignore", invalid="ignore"):
                want = pack(ref if arg.dtype.is_float else np.nan_to_num(ref), arg.dtype, arg.layout)
            finite = np.where(np.isfinite(ref), ref, 0.0)
            self.checks.append((names.index(arg.name), arg, want, limit, float(np.sqrt(np.mean(finite ** 2))) or 1.0))

    def __call__(self, ins: Instr, idx: np.ndarray, rows, memory) -> None:
        if self.found is not None:
            return
        flat = idx.reshape(-1)
        for i, arg, want, limit, rms in self.checks:
            if arg.zero_init:        # partial sums: an element is right only at the end
                continue
            lo = memory.starts[i]
            inside = flat[(flat >= lo) & (flat < lo + want.size)]
            if inside.size == 0:
                continue
            size = arg.dtype.size
            elems = np.unique((inside - lo) // size)
            got = _values(memory.data[lo: lo + want.size], arg.dtype, elems)
            exp = _values(want, arg.dtype, elems)
            with np.errstate(invalid="ignore"):
                same = (got == exp) | (np.isnan(got) & np.isnan(exp))
                bad = ~same & ~(np.abs(got - exp) <= limit * (np.abs(exp) + rms))
            if bad.any():
                self.found = ins
                return


def _values(buf: np.ndarray, t, elems: np.ndarray) -> np.ndarray:
    from kdd.core.interp.values import from_storage, storage_dtype

    raw = buf[: buf.size // t.size * t.size].view(storage_dtype(t))[elems]
    return from_storage(raw, t).astype(np.float64)


def check_assembly(kernel, listing: dict, command: tuple[str, ...], problem=None, *,
                   seed: int = 0, tol: float | None = None) -> dict:
    """The ``kdd check --json`` object of the kernel's assembly (``listing``: the code generator's
    listing as plain data, its ``asm`` text assembled with the target's ``command``) run in the
    simulator; ``error`` names an unsupported instruction or a fault."""
    start = time.perf_counter()
    problem = problem if problem is not None else kernel.problem
    buffers, inputs = check_buffers(kernel, seed)
    names = list(buffers)
    refs = kernel_reference(kernel, problem, inputs)
    watch = _FirstWrongStore(kernel, problem, refs, names, tol)
    program = None
    try:
        program, _ = load(listing["asm"], command)
        sim = simulate(program, launch_of(kernel, listing), listing["abi"], buffers, on_store=watch)
    except SimError as exc:
        out = CheckResult(False, math.inf, math.nan, None, problem.shape.canonical(),
                          (time.perf_counter() - start) * 1e3).to_dict()
        out["error"] = str(exc)
        kind = "unsupported" if isinstance(exc, SimulatorGap) else "fault"
        out["asm"] = {"unsupported": kind == "unsupported",
                      "first_wrong": _where(program, kind, exc.line, exc.text) if exc.line is not None else None}
        return out
    outputs = {a.name: buffers[a.name] for a in kernel.outputs}
    written = {a.name: sim.written[a.name] for a in kernel.outputs}
    result = verdict(kernel, problem, inputs, outputs, written, tol, start, sim.seconds * 1e3, refs).to_dict()
    result["asm"] = {"instructions": sim.instructions, "thread_instructions": sim.thread_instructions,
                     "sim_ms": round(sim.seconds * 1e3, 3),
                     "instructions_per_s": round(sim.thread_instructions / sim.seconds) if sim.seconds else None}
    if not result["ok"] and watch.found is not None:
        result["asm"]["first_wrong"] = _where(program, "store", watch.found.line, watch.found.text)
    return result


def _where(program: list[Instr] | None, kind: str, line: int, text: str) -> dict:
    """An instruction to blame: its disassembly line and text, and its position among the listing's
    instructions (``index``: the instructions other than the ``sync`` the assembler's dependency
    pass inserts; None when the program was never read)."""
    index = None if program is None else \
        sum(1 for p in program if (p.op != "sync" or p.sub == "bar") and p.line < line)
    return {"kind": kind, "line": line, "instruction": text, "index": index}


def first_wrong_registers(body, kernel, listing: dict, command: tuple[str, ...], checkpoints: list[dict], *,
                          seed: int = 0, tol: float = 4e-3) -> dict | None:
    """The earliest register checkpoint at which the assembly's registers disagree with the IR's.

    ``body`` is the final IR the listing was generated from; ``checkpoints`` are register buffers of
    that IR as the listing placed them: ``{"name", "start"`` (byte in the register file) ``, "bytes",
    "index"`` (the listing instruction after which the buffer is last live) ``}``. The IR interpreter
    keeps each buffer's contents as its scope last ends, the simulator each buffer's registers as that
    instruction last runs, for every thread; both run the same inputs. Bytes the IR never wrote
    (poison) are not compared, and float data compares within ``tol`` (summation order may differ).
    Returns the first disagreeing checkpoint (in listing order) with the instruction that last wrote its
    registers before it, as ``{"kind": "registers", "buffer", "registers", "line", "instruction",
    "index", "compared"}``, or None when all agree."""
    from kdd.core.interp.grid import Launch as IrLaunch
    from kdd.core.interp.program import run_ir

    buffers, _ = check_buffers(kernel, seed)
    ir_values: dict[str, np.ndarray] = {}
    run_ir(body, IrLaunch(tuple(kernel.grid), tuple(kernel.tg), kernel.simd, kernel.reg_bytes),
           {k: v.copy() for k, v in buffers.items()}, scope_end=lambda name, mem: ir_values.__setitem__(
               name, mem.data.copy()))
    program, _ = load(listing["asm"], command)
    pcs = [pc for pc, p in enumerate(program) if p.op != "sync" or p.sub == "bar"]
    wanted = [c for c in checkpoints if c["name"] in ir_values and c["index"] < len(pcs)]
    seen: dict[str, np.ndarray] = {}
    after: dict[int, list] = {}
    for c in wanted:
        lo, hi = c["start"], c["start"] + min(c["bytes"], ir_values[c["name"]].shape[1])

        def keep(m, rows, name=c["name"], lo=lo, hi=hi):
            if name not in seen:
                seen[name] = np.zeros((m.geo.threads, hi - lo), dtype=np.uint8)
            seen[name][rows] = m.file[rows, lo:hi]
        after.setdefault(pcs[c["index"]], []).append(keep)
    simulate(program, launch_of(kernel, listing), listing["abi"], check_buffers(kernel, seed)[0],
             after={pc: (lambda m, rows, fs=fs: [f(m, rows) for f in fs]) for pc, fs in after.items()})
    rb = kernel.reg_bytes
    for n, c in enumerate(sorted(wanted, key=lambda c: c["index"])):
        got = seen.get(c["name"])
        if got is None or _agree(got, ir_values[c["name"]][:, : got.shape[1]], tol):
            continue
        lo, hi = c["start"], c["start"] + got.shape[1]
        writer = max((i for i, pc in enumerate(pcs[: c["index"] + 1])
                      if _writes(program[pc], lo, hi, rb)), default=c["index"])
        ins = program[pcs[writer]]
        return {"kind": "registers", "buffer": c["name"], "registers": f"r{lo // rb}-r{(hi - 1) // rb}",
                "line": ins.line, "instruction": ins.text, "index": writer, "compared": n + 1}
    return None


def _agree(asm: np.ndarray, ir: np.ndarray, tol: float) -> bool:
    """Whether per-thread register bytes agree wherever the IR wrote them: equal, or equal within
    ``tol`` (relative to the value and the buffer's RMS) read as f32 or as f16 data. Poison (all ones)
    marks what the IR never wrote."""
    if (asm == ir).all():
        return True
    for dt, poison in ((np.float32, 0xFFFFFFFF), (np.float16, 0xFFFF)):
        width = np.dtype(dt).itemsize
        if ir.shape[1] % width:
            continue
        a, b = asm.view(dt).astype(np.float64), ir.view(dt).astype(np.float64)
        written = ir.view(np.uint32 if width == 4 else np.uint16) != poison
        with np.errstate(invalid="ignore", over="ignore"):
            rms = float(np.sqrt(np.nanmean(np.where(np.isfinite(b) & written, b, 0.0) ** 2)))
            close = (a == b) | (np.abs(a - b) <= tol * (np.abs(b) + rms)) | (np.isnan(a) & np.isnan(b))
        if close[written].all():
            return True
    return bool((asm == ir)[ir != 0xFF].all())


def _writes(ins: Instr, lo: int, hi: int, rb: int) -> bool:
    """Whether ``ins`` writes a register of the byte range [lo, hi) (its destination's first register)."""
    dst = ins.dst
    return dst is not None and dst.kind == "grf" and lo // rb <= dst.reg <= (hi - 1) // rb
