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

from kdd.core.interp.check import CheckResult, check_buffers, default_tol, pack, verdict
from kdd.core.interp.reference import reference

from .errors import SimError, Unsupported
from .program import Instr
from .run import Launch, load, simulate


def launch_of(kernel, listing: dict) -> Launch:
    """The launch of ``kernel`` with the SLM its listing lays out (its buffers as the final IR sized them)."""
    return Launch(tuple(kernel.grid), tuple(kernel.tg), kernel.simd, kernel.reg_bytes,
                  listing.get("slm_bytes", kernel.slm_bytes))


class _FirstWrongStore:
    """Watches global stores into outputs and remembers the first that wrote a wrong element: the
    expected bytes are the reference packed into the output's layout, compared within the tolerance."""

    def __init__(self, kernel, problem, inputs, names, tol):
        self.found: Instr | None = None
        refs = reference(problem, inputs)
        self.checks = []
        for arg in kernel.outputs:
            limit = tol if tol is not None else default_tol(problem, arg.dtype)
            ref = np.nan_to_num(refs[arg.name])
            want = pack(ref, arg.dtype, arg.layout)
            self.checks.append((names.index(arg.name), arg, want, limit, float(np.sqrt(np.mean(ref ** 2))) or 1.0))

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
                bad = ~(np.abs(got - exp) <= limit * (np.abs(exp) + rms))
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
    watch = _FirstWrongStore(kernel, problem, inputs, names, tol)
    program = None
    try:
        program, _ = load(listing["asm"], command)
        sim = simulate(program, launch_of(kernel, listing), listing["abi"], buffers, on_store=watch)
    except SimError as exc:
        out = CheckResult(False, math.inf, math.nan, None, problem.shape.canonical(),
                          (time.perf_counter() - start) * 1e3).to_dict()
        out["error"] = str(exc)
        kind = "unsupported" if isinstance(exc, Unsupported) else "fault"
        out["asm"] = {"unsupported": kind == "unsupported",
                      "first_wrong": _where(program, kind, exc.line, exc.text) if exc.line is not None else None}
        return out
    outputs = {a.name: buffers[a.name] for a in kernel.outputs}
    written = {a.name: sim.written[a.name] for a in kernel.outputs}
    result = verdict(kernel, problem, inputs, outputs, written, tol, start, sim.seconds * 1e3).to_dict()
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
