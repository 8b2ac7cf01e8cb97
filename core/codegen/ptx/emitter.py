"""PTX text being built: virtual registers by class, lines with the IR node they came from.

Registers are SSA-like virtual registers (``%r12``, ``%rd3``, ``%f7``, ``%h2``,
``%p5``, ``%fd1``); ptxas allocates them. Register buffers get their own
named ranges (``%g3_0 .. %g3_{rows-1}``), one 32-bit register per row.
Pure operations emitted through :meth:`Emitter.calc` are computed once per
straight-line block: a later identical one reuses the first one's register
until the next label (where other paths join, so the first one may not have run).
Global word stores are held until another line comes (:meth:`Emitter.store_word`), so that
stores of adjacent words join into vector stores.
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
        self.held: list = []      # word stores not emitted yet (:meth:`store_word`), with their node and weight

    def calc(self, cls: str, text: str) -> str:
        """The register of pure operation ``text`` (``{}`` stands for its destination, of class ``cls``):
        the one an identical operation earlier in this block wrote, else a new one. Operations reading
        a register buffer row (``%g``, rewritten in place) are always emitted."""
        key = (cls, text)
        r = self.known.get(key)
        if r is None:
            r = self.new(cls)
            self.op(text.format(r))
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
        if self.held:
            self.release()
        prefix = f"@{pred} " if pred else ""
        self.lines.append(Line(f"\t{prefix}{text};", self.node, "op", self.weight))

    def store_word(self, space: str, reg: str, offset: int, multiple: int, word: str, pred: str | None) -> None:
        """``st.{space}.b32 [reg+offset], word`` under ``pred``, ``reg`` a multiple of ``multiple``: held
        until another line comes, so that stores of the next words at the same register and predicate
        (adjacent C stores, one per IR send) join it into ``st.v2`` / ``st.v4`` where aligned."""
        h = self.held
        if h and not (h[0][:2] == (space, reg) and h[0][5] == pred and offset == h[-1][2] + 4 and len(h) < 4):
            self.release()
        self.held.append((space, reg, offset, multiple, word, pred, self.node, self.weight))

    def release(self) -> None:
        """Emit the held word stores: 4 or 2 at a time where their first offset is aligned to their bytes."""
        held, self.held = self.held, []
        i = 0
        while i < len(held):
            space, reg, offset, multiple, _, pred, node, weight = held[i]
            # a single word goes as it is (its address is 4-aligned like every b32 store's); a vector
            # store needs the alignment ``multiple`` proves for its first offset
            n = next((n for n in (4, 2) if i + n <= len(held) and min(multiple, offset & -offset or 16) >= 4 * n), 1)
            words = [h[4] for h in held[i:i + n]]
            where = f"[{reg}+{offset}]" if offset else f"[{reg}]"
            data = f"v{n}.b32 {where}, {{{', '.join(words)}}}" if n > 1 else f"b32 {where}, {words[0]}"
            prefix = f"@{pred} " if pred else ""
            self.lines.append(Line(f"\t{prefix}st.{space}.{data};", node, "op", weight))
            i += n

    def place(self, label: str) -> None:
        if self.held:
            self.release()
        self.known.clear()
        self.lines.append(Line(f"{label}:", self.node, "label", self.weight))

    def declarations(self) -> list[str]:
        out = [f"\t.reg {CLASSES[c]} %{c}<{n}>;" for c, n in self.counts.items() if n]
        out += [f"\t.reg .b32 {name}<{rows}>;" for name, rows in self.buffers]
        return out
