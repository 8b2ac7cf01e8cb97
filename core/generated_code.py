"""Functions generated from source text at import time, compiled once per installation, not per process.

Importing kdd creates about a thousand small functions from source text: the
``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__`` and
``__delattr__`` that :mod:`dataclasses` writes for each of some 170
dataclasses, and the constructors, equality tests and child accessors of the
IR node classes (:mod:`kdd.core.ir.node`). Python keeps the bytecode of
modules in ``__pycache__`` but compiles text given to ``exec`` every time:
that compiling cost a fresh ``kdd compile`` process about 60 ms of CPU, a
third of the fixed loop ``bench/interactive.py`` measures a whole compile
against, and more than loading every code object from a file (about 4 ms).

:func:`compiled` is that file: a table from source text to code object,
stored beside this module's own bytecode (so ``PYTHONPYCACHEPREFIX`` places
it and ``PYTHONDONTWRITEBYTECODE`` stops its writing, as for ``.pyc``
files), read on first use (each code object is unmarshalled when asked for:
a repeated compile answered from the disk cache makes a handful of the
thousand), and written back when a process that compiled something new
exits. A code object is a function of its source text, the
compiler flags (none are inherited here, as none are where
:mod:`dataclasses` calls ``exec``) and the bytecode version (the table
carries the interpreter's magic number and is ignored under another), so a
cached one is exactly what compiling would give. :func:`install` routes the
``exec`` calls of :mod:`dataclasses` through the table.
"""
from __future__ import annotations

import atexit
import marshal
import os
import sys
from importlib.util import MAGIC_NUMBER, cache_from_source
from pathlib import Path
from types import CodeType, ModuleType

_LIMIT = 8192  # entries kept across processes; past it, only what the writing process used
_table: dict[str, bytes] | None = None  # source text -> its marshalled code object
_used: set[str] = set()
_new: dict[str, CodeType] = {}


def _path() -> Path | None:
    try:
        return Path(cache_from_source(__file__)).with_suffix(".code")
    except NotImplementedError:  # an interpreter without bytecode caching
        return None


def _load() -> dict[str, bytes]:
    path = _path()
    try:
        raw = path.read_bytes() if path is not None else b""
        if raw[: len(MAGIC_NUMBER)] == MAGIC_NUMBER:
            table = marshal.loads(raw[len(MAGIC_NUMBER):])
            if isinstance(table, dict) and all(type(v) is bytes for v in table.values()):
                return table
    except (OSError, EOFError, ValueError, TypeError):
        pass  # missing, unreadable or damaged: compiled again and rewritten
    return {}


def compiled(source: str) -> CodeType:
    """The code object of ``source`` (a module body, ``exec`` mode), from the table or compiled now."""
    global _table
    if _table is None:
        _table = _load()
        atexit.register(_save)
    _used.add(source)
    stored = _table.get(source)
    if stored is not None:
        try:
            code = marshal.loads(stored)
        except (EOFError, ValueError, TypeError):
            code = None
        if isinstance(code, CodeType):
            return code
        _table.pop(source, None)  # a damaged entry: compiled again below, and rewritten
    code = _new.get(source)
    if code is None:
        code = _new[source] = compile(source, "<string>", "exec", dont_inherit=True)
    return code


def compiled_this_process() -> int:
    """How many source texts this process compiled rather than found in the table."""
    return len(_new)


def _exec(source, globals=None, locals=None, /):
    """``exec`` as :mod:`dataclasses` calls it (always with source text), through the table."""
    exec(compiled(source) if isinstance(source, str) else source, globals, locals)  # noqa: S102


def install() -> None:
    """Route the ``exec`` calls with which :mod:`dataclasses` makes methods through :func:`compiled`."""
    _dataclasses().exec = _exec


def _dataclasses():
    """:mod:`dataclasses`, imported without :mod:`inspect` where neither is loaded yet.

    ``dataclasses`` imports ``inspect`` (with ``ast``, ``dis`` and ``tokenize``: ~3.5 ms of a
    compile's CPU) for one call, the signature it writes as the docstring of a dataclass that has
    none; no kdd dataclass a compile makes lacks one. Its ``inspect`` is the real module's
    stand-in (:class:`_InspectOnUse`) and ``sys.modules`` holds no stand-in afterwards, so every
    other ``import inspect`` loads the real one."""
    if "dataclasses" in sys.modules or "inspect" in sys.modules:
        import dataclasses
        return dataclasses
    stand_in = ModuleType("inspect")
    sys.modules["inspect"] = stand_in
    try:
        import dataclasses
    finally:
        if sys.modules.get("inspect") is stand_in:
            del sys.modules["inspect"]
    dataclasses.inspect = _InspectOnUse(dataclasses)
    return dataclasses


class _InspectOnUse:
    """:mod:`dataclasses`' name for :mod:`inspect` until its first use, which imports the module and hands
    it over."""

    def __init__(self, user: ModuleType):
        self._user = user

    def __getattr__(self, name: str):
        import inspect

        self._user.inspect = inspect
        return getattr(inspect, name)


def _save() -> None:
    """Write the table back when this process compiled something new (never when bytecode is not written)."""
    path = _path()
    if not _new or sys.dont_write_bytecode or path is None or _table is None:
        return
    table = {**_table, **{source: marshal.dumps(code) for source, code in _new.items()}}
    keep = table if len(table) <= _LIMIT else {source: table[source] for source in _used}
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(MAGIC_NUMBER + marshal.dumps(keep))
        os.replace(tmp, path)  # readers see the old table or the new one, never half of one
    except (OSError, ValueError):  # a read-only installation: compiled each time, as its modules are
        tmp.unlink(missing_ok=True)
