"""The builder's one error type."""
from __future__ import annotations


class BuildError(ValueError):
    """The builder cannot generate the requested kernel; the message names the knob to change."""
