"""Content keys: exactly what a stage reads, within this process and across processes.

Stage inputs are frozen dataclasses whose ``repr`` is deterministic (no
addresses, ordered fields). :func:`stage_key` joins those reprs: it names
their content exactly, which is all a key that stays in this process (the
engine's memo) needs. :func:`content_key` is a digest that also names the
generator version, so it names the same content across processes and kdd
versions, which is what the on-disk cache and the sweeps need.
"""
from __future__ import annotations


def stage_key(stage: str, *parts: object) -> str:
    """The in-process key of ``stage`` run on ``parts``: their reprs joined (no digest, no collision).
    The generator version is left out: it cannot change within a process, and it is a digest of every
    source file of ``kdd.core``, read from disk."""
    return "\0".join([stage, *(part if isinstance(part, str) else repr(part) for part in parts)])


def content_key(stage: str, *parts: object) -> str:
    """The key of ``stage`` run on ``parts``, including the generator version."""
    import hashlib  # here, not at the top: an engine without a disk cache keys by stage_key alone

    from .versions import generator_version

    digest = hashlib.sha256(f"{stage}\0{generator_version()}".encode())
    for part in parts:
        digest.update(b"\0")
        digest.update(part.encode() if isinstance(part, str) else repr(part).encode())
    return digest.hexdigest()
