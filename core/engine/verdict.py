"""What a check's result means: ``ok``, ``wrong`` or ``not-checkable``, and the exit status of each.

A check answers one of three things, and only one of them is about the kernel being wrong:

- ``ok``: the artifact ran and its outputs match the float64 reference (exit 0);
- ``wrong``: it ran and computed a wrong value, left an output unwritten, or did something the
  hardware would not run correctly (an access outside a buffer, an SLM race) (exit 1);
- ``not-checkable``: kdd could not run it — a simulator gap (an instruction or message kdd's simulator
  does not model), a tool that is not installed, or a shape over the check's size bound (exit 4).
  That is a gap in kdd or a choice of the user, never a verdict on the kernel.

Invalid input stays exit 2 and a failure inside kdd exit 3 (:mod:`.failure`).
"""
from __future__ import annotations

OK, WRONG, NOT_CHECKABLE = "ok", "wrong", "not-checkable"
EXIT = {OK: 0, WRONG: 1, NOT_CHECKABLE: 4}


class NotCheckable(Exception):
    """Raised inside the engine when a check cannot run: ``code`` (``check-too-large``,
    ``simulator-gap``, ``tool-missing``) and the ``knob`` to change, when one helps."""

    def __init__(self, code: str, reason: str, knob: str | None = None):
        super().__init__(reason)
        self.code, self.reason, self.knob = code, reason, knob


def not_checkable(exc: NotCheckable, shape: str | None, artifact: str, stage: str) -> dict:
    """The ``kdd check --json`` object of a check that could not run."""
    out = {"ok": False, "verdict": NOT_CHECKABLE, "artifact": artifact, "stage": stage, "shape": shape,
           "code": exc.code, "reason": exc.reason}
    if exc.knob is not None:
        out["knob"] = exc.knob
    return out


def is_gap(result: dict) -> bool:
    """Whether a simulated run stopped at a gap of kdd's simulator (not at a fault of the program)."""
    return bool((result.get("asm") or {}).get("unsupported") or (result.get("ptx") or {}).get("gap"))


def verdict_of(result: dict) -> str:
    """The verdict of a check result (a run, a bisection, or a not-checkable object)."""
    if "verdict" in result:
        return result["verdict"]
    if "stages" in result:
        return OK if result["first_bad"] is None else WRONG
    return OK if result["ok"] else WRONG


def exit_status(result: dict) -> int:
    return EXIT[verdict_of(result)]
