"""The one error type for bad kernel-config input: a message plus the span it is about."""
from __future__ import annotations


class ConfigError(ValueError):
    """A config line, knob value or ``[config]`` entry is invalid.

    ``start``/``end`` are character offsets (end exclusive) into the text that
    was parsed (a config line, or one string value of a ``[config]`` key);
    ``None`` when the value was not text (a TOML integer or table). ``key`` is
    the ``[config]`` key the error belongs to when known, so the document layer
    can point at it. The message always quotes the offending token.
    """

    def __init__(self, message: str, start: int | None = None, end: int | None = None,
                 key: str | None = None):
        super().__init__(message)
        self.message = message
        self.start = start
        self.end = end
        self.key = key

    def shifted(self, offset: int) -> "ConfigError":
        """The same error for text embedded at ``offset`` in a larger string."""
        if self.start is None:
            return self
        return ConfigError(self.message, self.start + offset, self.end + offset, self.key)

    def with_key(self, key: str) -> "ConfigError":
        """The same error attributed to ``[config]`` key ``key`` (kept if already set)."""
        return ConfigError(self.message, self.start, self.end, self.key or key)
