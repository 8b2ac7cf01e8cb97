"""A problem written as the kernel config (``*.kernel.toml`` text) a user would write for it.

Batch-file descriptors and oneDNN lookup-table entries become documents this
way, so that every problem kdd sweeps goes through the same reader, defaults
and diagnostics as a file an author saves.
"""
from __future__ import annotations

import json

from .problem import Problem


def kernel_document(problem: Problem, hw: str, line: str | None = None, portblas: str | None = None) -> str:
    """The config text of ``problem`` on target ``hw``: its problem table (tags other than ``any`` and
    post-ops only where set), the target, and ``[config] line`` (or ``portblas``, a portBLAS launcher's
    arguments) when given (else the defaults heuristic chooses every knob). The ``[check]`` shape is
    left to the reducer."""
    p = problem
    out = [f'[problem]\nop = "{p.op}"\nprop = "{p.prop}"\nshape = {_string(p.shape.canonical())}\n'
           f'types = "{p.types.canonical()}"\n']
    out += [f'{t} = {_string(p.tags[t])}\n' for t in ("src", "wei", "dst") if p.tags[t] != "any"]
    if p.post_ops:
        out.append(f"post_ops = [{', '.join(_string(op.canonical()) for op in p.post_ops)}]\n")
    out.append(f'[target]\nhw = "{hw}"\n')
    if line is not None or portblas is not None:
        key, value = ("line", line) if line is not None else ("portblas", portblas)
        out.append(f"[config]\n{key} = {_string(value)}\n")
    return "".join(out)


def _string(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(text)
