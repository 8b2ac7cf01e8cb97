"""The token of a ``kdd serve --tcp`` daemon: made at start, kept in a file only its user can read.

Any local process (and any web page, through the browser) can open a
loopback port, so the port alone proves nothing. The daemon makes a random
token, writes it with mode 0600 to ``token_path(port)`` (in
``$XDG_RUNTIME_DIR/kdd/``, else the user cache directory's ``run/``, a
directory of mode 0700), and every request must carry it as ``"token"``.
``kdd compile --connect`` and scripts read it from that file; whoever can
read the file is the daemon's user.
"""
from __future__ import annotations

import hmac
import os
import secrets
from pathlib import Path


def token_dir() -> Path:
    """Where tokens live: ``$XDG_RUNTIME_DIR/kdd``, else ``run/`` under the user cache directory."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return Path(runtime) / "kdd"
    from kdd.core.engine import default_cache_dir

    return default_cache_dir() / "run"


def token_path(port: int) -> Path:
    """The token file of the daemon listening on ``port``."""
    return token_dir() / f"serve-{port}.token"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def write_token(port: int, token: str) -> Path:
    """Write ``token`` for the daemon on ``port``, readable by this user only; the file's path."""
    path = token_path(port)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(token)
    os.replace(tmp, path)
    return path


def read_token(port: int) -> str | None:
    """The token a daemon on ``port`` wrote, or None when there is none this user can read."""
    try:
        return token_path(port).read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def remove_token(path: Path, token: str) -> None:
    """Remove the token file at exit, unless another daemon on the same port has replaced it since."""
    try:
        if path.read_text(encoding="utf-8") == token:
            path.unlink()
    except (OSError, UnicodeDecodeError):
        pass


def as_bytes(token) -> bytes | None:
    """A token given as text (any characters) or bytes, as bytes; None for anything else."""
    if isinstance(token, str):
        return token.encode("utf-8", "surrogatepass")
    if isinstance(token, (bytes, bytearray)):
        return bytes(token)
    return None


def matches(given, expected: bytes) -> bool:
    """Whether a request's ``token`` is the daemon's, compared in constant time as bytes."""
    given = as_bytes(given)
    return given is not None and hmac.compare_digest(given, expected)
