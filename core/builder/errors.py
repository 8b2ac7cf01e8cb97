"""The builder's one error type."""
from __future__ import annotations


class BuildError(ValueError):
    """The builder cannot generate the requested kernel.

    ``knob`` names the config knob (or problem key, such as ``post_ops`` or a
    layout's tensor) to change, so adapters can point at it without reading
    the message.
    """

    def __init__(self, message: str, knob: str | None = None):
        super().__init__(message)
        self.knob = knob
