"""Where a node of the built IR came from: the builder step and the config knob behind it."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Origin:
    """``step`` names the builder step (``loop_nest.grid``, ``loads.a``, ``fma.dpas``...);
    ``knob`` the :class:`~kdd.core.config.KernelConfig` field that shaped the node, if any
    (``iter``, ``tg``, ``loop``, ``slm``, ``fma``, ``subtiles``, ``unroll``), or ``post_ops``
    for epilogue steps."""

    step: str
    knob: str | None = None

    def to_dict(self) -> dict:
        return {"step": self.step, "knob": self.knob}

    def __str__(self) -> str:
        return self.step if self.knob is None else f"{self.step} [{self.knob}]"
