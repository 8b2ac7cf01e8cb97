"""The engine: the one place that runs the pipeline, text -> spec -> kernel -> passes -> code -> check.

* :mod:`.engine` — :class:`Engine` (memoized stages, plain-data results), ``Source``
* :mod:`.interpreter_check` — ``InterpreterCheck``: the interpreter against the float64 reference
* :mod:`.failure` — ``Failure``: a failed stage as data (stage, code, knob, range)
* :mod:`.emit` — what a compile may emit, validated
* :mod:`.artifacts` — results as JSON-ready data (ranges, diagnostics, line maps)
* :mod:`.keys` / :mod:`.versions` — stage keys (in memory) and content keys including the generator version (on disk)
* :mod:`.memo` / :mod:`.disk_cache` — the in-memory memo and the on-disk msgpack cache

Adapters (the CLI, the language server, the JSON-RPC server) call an
``Engine`` and only translate its results.

The names below load their module on first use (:mod:`kdd.core.lazy_exports`): the command line
keys and reads its on-disk cache (``.keys``, ``.disk_cache``) without loading
the compiler behind ``.engine``.
"""
from __future__ import annotations

from kdd.core.lazy_exports import lazy_exports

_WHERE = {
    "DiskCache": "disk_cache", "default_cache_dir": "disk_cache", "FINAL": "engine", "STAGES": "engine",
    "Engine": "engine", "Parsed": "engine", "Source": "engine", "InterpreterCheck": "interpreter_check",
    "INTERNAL": "failure", "INVALID": "failure", "Failure": "failure", "StageFailed": "failure",
}
__all__ = sorted(_WHERE)

__getattr__ = lazy_exports(__name__, _WHERE)
