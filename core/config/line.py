"""oneDNN config lines: ``simd=8 l=ic4kh3kw3 T=ow8 i=ic32oc64ow10 bufs=3``.

A line is whitespace-separated ``key=value`` tokens. Keys are the oneDNN
short names (``i T l u s p P S``, ``fma simd regs``), the long ``[config]``
names (``iter tg loop unroll slm prefetch pipeline subtiles``) or ``bufs``
(shorthand for ``s=x<n>``). Each knob may be given once. Printing is
:meth:`KernelConfig.line`, which always uses the short names.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from .errors import ConfigError
from .kernel_config import KernelConfig
from .knobs import LINE_KEYS, did_you_mean

# Kinds whose empty value means something: the empty tile, no pipeline flags.
EMPTY_OK = ("tile", "flags")


def parse_config_line(line: str, dims: Iterable[str] = ()) -> KernelConfig:
    """Parse a config line into a (partial) :class:`KernelConfig`.

    Errors are :class:`ConfigError` with ``start``/``end`` into ``line`` and a
    message naming the token. ``dims`` lists the problem's dimension names so
    tiles can name dims with digits (``b0``).
    """
    dims = tuple(dims)
    values: dict[str, object] = {}
    first_seen: dict[str, tuple[str, int]] = {}
    for m in re.finditer(r"\S+", line):
        token, start = m.group(), m.start()
        key, eq, text = token.partition("=")
        if not eq or not key:
            raise ConfigError(f"expected key=value, got '{token}'", start, m.end())
        if key not in LINE_KEYS:
            raise ConfigError(f"unknown knob '{key}' (knobs: {', '.join(LINE_KEYS)})"
                              + did_you_mean(key, LINE_KEYS), start, start + len(key))
        knob, codec = LINE_KEYS[key]
        if knob.key in first_seen:
            prev, at = first_seen[knob.key]
            raise ConfigError(f"'{key}' sets {knob.key}, already set by '{prev}' at column {at}",
                              start, start + len(key))
        first_seen[knob.key] = (key, start)
        value_start = start + len(key) + 1
        if not text and knob.kind not in EMPTY_OK:
            raise ConfigError(f"'{key}=' needs a value (example: {knob.example})", start, m.end())
        try:
            values[knob.key] = codec.parse(text, dims)
        except ConfigError as e:
            raise ConfigError(f"{key}: {e.message}", e.start, e.end, knob.key).shifted(value_start) from None
    return KernelConfig(**values)
