"""Maps the repository's fixed top level onto the ``kdd`` distribution.

``core/`` installs as ``kdd.core`` and ``server/`` as ``kdd.server`` (the design
card fixes the folder names); ``kdd`` itself is a namespace package, so no bare
``core`` or ``server`` module is ever installed. Subpackages are discovered by
walking the two folders, so adding a folder with an ``__init__.py`` is enough.
"""
from pathlib import Path

from setuptools import setup

ROOTS = {"kdd.core": "core", "kdd.server": "server"}


def _packages():
    found = {}
    for name, folder in ROOTS.items():
        for init in sorted(Path(folder).rglob("__init__.py")):
            rel = init.parent.relative_to(folder)
            pkg = ".".join((name, *rel.parts)) if rel.parts else name
            found[pkg] = str(init.parent)
    return found


PACKAGES = _packages()
setup(packages=list(PACKAGES), package_dir=PACKAGES)
