"""``ConfigIssue``: one finding about a config, tied to the knob it is about."""
from __future__ import annotations

from dataclasses import dataclass

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class ConfigIssue:
    """A problem with a config: ``knob`` is the ``[config]`` key to point at,
    ``severity`` is ``error`` (the kernel cannot be built or will not fit),
    ``warning`` (it works but wastes work) or ``info``."""

    knob: str
    message: str
    severity: str = "error"

    def __post_init__(self):
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {', '.join(SEVERITIES)}, got {self.severity!r}")

    def __str__(self) -> str:
        return f"{self.severity}: {self.knob}: {self.message}"
