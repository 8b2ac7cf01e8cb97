"""The ``[config]`` table form of a kernel config.

Keys are the knob keys of :data:`~.knobs.KNOBS` (``fma simd regs iter tg loop
unroll slm prefetch pipeline subtiles``) plus ``line``, a whole oneDNN config
line. A knob may come from its key or from the line, not both. Tiles are
strings (``"mb32oc32ic16"``) or tables (``{ mb = 32, oc = 32 }``).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .errors import ConfigError
from .kernel_config import KernelConfig
from .knobs import KNOB_BY_KEY, did_you_mean
from .line import parse_config_line

LINE_KEY = "line"
TOML_KEYS = (*KNOB_BY_KEY, LINE_KEY)


def config_from_mapping(table: Mapping[str, Any], dims: Iterable[str] = ()) -> KernelConfig:
    """A (partial) :class:`KernelConfig` from a ``[config]`` table.

    Errors are :class:`ConfigError` whose ``key`` names the ``[config]`` key;
    for string values ``start``/``end`` are offsets into that string.
    """
    dims = tuple(dims)
    for key in table:
        if key not in TOML_KEYS:
            raise ConfigError(f"unknown [config] key '{key}' (keys: {', '.join(TOML_KEYS)})"
                              + did_you_mean(key, TOML_KEYS), key=key)
    from_line = KernelConfig()
    if LINE_KEY in table:
        line = table[LINE_KEY]
        if not isinstance(line, str):
            raise ConfigError(f"line must be a string, got {line!r}", key=LINE_KEY)
        try:
            from_line = parse_config_line(line, dims)
        except ConfigError as e:
            raise ConfigError(e.message, e.start, e.end, LINE_KEY) from None
    values = {}
    for key, raw in table.items():
        if key == LINE_KEY:
            continue
        if getattr(from_line, key) is not None:
            raise ConfigError(f"'{key}' is set both as a key and in line; keep one", key=key)
        try:
            values[key] = KNOB_BY_KEY[key].codec.from_toml(raw, key, dims)
        except ConfigError as e:
            raise e.with_key(key) from None
    return KernelConfig(**values).over(from_line)
