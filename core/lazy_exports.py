"""Package names that load their module on first use (PEP 562).

A package whose ``__init__`` imports every submodule makes importing any one
of them load all: ``kdd.core.engine.keys`` would load the compiler behind
``kdd.core.engine.engine``. Such a package lists which submodule holds each
public name instead, and :func:`lazy_exports` gives it the ``__getattr__``
that imports the submodule when the name is first asked for.
"""
from __future__ import annotations

import importlib
import sys
from collections.abc import Callable


def lazy_exports(package: str, where: dict[str, str]) -> Callable[[str], object]:
    """The module ``__getattr__`` of ``package``: ``where`` maps each name to the submodule (relative to the
    package) defining it; a loaded name is stored in the package, so it is looked up once."""
    def __getattr__(name: str) -> object:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{where[name]}", package), name)
        setattr(sys.modules[package], name, value)
        return value
    return __getattr__
