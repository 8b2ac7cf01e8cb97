"""oneDNN layout tags as text: parse them into blocks and print blocks back.

This module is pure syntax: it turns tag text plus the logical dim sizes into a
list of ``(dim, size)`` blocks, outer to inner, and formats such lists back.
Strides and everything else physical live in :mod:`kdd.core.layout.layout`.

Three spellings are accepted (``dims`` gives the logical sizes, so the number
of dims):

* **Letter tags** (oneDNN ``format_tag``): letter ``a`` is dim 0, ``b`` dim 1,
  ... up to ``l``. The outer part names every dim once, outermost first; an
  uppercase letter marks a dim that also has inner blocks, listed after the
  outer part as ``<size><letter>`` pairs, outer to inner, any number per dim:
  ``abcd``, ``acdb``, ``aBcd16b``, ``ABcd16b16a``, ``ABcd8a16b2a``. The outer
  block of a dim holds ``ceil(size / product of its inner blocks)`` elements,
  so a dim that is not a multiple of its blocking is padded as in oneDNN.
* **Meta-tags** with ``x`` (benchdnn): ``x`` stands for every dim not named
  otherwise, in order, so it adapts to the number of dims: ``axb`` is ``acdb``
  for 4 dims and ``ab`` for 2, ``abx`` is plain, ``xba`` is ``cdba`` for 4
  dims, ``aBx16b`` is ``aBcd16b``. Letters beyond the number of dims that are
  plain (lowercase, unblocked) are dropped, so ``axb`` for 1 dim is ``a``.
* **Named tags**: letters ``n c d h w`` (activations) or ``g o i d h w``
  (weights) in the same grammar: ``nchw``, ``nhwc``, ``NChw32n32c``,
  ``OIhw16i16o``, ``goihw``. See :func:`named_dims` for how letters find their
  dims.

An **explicit block form** lists every block outer to inner with its size, as
seed 000 writes ``NChw32n32c`` for a 128x64x7x7 tensor: ``4n2c7h7w32n32c`` (or
``4a2b7c7d32a32b``). A dim of size 1 may be left out.

A tag is read as letter form when it contains ``a`` or ``x`` (named tags never
do), otherwise as named form.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Sequence

POSITIONAL = "abcdefghijkl"
# Canonical position of named letters when no dim names are given: groups,
# then batch/output channels, then input channels, then spatial d, h, w.
NAMED_ORDER = "gnoicdhw"
_ACTIVATION, _WEIGHTS = set("nc"), set("goi")
# Benchdnn dim names each named letter may stand for.
_NAME_CANDIDATES = {
    "n": ("mb", "n"),
    "c": ("ic", "oc", "c"),
    "o": ("oc",),
    "i": ("ic",),
    "g": ("g",),
    **{s: (f"i{s}", f"o{s}", f"k{s}", s) for s in "dhw"},
}
_TOKEN = re.compile(r"(\d*)([A-Za-z])")


class LayoutTagError(ValueError):
    """A layout tag is invalid.

    ``start``/``end`` are character offsets (end exclusive) into the tag text;
    the message quotes the offending token.
    """

    def __init__(self, message: str, start: int, end: int):
        super().__init__(message)
        self.message = message
        self.start = start
        self.end = end

    def shifted(self, offset: int) -> "LayoutTagError":
        """The same error for a tag embedded at ``offset`` in a larger string."""
        return LayoutTagError(self.message, self.start + offset, self.end + offset)


@dataclass(frozen=True)
class _Token:
    """A block size and letter of a layout tag, with its span in the tag's text."""

    size: int | None  # None for a letter of the outer part
    letter: str
    start: int
    end: int

    @property
    def text(self) -> str:
        return f"{self.size if self.size is not None else ''}{self.letter}"

    def error(self, message: str) -> LayoutTagError:
        return LayoutTagError(f"'{self.text}': {message}", self.start, self.end)


def tag_blocks(
    tag: str, dims: Sequence[int], dim_names: Sequence[str] | None = None
) -> tuple[tuple[int, int], ...]:
    """Blocks ``(dim, size)`` of ``tag`` for a tensor of logical sizes ``dims``, outer to inner.

    Raises :class:`LayoutTagError` naming the offending token and its span.
    """
    dims = tuple(dims)
    if dim_names is not None and len(dim_names) != len(dims):
        raise ValueError(f"{len(dim_names)} dim names {tuple(dim_names)} for {len(dims)} dims")
    tokens = _tokenize(tag)
    if tokens[0].size is not None:
        return _explicit_blocks(tag, tokens, dims, dim_names)
    return _tag_form_blocks(tag, tokens, dims, dim_names)


