"""Why a stage could not produce its result, as data: the stage, a stable code, the knob and its range.

Adapters never parse messages: the CLI prints ``FILE:LINE:COL``, the LSP
server publishes a diagnostic at ``range`` and a JSON-RPC reply carries the
fields as they are.
"""
from __future__ import annotations

from dataclasses import dataclass

from kdd.core.spec import Range

# Exit statuses of the command line, shared by every adapter that reports a failure.
INVALID, INTERNAL = 2, 3


@dataclass(frozen=True)
class Failure:
    """A stage that failed.

    ``stage`` is one of :data:`kdd.core.engine.stages.STAGES` (or ``input``
    for an unreadable file or a bad request), ``code`` a stable kebab-case
    identifier, ``knob`` the config key responsible when one is (its
    ``range`` in the document when the document writes it), ``internal``
    whether it is a bug in kdd rather than in the input.
    """

    stage: str
    message: str
    code: str
    knob: str | None = None
    range: Range | None = None
    internal: bool = False

    @property
    def exit_status(self) -> int:
        return INTERNAL if self.internal else INVALID

    def to_dict(self) -> dict:
        from .artifacts import range_dict

        out = {"stage": self.stage, "message": self.message, "code": self.code, "internal": self.internal}
        if self.knob is not None:
            out["knob"] = self.knob
        if self.range is not None:
            out["range"] = range_dict(self.range)
        return out


class StageFailed(Exception):
    """Raised inside the engine to stop at a failed stage; carries the :class:`Failure` and, where the
    stage says more as data (the live buffers and repairs of an out-of-registers error), ``details``."""

    def __init__(self, failure: Failure, details: dict | None = None):
        super().__init__(failure.message)
        self.failure = failure
        self.details = details
