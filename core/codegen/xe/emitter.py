"""The instruction stream: IGA text lines, each with the registers live when it runs.

Every emitted line records how many registers hold a live byte (the
allocator stamps each value with the lines it is live on), the IR statement it
was lowered from, the pipe it runs on
(seed 002's table: float, int, xmx, send, control) and its dynamic weight
(product of the trip counts of the loops around it).
"""
from __future__ import annotations

from dataclasses import dataclass

from kdd.core.targets.xe_asm import pipe as pipe_of

from .operand import Imm, Reg, iga_type
from .regalloc import RegisterFile

# Every ALU mnemonic the generator emits (:meth:`Emitter.op` refuses others): the table the simulator's
# completeness test enumerates (tests/core/xesim/test_xe_completeness.py).
MNEMONICS = frozenset({"mov", "add", "addc", "add3", "mul", "mach", "mad", "and", "or", "xor", "not", "shl", "shr",
                       "asr", "cmp", "sel", "rnde", "math.exp", "math.inv", "math.sqt", "dp4a"})


@dataclass(slots=True)
class Line:
    """One emitted assembly line with its pipe, live registers and IR statement."""

    text: str
    pipe: str | None          # None: a label or a comment
    busy: int                 # registers holding a live byte
    node: object              # IR statement
    weight: int
    loop: int                 # index of the innermost loop (-1: none)
    lanes: int = 0            # an ALU instruction's execution size (0: a line given as text)
    dst: Reg | None = None    # with ``lanes``, the register region it writes (None: ``null``)


class Emitter:
    def __init__(self, regs: RegisterFile):
        self.regs = regs
        self.lines: list[Line] = []
        regs.lines = self.lines     # the allocator's clock: values are live from the next line on
        self.node = None
        self.weight = 1
        self.loop = -1
        self._labels = 0
        self.flow = 0      # jumps and labels so far: values known at one hold up to the next

    def raw(self, text: str, pipe: str | None, *, jump: bool = True, lanes: int = 0, dst: Reg | None = None) -> None:
        """One line as written. A control line is a jump unless ``jump`` is false (a barrier wait:
        it stalls the thread but changes no register or flag and goes on to the next line, so what a
        register or flag is known to hold before it still holds after it). ``lanes`` and ``dst``: the
        ALU instruction's execution size and destination where :meth:`op` wrote it (what it writes,
        known without reading the text back)."""
        if pipe == "control" and jump:
            self.flow += 1
        self.lines.append(Line(text, pipe, self.regs.busy, self.node, self.weight, self.loop, lanes, dst))

    def label(self, base: str) -> str:
        self._labels += 1
        return f"{base}_{self._labels}"

    def place(self, label: str) -> None:
        self.flow += 1
        self.raw(f"{label}:", None)

    def comment(self, text: str) -> None:
        self.raw(f"// {text}", None)

    def op(self, mnemonic: str, lanes: int, dst: Reg | None, srcs, *, pred: str | None = None,
           cmod: str | None = None, sat: bool = False, ternary: bool = False, pipe: str | None = None) -> None:
        """One ALU instruction, already legal (the caller split it by region rules)."""
        if mnemonic not in MNEMONICS:
            raise ValueError(f"{mnemonic} is not in the generator's mnemonic table")
        rb = self.regs.reg_bytes
        head = f"(W&{pred})" if pred else "(W)"
        cm = f" ({cmod[0]}){cmod[1]}" if cmod else ""
        if dst is None:
            d = "null<1>:" + _suffix(srcs[0])
        else:
            d = ("(sat)" if sat else "") + dst.dst(rb)
        parts = []
        for i, s in enumerate(srcs):
            if isinstance(s, Imm):
                parts.append(s.text())
            elif ternary:
                parts.append(s.src3(rb, last=i == len(srcs) - 1))
            else:
                parts.append(s.src(rb))
        text = f"{head} {mnemonic} ({lanes}|M0){cm} {d} {' '.join(parts)}"
        self.raw(text, pipe or pipe_of(mnemonic, _suffix(dst if dst is not None else srcs[0])), lanes=lanes, dst=dst)


def _suffix(op) -> str:
    return iga_type(op.type)
