"""GEMM (matmul) shapes: benchdnn's ``MxK:KxN`` form and kdd's ``m..n..k..`` form.

Two spellings of the same thing, both with an optional trailing name
(``_n"NAME"``, ``n"NAME"`` or ``nNAME``):

* benchdnn matmul: ``[B1x..x]MxK:[B1x..x]KxN[:[B1x..x]MxN]`` — source and
  weights dims, optionally destination dims; batch dims lead every tensor.
  ``56x16x384x384:56x16x384x64`` is a 56x16 batch of 384x384 by 384x64.
  Batch dims of both tensors must be equal (kdd does not broadcast) and the
  two K must agree; written destination dims must match.
* kdd: entries ``mM``, ``nN``, ``kK`` and an optional batch ``bB1[xB2..]`` in any
  order with optional ``_`` between them: ``m4096n4096k4096``, ``b12m128n128k64``.
  Here ``n`` followed by a digit is the N size and otherwise starts the name.

Printing (:meth:`GemmShape.canonical`) uses the benchdnn form, so a printed
shape can be handed to benchdnn unchanged. Transposition is not part of the
shape: it is the layout tags' business (``ab`` vs ``ba``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .descriptor_name import format_name, parse_name
from .errors import ProblemError, check_size

_DIMS = re.compile(r"\d+(?:x\d+)*")
_MNK_ENTRY = re.compile(r"(b)(\d+(?:x\d+)*)|([mnk])(\d+)")


@dataclass(frozen=True)
class GemmShape:
    """``C[batch, m, n] = sum_k A[batch, m, k] * B[batch, k, n]``."""

    batch: tuple[int, ...]
    m: int
    n: int
    k: int
    name: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "batch", tuple(self.batch))
        for label, v in [*((f"batch[{i}]", b) for i, b in enumerate(self.batch)),
                         ("m", self.m), ("n", self.n), ("k", self.k)]:
            if type(v) is not int or v < 1:
                raise ValueError(f"GemmShape.{label} must be a positive int, got {v!r}")

    def canonical(self) -> str:
        """The benchdnn matmul form ``[Bx..]MxK:[Bx..]KxN[_n"NAME"]``."""
        src = "x".join(map(str, (*self.batch, self.m, self.k)))
        wei = "x".join(map(str, (*self.batch, self.k, self.n)))
        name = format_name(self.name)
        return f"{src}:{wei}" + (f"_{name}" if name else "")

    def to_dict(self) -> dict:
        return {"batch": list(self.batch), "m": self.m, "n": self.n, "k": self.k,
                "name": self.name, "canonical": self.canonical()}

    def __str__(self) -> str:
        return self.canonical()


def parse_gemm_shape(text: str) -> GemmShape:
    """Parse either GEMM spelling; raises :class:`ProblemError` naming the bad token."""
    end = len(text.rstrip())
    pos = len(text) - len(text.lstrip())
    if pos >= end:
        raise ProblemError("empty GEMM descriptor", 0, len(text))
    if text[pos].isdigit():
        return _parse_matmul(text, pos, end)
    return _parse_mnk(text, pos, end)


def _name_tail(text: str, pos: int, end: int) -> str | None:
    """The optional ``[_]n...`` suffix from ``pos``; anything else is an error."""
    if pos < end and text[pos] == "_":
        pos += 1
    if pos >= end:
        return None
    if text[pos] != "n":
        raise ProblemError(f"unexpected {text[pos:end]!r}; only a name (n\"NAME\") may follow",
                           pos, end)
    return parse_name(text[:end], pos)


def _dims(text: str, pos: int, end: int, what: str) -> tuple[list[int], int, int]:
    m = _DIMS.match(text, pos, end)
    if not m:
        # point at the offending character, or at the ':' when the text ends there
        at = pos if pos < end else pos - 1
        raise ProblemError(f"expected {what} dims like 128x64 at {text[pos:end]!r}", at, at + 1)
    dims = [check_size(int(x), m.group(), m.start(), m.end()) for x in m.group().split("x")]
    if 0 in dims:
        raise ProblemError(f"{what} dims {m.group()!r}: every size must be positive", m.start(), m.end())
    return dims, m.start(), m.end()


def _parse_matmul(text: str, pos: int, end: int) -> GemmShape:
    tensors = []
    for what in ("source", "weights", "destination"):
        if what != "source":
            if pos >= end or text[pos] != ":":
                if what == "destination":
                    break
                src_start = tensors[0][1]
                raise ProblemError(f"expected ':' and the weights dims after {text[src_start:pos]!r} "
                                   f"(form MxK:KxN)", src_start, pos)
            pos += 1
        dims, start, pos = _dims(text, pos, end, what)
        tensors.append((dims, start, pos))
    name = _name_tail(text, pos, end)

    (src, s0, s1), (wei, w0, w1) = tensors[:2]
    src_text, wei_text = text[s0:s1], text[w0:w1]
    if len(src) < 2 or len(src) != len(wei):
        raise ProblemError(f"source {src_text!r} and weights {wei_text!r} need the same number "
                           f"(>= 2) of dims", w0, w1)
    if src[:-2] != wei[:-2]:
        raise ProblemError(f"batch dims of {wei_text!r} differ from those of {src_text!r} "
                           f"(broadcast batches are not supported)", w0, w1)
    if src[-1] != wei[-2]:
        raise ProblemError(f"K mismatch: source {src_text!r} has K={src[-1]} but weights "
                           f"{wei_text!r} have K={wei[-2]}", w0, w1)
    shape = GemmShape(tuple(src[:-2]), src[-2], wei[-1], src[-1], name)
    if len(tensors) == 3:
        dst, d0, d1 = tensors[2]
        if dst != [*shape.batch, shape.m, shape.n]:
            want = "x".join(map(str, (*shape.batch, shape.m, shape.n)))
            raise ProblemError(f"destination {text[d0:d1]!r} should be {want!r}", d0, d1)
    return shape


def _parse_mnk(text: str, pos: int, end: int) -> GemmShape:
    given: dict[str, tuple[object, int, int]] = {}
    name = None
    while pos < end:
        if text[pos] == "_":
            pos += 1
            continue
        m = _MNK_ENTRY.match(text, pos, end)
        if not m:
            if text[pos] == "n":
                name = parse_name(text[:end], pos)
                break
            stop = pos + 1
            while stop < end and text[stop].isalnum():
                stop += 1
            raise ProblemError(f"unknown GEMM entry {text[pos:stop]!r} (entries: b m n k, or MxK:KxN)",
                               pos, stop)
        key = m.group(1) or m.group(3)
        raw = m.group(2) or m.group(4)
        if key in given:
            raise ProblemError(f"{m.group()!r}: {key} is given twice", m.start(), m.end())
        values = tuple(check_size(int(x), m.group(), m.start(), m.end()) for x in raw.split("x"))
        if 0 in values:
            raise ProblemError(f"{m.group()!r}: sizes must be positive", m.start(), m.end())
        given[key] = (values if key == "b" else values[0], m.start(), m.end())
        pos = m.end()
    missing = [k for k in "mnk" if k not in given]
    if missing:
        raise ProblemError(f"GEMM descriptor {text[:end].strip()!r} lacks {', '.join(missing)}",
                           0, len(text))
    batch = given["b"][0] if "b" in given else ()
    return GemmShape(batch, given["m"][0], given["n"][0], given["k"][0], name)
