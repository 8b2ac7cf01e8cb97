"""PTX text being built: virtual registers by class, lines with the IR node they came from.

Registers are SSA-like virtual registers (``%r12``, ``%rd3``, ``%f7``, ``%h2``,
``%p5``, ``%fd1``); ptxas allocates them. Register buffers get their own
named ranges (``%g3_0 .. %g3_{rows-1}``), one 32-bit register per row.
Pure operations emitted through :meth:`Emitter.calc` are computed once per
straight-line block: a later identical one reuses the first one's register
until the next label (where other paths join, so the first one may not have run).
"""
from __future__ import annotations

from dataclasses import dataclass

from kdd.core.ir.types import Type

# register class of an IR scalar: (prefix, PTX declaration type)
CLASSES = {"p": ".pred", "h": ".b16", "r": ".b32", "rd": ".b64", "f": ".f32", "fd": ".f64"}


def reg_class(t: Type) -> str:
    if t.is_bool:
        return "p"
    if t.is_float:
        return {2: "h", 4: "f", 8: "fd"}[t.size]
    return "rd" if t.size == 8 else "r"


def ptx_type(t: Type) -> str:
    """The PTX type an IR scalar computes in (narrow integers compute in 32 bits)."""
    if t.is_bool:
        return "pred"
    if t.is_float:
        return {"f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64"}[t.scalar.short]
    bits = max(32, t.scalar.bits)
    return ("s" if t.is_signed else "u") + str(bits)


@dataclass
class Line:
    text: str
    node: object = None
    kind: str = "op"          # op | label | directive
    weight: int = 1           # times it runs per kernel run (product of enclosing constant trip counts)


class Emitter:
    def __init__(self):
        self.lines: list[Line] = []
        self.counts = {c: 0 for c in CLASSES}
        self.buffers: list[tuple[str, int]] = []
        self.node = None
        self.weight = 1
        self.labels = 0
        self.known: dict = {}     # pure operations (and other facts) of the current straight-line block

    def calc(self, cls: str, text: str, pred: str | None = None) -> str:
        """The register of pure operation ``text`` (``{}`` stands for its destination, of class ``cls``):
        the one an identical operation earlier in this block wrote, else a new one. Operations reading
        a register buffer row (``%g``, rewritten in place) are always emitted."""
        key = (cls, text, pred)
        r = self.known.get(key)
        if r is None:
            r = self.new(cls)
            self.op(text.format(r), pred)
            if "%g" not in text:
                self.known[key] = r
        return r

    def new(self, cls: str) -> str:
        n = self.counts[cls]
        self.counts[cls] = n + 1
        return f"%{cls}{n}"

    def buffer(self, rows: int) -> str:
        name = f"%g{len(self.buffers)}_"
        self.buffers.append((name, rows))
        return name

    def label(self, stem: str) -> str:
        self.labels += 1
        return f"$L_{stem}_{self.labels}"

    def op(self, text: str, pred: str | None = None) -> None:
        prefix = f"@{pred} " if pred else ""
        self.lines.append(Line(f"\t{prefix}{text};", self.node, "op", self.weight))

    def place(self, label: str) -> None:
        self.known.clear()
        self.lines.append(Line(f"{label}:", self.node, "label", self.weight))

    def declarations(self) -> list[str]:
        out = [f"\t.reg {CLASSES[c]} %{c}<{n}>;" for c, n in self.counts.items() if n]
        out += [f"\t.reg .b32 {name}<{rows}>;" for name, rows in self.buffers]
        return out
