"""Reading configs for a server's clients: only kernel configs, only inside the workspace roots.

A server reads the files a request names (``path``, every ``extends``) with
its user's rights on behalf of a client that may be anyone who reached its
port. :class:`ConfinedReader` reads a file only when its real path (links
resolved) lies under one of the roots and its name is a kernel config's
(``*.kernel.toml``), then as :func:`~.extends.read_file` does (a regular
file of bounded size). A refusal is an ``OSError`` whose message names the
path and the rule, never anything of the file's content: a file that is not
a kernel config is not parsed, so no diagnostic can quote it.
"""
from __future__ import annotations

import errno
import os
from dataclasses import dataclass

from .extends import read_file

SUFFIX = ".kernel.toml"


def real_roots(roots) -> tuple[str, ...]:
    """The roots as real absolute paths (links resolved), the way a file's path is compared to them."""
    return tuple(os.path.realpath(os.path.abspath(r)) for r in roots)


def under(path: str, roots: tuple[str, ...]) -> bool:
    """Whether real path ``path`` is one of ``roots`` or inside one."""
    return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


@dataclass(frozen=True)
class ConfinedReader:
    """``read_text`` for a server: a kernel config under one of ``roots`` (real paths), else ``OSError``.

    Plain data, so a worker process gets the same reader."""

    roots: tuple[str, ...]

    @classmethod
    def of(cls, roots) -> "ConfinedReader":
        return cls(real_roots(roots))

    def allows(self, path: str) -> bool:
        """Whether ``path`` is a file this reader would open (it may still fail to read)."""
        return under(os.path.realpath(os.path.abspath(path)), self.roots) and path.endswith(SUFFIX)

    def __call__(self, path: str) -> str:
        real = os.path.realpath(os.path.abspath(path))
        if not under(real, self.roots):
            raise OSError(errno.EACCES, f"outside the workspace roots ({', '.join(self.roots)}); the server "
                                        "reads files under its roots only (kdd serve --root DIR)")
        if not (path.endswith(SUFFIX) and real.endswith(SUFFIX)):
            raise OSError(errno.EACCES, f"not a kernel config (*{SUFFIX}); the server reads nothing else")
        return read_file(real)
