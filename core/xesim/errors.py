"""What the simulator reports instead of a result: an instruction outside the subset, or a fault."""
from __future__ import annotations


class SimError(Exception):
    """A simulation that cannot give outputs; ``line`` is the disassembly line (1-based) and ``text``
    the instruction, when one is to blame."""

    def __init__(self, line: int | None, text: str, message: str):
        where = f"line {line}: {text}: " if line is not None else ""
        super().__init__(f"{where}{message}")
        self.line, self.text, self.reason = line, text, message


class Unsupported(SimError):
    """An instruction, operand or message outside the simulated subset (never skipped silently)."""

    def __init__(self, line: int | None, text: str, message: str):
        super().__init__(line, text, f"unsupported instruction ({message})")


class Fault(SimError):
    """The program did something the hardware would not run correctly: an access outside every
    buffer or outside SLM, a descriptor that disagrees with its operands, an SLM race between
    threads of a group, a barrier that never completes, a thread that runs off the program."""
