"""The engine: the one place that runs the pipeline, text -> spec -> kernel -> passes -> code -> check.

* :mod:`.engine` — :class:`Engine` (memoized stages, plain-data results), ``Source``
* :mod:`.interpreter_check` — ``InterpreterCheck``: the interpreter against the float64 reference
* :mod:`.failure` — ``Failure``: a failed stage as data (stage, code, knob, range)
* :mod:`.emit` — what a compile may emit, validated
* :mod:`.artifacts` — results as JSON-ready data (ranges, diagnostics, line maps)
* :mod:`.keys` / :mod:`.versions` — content keys including the generator version
* :mod:`.memo` / :mod:`.disk_cache` — the in-memory memo and the on-disk msgpack cache

Adapters (the CLI, the language server, the JSON-RPC server) call an
``Engine`` and only translate its results.
"""
from .disk_cache import DiskCache, default_cache_dir
from .engine import FINAL, STAGES, Engine, Parsed, Source
from .interpreter_check import InterpreterCheck
from .failure import INTERNAL, INVALID, Failure, StageFailed

__all__ = ["DiskCache", "Engine", "FINAL", "Failure", "INTERNAL", "INVALID", "InterpreterCheck", "Parsed",
           "STAGES", "Source", "StageFailed", "default_cache_dir"]
