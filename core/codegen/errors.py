"""Errors of code generation: a target without a generator, an IR form it cannot lower, and a
kernel whose live values do not fit the register file."""
from __future__ import annotations

from dataclasses import dataclass, field, replace


class CodegenError(Exception):
    """Base of code generation errors."""


class CodegenUnsupported(CodegenError):
    """The target has no kdd code generator, or the IR uses a form the generator cannot lower; ``knob``
    is the config knob (or ``post_ops``) of the node it could not lower, when that node has one."""

    def __init__(self, message: str, knob: str | None = None):
        super().__init__(message)
        self.knob = knob

    @classmethod
    def located(cls, exc: "CodegenUnsupported", node) -> "CodegenUnsupported":
        """``exc`` given the knob of the IR ``node`` being lowered, unless it names one already."""
        if exc.knob is None and node.origin is not None:
            exc.knob = getattr(node.origin, "knob", None)
        return exc


class AssemblerRejected(CodegenError):
    """The target's assembler refused the generated text: a bug in the generator (never output as a
    listing). ``messages`` are the assembler's."""

    def __init__(self, tool: str, messages: list[str]):
        super().__init__(f"{tool} rejected the generated assembly: " + "; ".join(messages[:3]))
        self.messages = messages


@dataclass(frozen=True)
class LiveBuffer:
    """One value live at the register peak: label, category, size in registers, config knob behind it."""

    label: str
    category: str
    regs: int
    knob: str | None = None
    nbytes: int = 0

    def to_dict(self) -> dict:
        return {"label": self.label, "category": self.category, "regs": self.regs, "bytes": self.nbytes,
                "knob": self.knob}


@dataclass
class OutOfRegisters(CodegenError):
    """The live values at some point need more registers than the budget.

    ``live`` lists what holds registers at that point (largest first), ``by_category``
    sums them per kind (C accumulators, A/B operands, SLM load buffers, headers,
    scalars, temporaries, reserved), ``repairs`` the changes oneDNN's generator
    tries, in its order, by category (``{"category", ...values}``: the generator
    knows no knob); :meth:`with_repairs` gives them in the config's terms
    (``{"repair", "knob", "how"}``, ``kdd.core.config.repairs``).
    """

    needed: int
    budget: int
    reg_bytes: int
    wanted: str
    live: list[LiveBuffer]
    repairs: list[dict] = field(default_factory=list)
    at: str = ""

    def __post_init__(self):
        super().__init__(self.message())

    @property
    def by_category(self) -> dict[str, int]:
        """Registers per category (bytes of sub-register values summed before rounding up)."""
        out: dict[str, int] = {}
        for b in self.live:
            out[b.category] = out.get(b.category, 0) + (b.nbytes or b.regs * self.reg_bytes)
        return {k: -(-v // self.reg_bytes) for k, v in out.items()}

    @property
    def knobs(self) -> list[str]:
        """Config knobs responsible for the live buffers, biggest first."""
        seen: dict[str, int] = {}
        for b in self.live:
            if b.knob:
                seen[b.knob] = seen.get(b.knob, 0) + b.regs
        return sorted(seen, key=lambda k: -seen[k])

    def message(self) -> str:
        parts = ", ".join(f"{k} {v}" for k, v in sorted(self.by_category.items(), key=lambda kv: -kv[1]))
        top = ", ".join(f"{b.label} {b.regs}" for b in self.live[:8])
        fixes = "; ".join(f"{r['repair']} ({r['knob']}: {r['how']})" if "knob" in r else r["category"]
                          for r in self.repairs)
        where = f" at {self.at}" if self.at else ""
        return (f"out of registers{where}: {self.wanted} needs {self.needed} more, budget {self.budget} "
                f"GRFs; live: {parts} [{top}]" + (f"; try: {fixes}" if fixes else ""))

    def with_repairs(self, repairs: list[dict]) -> "OutOfRegisters":
        """The same error with ``repairs`` (the categories' repairs in the config's knobs) in its message."""
        return replace(self, repairs=repairs)

    def to_dict(self) -> dict:
        return {"needed": self.needed, "budget": self.budget, "reg_bytes": self.reg_bytes, "wanted": self.wanted, "at": self.at,
                "live": [b.to_dict() for b in self.live], "by_category": self.by_category,
                "repairs": self.repairs, "knobs": self.knobs}
