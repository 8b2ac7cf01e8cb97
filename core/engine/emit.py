"""What ``emit`` may ask of a compile: the items, validated with the position of a bad one.

Items: ``ir`` (the builder's IR with its line map), ``passes`` (the pass
trace: a table and every pass's IR), ``ir:PASS`` (the IR after PASS;
``ir:build`` is the builder's), ``diff:PASS`` (what PASS changed),
``stats`` (registers, operation counts), ``asm`` (the target's assembly:
Xe assembly, or PTX on ``sm_90``), ``ptx`` (``sm_90``'s PTX, the same
object), ``sass`` (``sm_90``: the SASS ptxas made, live registers per
instruction, each joined to its PTX line),
``check`` (the correctness check of the ``[check]`` problem), ``verify`` (the
IR verifier on the builder's IR and after every pass: ``kdd compile --verify``).
"""
from __future__ import annotations

from typing import Sequence

from kdd.core.passes.kernel_pipeline import KERNEL_PIPELINE
from kdd.core.passes.trace_view import BUILD, UnknownPassError

from .failure import Failure, StageFailed

PLAIN = ("ir", "passes", "stats", "asm", "ptx", "sass", "check", "verify")
# The items that show the code's listing or its figures (sm_90: nvdisasm's live registers; the IR lines and
# register model): the SASS, the listings, the stats. Any other compile asks the code generator for the
# figures the assembled code has (registers, spills, mix), without those.
SHOWS_LISTING = frozenset(("stats", "asm", "ptx", "sass"))
PREFIXED = ("ir:", "diff:")
HELP = ("ir, passes (pass table and final IR), ir:PASS (IR after PASS; ir:build), diff:PASS (what PASS changed), "
        "stats, asm, ptx and sass (sm_90), check, verify")


def parse_emit(emit: str | Sequence[str]) -> tuple[str, ...]:
    """The emit items of a comma-separated string (character spans in errors) or a list.

    Raises :class:`StageFailed` (stage ``input``, code ``bad-emit``) for an
    unknown item or pass name.
    """
    raw = emit.split(",") if isinstance(emit, str) else list(emit)
    items: list[str] = []
    known = [BUILD] + KERNEL_PIPELINE.names()
    pos = 0
    for part in raw:
        if not isinstance(part, str):
            _fail(f"an emit item is a string, not {type(part).__name__}")
        item = part.strip()
        start = pos + (part.index(item) if item else 0)
        pos += len(part) + 1
        if not item:
            continue
        prefix = next((p for p in PREFIXED if item.startswith(p)), None)
        if prefix is not None:
            name = item[len(prefix):]
            allowed = known[1:] if prefix == "diff:" else known
            if name not in allowed:
                s = start + len(prefix) if isinstance(emit, str) else None
                _fail(f"emit: {UnknownPassError(name, allowed, s, None if s is None else s + len(name))}")
        elif item not in PLAIN:
            _fail(f"cannot emit {item!r} (available: {HELP})")
        items.append(item)
    if not items:
        _fail(f"nothing to emit (available: {HELP})")
    return tuple(items)


def needs_trace(items: Sequence[str]) -> bool:
    """Whether any item shows the IR text after passes (the trace artifact: every pass's IR printed).

    ``stats``, ``asm``, ``ptx``, ``sass`` and ``verify`` run the pipeline too, but read its IR objects:
    printing every pass's IR for them would be work thrown away."""
    return any(i == "passes" or i.startswith(PREFIXED) for i in items)


def _fail(message: str) -> None:
    raise StageFailed(Failure("input", message, "bad-emit"))
