"""What a simulator reports instead of a result: a gap in the simulator (:class:`SimulatorGap`), or a fault
of the program (:class:`Fault`). Both simulators, Xe and PTX, raise these."""
from __future__ import annotations


class SimError(Exception):
    """A simulation that cannot give outputs; ``line`` is the disassembly line (1-based) and ``text``
    the instruction, when one is to blame."""

    def __init__(self, line: int | None, text: str, message: str):
        where = f"line {line}: {text}: " if line is not None else ""
        super().__init__(f"{where}{message}")
        self.line, self.text, self.reason = line, text, message


class SimulatorGap(SimError):
    """What kdd's simulator cannot run: an instruction, operand or message outside the simulated subset,
    or a run past its instruction limit. A gap in kdd, never a verdict on the kernel (a check that meets
    one is not-checkable, not wrong); never skipped silently. The PTX simulator (:mod:`kdd.core.ptxsim`)
    raises this class too."""

    def __init__(self, line: int | None, text: str, message: str):
        super().__init__(line, text, f"not simulated by kdd ({message})")
        self.reason = message       # unprefixed, so the error can be raised again at another line


class Fault(SimError):
    """The program did something the hardware would not run correctly: an access outside every
    buffer or outside SLM, a descriptor that disagrees with its operands, an SLM race between
    threads of a group, a barrier that never completes, a thread that runs off the program."""