def _tokenize(text: str) -> list[_Token]:
    if not text:
        raise LayoutTagError("empty layout tag", 0, 0)
    tokens, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            bad = text[pos]
            raise LayoutTagError(f"'{bad}': unexpected character in layout tag '{text}'", pos, pos + 1)
        digits, letter = m.groups()
        size = int(digits) if digits else None
        if size == 0:
            raise LayoutTagError(f"'{m.group()}': block size must be positive", m.start(), m.end())
        tokens.append(_Token(size, letter, m.start(), m.end()))
        pos = m.end()
    return tokens


def _is_positional(tokens: Sequence[_Token]) -> bool:
    return any(t.letter.lower() in "ax" for t in tokens)


def _resolver(text: str, tokens: Sequence[_Token], ndims: int, dim_names):
    """A function token -> dim index for the tag's alphabet (positional or named)."""
    if _is_positional(tokens):
        def positional(tok: _Token) -> int:
            dim = POSITIONAL.find(tok.letter.lower())
            if dim < 0:
                raise tok.error(f"letter is not one of {POSITIONAL} (or x)")
            return dim
        return positional
    letters = [t.letter.lower() for t in tokens]
    for tok in tokens:
        if tok.letter.lower() not in NAMED_ORDER:
            raise tok.error(f"not a layout letter (use {POSITIONAL}, x, or named {NAMED_ORDER})")
    table = named_dims(set(letters), ndims, dim_names, text)
    return lambda tok: table[tok.letter.lower()]


def named_dims(
    letters: set[str], ndims: int, dim_names: Sequence[str] | None, text: str = ""
) -> dict[str, int]:
    """Dim index of each named letter.

    With ``dim_names`` (benchdnn names) each letter picks the one dim whose name
    it stands for: ``n`` -> ``mb``; ``c`` -> ``ic`` or ``oc`` (the channel dim
    of the tensor, whichever is present); ``o`` -> ``oc``; ``i`` -> ``ic``;
    ``g`` -> ``g``; ``d``/``h``/``w`` -> the spatial dim ``id``/``od``/``kd``
    (resp. ``*h``, ``*w``). Without names letters take their canonical
    positions: activations ``n c [d] [h] w``, weights ``[g] o i [d] [h] w``.
    """
    span = (0, len(text))
    if dim_names is None:
        if letters & _ACTIVATION and letters & _WEIGHTS:
            raise LayoutTagError(
                f"'{text}' mixes activation letters (n, c) with weight letters (g, o, i)", *span)
        if len(letters) != ndims:
            raise LayoutTagError(
                f"'{text}' names {len(letters)} dims but the tensor has {ndims}", *span)
        return {l: k for k, l in enumerate(sorted(letters, key=NAMED_ORDER.index))}
    table = {}
    for letter in sorted(letters, key=NAMED_ORDER.index):
        hits = [k for k, name in enumerate(dim_names) if name in _NAME_CANDIDATES[letter]]
        if len(hits) != 1:
            what = "no" if not hits else "more than one"
            raise LayoutTagError(
                f"'{text}': letter '{letter}' matches {what} dim of {tuple(dim_names)}", *span)
        table[letter] = hits[0]
    return table


def named_letters(dim_names: Sequence[str]) -> tuple[str, ...] | None:
    """The named letter of each dim (inverse of :func:`named_dims`), or None if some dim has none.

    ``ic``/``oc`` print as ``i``/``o`` when both are present (weights) and as
    ``c`` otherwise (activations).
    """
    weights = {"ic", "oc"} <= set(dim_names)
    out = []
    for name in dim_names:
        if name in ("ic", "oc"):
            out.append(name[0] if weights else "c")
            continue
        hits = [l for l in "gndhw" if name in _NAME_CANDIDATES[l]]
        if len(hits) != 1:
            return None
        out.append(hits[0])
    return tuple(out) if len(set(out)) == len(out) else None


def _explicit_blocks(text, tokens, dims, dim_names):
    resolve = _resolver(text, tokens, len(dims), dim_names)
    blocks = []
    for tok in tokens:
        if tok.size is None:
            raise tok.error(f"every block of the explicit form '{text}' needs a size")
        if tok.letter.isupper():
            raise tok.error("explicit blocks use lowercase letters")
        dim = resolve(tok)
        _check_dim(tok, dim, len(dims))
        blocks.append((dim, tok.size))
    for dim, size in enumerate(dims):
        covered = math.prod(s for d, s in blocks if d == dim)
        if covered < size:
            raise LayoutTagError(
                f"'{text}': blocks of dim {_label(dim, dim_names)} cover {covered} elements "
                f"but the dim has {size}", 0, len(text))
    return tuple(blocks)


