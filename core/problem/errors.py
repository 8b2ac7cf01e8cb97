"""The one error type for bad problem text: a message plus the span it is about."""
from __future__ import annotations


class ProblemError(ValueError):
    """A problem descriptor, data-type list, post-op chain or option is invalid.

    ``start``/``end`` are character offsets (end exclusive) into the text that
    was parsed; the message always quotes the offending token, so a reader of
    the message alone knows what to fix.
    """

    def __init__(self, message: str, start: int, end: int):
        super().__init__(message)
        self.message = message
        self.start = start
        self.end = end

    def shifted(self, offset: int) -> "ProblemError":
        """The same error for text embedded at ``offset`` in a larger string."""
        return ProblemError(self.message, self.start + offset, self.end + offset)


# Kernels index with 32-bit integers (loop counters, offsets), so no size may reach 2**31.
MAX_SIZE = 2 ** 31 - 1


def check_size(value: int, token: str, start: int, end: int) -> int:
    """``value`` when its magnitude fits :data:`MAX_SIZE`, else a :class:`ProblemError` on ``token``."""
    if abs(value) > MAX_SIZE:
        raise ProblemError(f"{token!r}: sizes are limited to {MAX_SIZE} (kernels index with 32-bit integers)",
                           start, end)
    return value
