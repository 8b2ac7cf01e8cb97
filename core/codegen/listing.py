"""An assembly listing with register pressure on every line: what ``kdd compile --emit asm`` shows.

``Listing.to_dict()`` is the JSON form (``protocol/asm.schema.json``):
``asm`` (the text), ``lines`` (per line: ``text``, ``live_regs``, ``live``
labels, ``ir_node``), ``registers`` (``peak``, ``budget``, ``ir``,
``by_label`` at the peak, ``allocations``: every value's bytes and the lines
it is live on), ``mix``, ``roofline``, ``abi`` and ``assembler``.
``render()`` is the text form: a header (peak and budget, the IR register
model's figure beside the allocator's, the instruction mix, the roofline)
and the assembly with a live-register column.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kdd.core.ir.printer import print_ir


@dataclass
class AsmLine:
    """One line; ``live`` (labels of the live values) is filled from the allocations on demand."""

    text: str
    live_regs: int
    live: tuple[str, ...] | None = None
    ir_node: dict | None = None

    def to_dict(self, live: tuple[str, ...]) -> dict:
        out = {"text": self.text, "live_regs": self.live_regs, "live": list(live)}
        if self.ir_node is not None:
            out["ir_node"] = self.ir_node
        return out


@dataclass
class Listing:
    """The code generator's annotated assembly with its register figures."""

    target: str
    lines: list[AsmLine]
    peak: int
    peak_line: int
    budget: int
    ir: int  # the IR register model's figure (``passes/registers.py``) for the IR this lowers
    by_label: dict[str, int]
    mix: dict
    roofline: dict
    abi: list[dict]
    assembler: dict = field(default_factory=dict)
    allocations: list[dict] = field(default_factory=list)
    reg_bytes: int = 0
    rematerialized: list[str] = field(default_factory=list)
    slm_bytes: int = field(default=0, kw_only=True)   # SLM the code lays out per thread group (launch parameter)

    @property
    def asm(self) -> str:
        return "\n".join(ln.text for ln in self.lines) + "\n"

    def live_labels(self) -> list[tuple[str, ...]]:
        """Per line, the labels of the values live on it (a sweep over the allocations)."""
        starts: dict[int, list] = {}
        ends: dict[int, list] = {}
        for a in self.allocations:
            starts.setdefault(a["first_line"], []).append(a["label"])
            ends.setdefault(a["last_line"], []).append(a["label"])
        count: dict[str, int] = {}
        out: list[tuple[str, ...]] = []
        current: tuple[str, ...] = ()
        for i in range(len(self.lines)):
            changed = False
            for label in starts.get(i, ()):
                count[label] = count.get(label, 0) + 1
                changed = True
            if changed:
                current = tuple(k for k, v in count.items() if v)
            out.append(current)
            for label in ends.get(i, ()):
                count[label] -= 1
                if not count[label]:
                    del count[label]
                changed = True
            if ends.get(i):
                current = tuple(count)
        return out

    def to_dict(self) -> dict:
        live = self.live_labels()
        return {"target": self.target, "asm": self.asm,
                "lines": [ln.to_dict(lv) for ln, lv in zip(self.lines, live)],
                "registers": {"peak": self.peak, "peak_line": self.peak_line, "budget": self.budget,
                              "ir": self.ir, "by_label": self.by_label,
                              "reg_bytes": self.reg_bytes, "allocations": self.allocations,
                              "rematerialized": self.rematerialized},
                "mix": self.mix, "roofline": self.roofline, "abi": self.abi, "slm_bytes": self.slm_bytes,
                "assembler": self.assembler}

    def header(self) -> list[str]:
        off = "" if self.ir == self.peak else f" ({'over' if self.ir > self.peak else 'under'} by {abs(self.ir - self.peak)})"
        out = [f"// target {self.target}: registers peak {self.peak} of {self.budget} GRFs at line "
               f"{self.peak_line + 1}; IR model {self.ir}{off}, allocator {self.peak}"]
        top = sorted(self.by_label.items(), key=lambda kv: -kv[1])
        out.append("// live at peak: " + ", ".join(f"{k} {v}" for k, v in top))
        if self.rematerialized:
            out.append(f"// recomputed at each use to fit the budget: {len(self.rematerialized)} values "
                       f"({', '.join(self.rematerialized[:6])}{', ...' if len(self.rematerialized) > 6 else ''})")
        st, dy = self.mix["static"], self.mix["dynamic"]
        out.append("// mix (static / dynamic): " + ", ".join(f"{p} {st[p]}/{dy[p]}" for p in st))
        main = self.mix.get("main_loop")
        if main:
            body = main["per_iteration"]
            out.append(f"// main loop {main['var']} ({main['trips']} trips), per iteration: "
                       + ", ".join(f"{p} {n}" for p, n in body.items()))
        r = self.roofline
        if r:
            inten = "n/a" if r["intensity"] is None else f"{r['intensity']:.1f}"
            out.append(f"// roofline on {r['device']}: {r['flops']:.3g} ops, {r['bytes']:.3g} B global, "
                       f"intensity {inten} ops/B, {r['bound']}-bound, >= {r['time_s'] * 1e6:.1f} us "
                       f"({r['engine']} {r['dtype']})")
        if self.assembler:
            out.append(assembler_line(self.assembler))
        return out


    def render(self) -> str:
        rows = self.header()
        width = max((len(ln.text) for ln in self.lines), default=0)
        for ln in self.lines:
            rows.append(f"{ln.text:<{width}}  // {ln.live_regs:3d} live")
        return "\n".join(rows) + "\n"


def assembler_line(a: dict) -> str:
    """The listing's assembler line: ``ok``, ``ok with warnings`` (a binary, and messages such as ptxas's
    spills) or ``FAILED`` (no binary: the assembler rejected the code)."""
    state = "FAILED" if a.get("binary_bytes") is None else "ok" if a.get("ok") else "ok with warnings"
    msg = "" if a.get("ok") else ": " + "; ".join(a.get("messages", [])[:3])
    return f"// assembler {a.get('tool')} ({a.get('version')}): {state}, {a.get('binary_bytes')} bytes{msg}"


def ir_model_registers(kernel, body, target) -> int:
    """The IR register model's figure for ``body`` (the final IR of ``kernel``), in the config's budget:
    the figure ``kdd compile --emit stats`` reports as ``ir``, shown beside the allocation it models."""
    from .backend import backend_for

    return backend_for(target).ir_registers(kernel, body)


def ir_nodes(body) -> dict[int, dict]:
    """Each printed node of ``body`` (by identity) with its line in the printed IR, its kind and, where a
    config knob made it, the builder step and knob: what a listing line's ``ir_node`` says."""
    printed = print_ir(body)
    out: dict[int, dict] = {}
    for i, node in enumerate(printed.nodes):
        if id(node) in out:
            continue
        entry = {"line": i, "kind": type(node).__name__}
        origin = node.origin
        if origin is not None and hasattr(origin, "step"):
            entry["step"] = origin.step
            entry["knob"] = origin.knob
        out[id(node)] = entry
    return out