def _check_dim(tok: _Token, dim: int, ndims: int) -> None:
    if dim >= ndims:
        raise tok.error(f"names dim {dim} but the tensor has {ndims} dims")


def _tag_form_blocks(text, tokens, dims, dim_names):
    ndims = len(dims)
    n_outer = next((k for k, t in enumerate(tokens) if t.size is not None), len(tokens))
    outer, inner = tokens[:n_outer], tokens[n_outer:]
    for tok in inner:
        if tok.size is None:
            raise tok.error(f"outer letters must come before the inner blocks of '{text}'")
        if tok.letter.isupper():
            raise tok.error("inner blocks use lowercase letters")
    resolve = _resolver(text, tokens, ndims, dim_names)
    inner_dims = {resolve(t) for t in inner}
    for tok in inner:
        _check_dim(tok, resolve(tok), ndims)
    order = _outer_order(text, outer, inner_dims, ndims, resolve, dim_names)
    for tok, dim in order:
        if tok.letter.isupper() and dim not in inner_dims:
            raise tok.error("uppercase marks a blocked dim but no inner block follows")
        if tok.letter.islower() and dim in inner_dims:
            block = next(t for t in inner if resolve(t) == dim)
            raise block.error(f"inner block of a dim written lowercase ('{tok.letter}') in '{text}'")
    inner_blocks = [(resolve(t), t.size) for t in inner]
    blocks = []
    for _, dim in order:
        per_outer = math.prod(s for d, s in inner_blocks if d == dim)
        blocks.append((dim, -(-dims[dim] // per_outer)))
    return tuple(blocks + inner_blocks)


def _outer_order(text, outer, inner_dims, ndims, resolve, dim_names):
    """(token, dim) for each dim of the outer part, outermost first, with ``x`` expanded."""
    xs = [t for t in outer if t.letter in "xX"]
    if len(xs) > 1:
        raise xs[1].error(f"'x' may appear once in '{text}'")
    if xs and xs[0].letter == "X":
        raise xs[0].error("'x' (all remaining dims) cannot be blocked")
    order = _outer_letters(text, outer, inner_dims, ndims, resolve, bool(xs))
    seen = {d for _, d in order}
    expanded = []
    for tok, dim in order:
        expanded += [(tok, d) for d in range(ndims) if d not in seen] if dim is None else [(tok, dim)]
    missing = [_label(d, dim_names) for d in range(ndims) if d not in {d for _, d in expanded}]
    if missing:
        raise LayoutTagError(
            f"'{text}' does not name dim(s) {', '.join(missing)} of a {ndims}-dim tensor",
            0, len(text))
    return expanded


def _outer_letters(text, outer, inner_dims, ndims, resolve, has_x: bool) -> list:
    """(token, dim) for each letter of the outer part as written, dim None for the ``x`` placeholder."""
    order = []
    for tok in outer:
        if tok.letter == "x":
            order.append((tok, None))
            continue
        dim = resolve(tok)
        # Meta-tags adapt to fewer dims by dropping their plain trailing letters.
        if has_x and dim >= ndims and tok.letter.islower() and dim not in inner_dims:
            continue
        _check_dim(tok, dim, ndims)
        if any(d == dim for _, d in order):
            raise tok.error(f"dim named twice in '{text}'")
        order.append((tok, dim))
    return order


def _label(dim: int, dim_names) -> str:
    return dim_names[dim] if dim_names is not None else POSITIONAL[dim]


def format_tag(
    outer: Sequence[int], inner: Sequence[tuple[int, int]], letters: Sequence[str]
) -> str:
    """Letter-tag text: ``outer`` dims outermost first, then ``inner`` ``(dim, size)`` blocks.

    ``letters[d]`` is the letter of dim ``d``; dims with inner blocks print uppercase.
    """
    blocked = {d for d, _ in inner}
    head = "".join(letters[d].upper() if d in blocked else letters[d] for d in outer)
    return head + format_blocks(inner, letters)


def format_blocks(blocks: Sequence[tuple[int, int]], letters: Sequence[str]) -> str:
    """Explicit block text ``<size><letter>...`` for ``(dim, size)`` blocks in the given order."""
    return "".join(f"{size}{letters[dim]}" for dim, size in blocks)
