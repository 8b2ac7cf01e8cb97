"""The external tools kdd runs (``iga64``, ``iga64-xe2``, ``ptxas``, ``nvdisasm``): where they are, and what cache keys say of them.

A cached listing or verdict is only true for the tools that made it, so every
key of a result a tool shaped includes the tools' *stamps*: path, size and
modification time of each binary, which change when a tool is upgraded or
replaced (cheaper than running ``--version`` in every process, which a
repeated command cannot afford). This module imports nothing of kdd, so the
command line can key a cached reply before it loads the compiler.
"""
from __future__ import annotations

import glob
import os
import shutil
import site
import sys
from functools import lru_cache

TOOLS = ("iga64", "iga64-xe2", "ptxas", "nvdisasm")


@lru_cache(maxsize=None)
def find_tool(name: str) -> str | None:
    """Path of ``name`` from the nvidia wheels of this interpreter's environment, its ``bin`` folder (where
    ``tools/setup.sh`` writes ``iga64-xe2``), or on PATH."""
    roots = list(site.getsitepackages()) + [site.getusersitepackages()]
    roots.append(os.path.join(sys.prefix, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}",
                              "site-packages"))
    for root in roots:
        for path in sorted(glob.glob(os.path.join(root, "nvidia", "*", "bin", name))):
            if os.access(path, os.X_OK):
                return path
    own = os.path.join(sys.prefix, "bin", name)
    if os.access(own, os.X_OK):
        return own
    return shutil.which(name)


def stamp(name: str) -> tuple:
    """``(name, path, size, mtime_ns)`` of the tool ``name`` as found now; ``(name, None)`` when it is absent."""
    path = find_tool(name)
    if path is None:
        return (name, None)
    try:
        st = os.stat(path)
    except OSError:
        return (name, None)
    return (name, os.path.realpath(path), st.st_size, st.st_mtime_ns)


def stamps(names: tuple[str, ...] = TOOLS) -> tuple[tuple, ...]:
    """The stamps of ``names`` (every tool kdd runs by default)."""
    return tuple(stamp(name) for name in names)
