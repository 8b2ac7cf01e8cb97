"""Convolution shapes written in benchdnn's descriptor language.

A descriptor is a run of ``KEY INT`` entries, in any order, with ``_`` allowed
between entries, and an optional trailing name (``n"NAME"``, see
:mod:`.descriptor_name`)::

    mb32_g1ic3oc32_ih224oh112kh3sh2dh0ph1_iw224ow112kw3sw2dw0pw1_n"mobilenet:conv1"

Keys: ``g mb ic id ih iw oc od oh ow kd kh kw sd sh sw pd ph pw dd dh dw``.
``ic``/``oc`` count *all* channels (``g`` groups of ``ic/g`` each), so both must
be divisible by ``g``.

Filling rules, the same as benchdnn's ``conv::str2desc``:

1. Defaults: ``g=1``, ``mb=2``, strides 1, dilations 0. Dilation is zero-based:
   a kernel of ``k`` taps with dilation ``d`` spans ``(k-1)*(d+1)+1`` inputs.
2. A spatial dimension (d, h or w) is *given* when any of its ``i``/``o``/``k``
   is written, or its stride is not 1, its padding not 0 or its dilation not 0
   (so ``pd0`` or ``sd1`` alone do not make a problem 3D). A given dimension
   needs ``i`` and ``k``.
3. Missing output: ``o = (i - ((k-1)*(d+1)+1) + 2*p) / s + 1`` with a missing
   ``p`` taken as 0. Missing padding with a written output:
   ``p = ((o-1)*s - i + ((k-1)*(d+1)+1)) / 2``. Both divisions truncate toward
   zero as C does (this matters when the numerator is negative).
4. The number of spatial dimensions comes from the outermost given one:
   d given makes the problem 3D, else h makes it 2D, else w makes it 1D.
   A 3D problem with neither h nor w copies d's values to both (cubic); with
   only one of them it is an error. A 2D problem without w copies h to w
   (square). Unused outer dimensions get ``i=o=k=s=1``, ``p=d=0``.
5. The right (end) padding is never written; it is whatever makes the output
   size exact: ``pr = (o-1)*s - i + ((k-1)*(d+1)+1) - p`` (it may differ from
   the left padding, and may be negative).

kdd is stricter than benchdnn in a few places, always with an error naming the
token: a key must be followed by digits, may not repeat, and sizes/strides
must be positive (benchdnn reads ``ih0`` as "not given"). One extension:
paddings may be negative (``ph-1``), so that every shape benchdnn can deduce
prints and parses back.

Printing (:meth:`ConvShape.canonical`) follows benchdnn's non-canonical
``operator<<``: ``g`` only when not 1, ``mb`` only when not 2, strides only
when some stride is not 1, dilations only when some dilation is not 0, and the
h/w entries only when they differ from d (3D) or w from h (2D). Inputs,
outputs, kernels and paddings of the shown dimensions are always printed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, fields

from .descriptor_name import format_name, parse_name
from .errors import ProblemError, check_size

KEYS = ("g", "mb", "ic", "id", "ih", "iw", "oc", "od", "oh", "ow", "kd", "kh", "kw",
        "sd", "sh", "sw", "pd", "ph", "pw", "dd", "dh", "dw")
AXES = ("d", "h", "w")
# Per-axis parameters in the order benchdnn groups them, with the values an
# unused dimension takes.
_AXIS_PARAMS = ("o", "i", "k", "s", "p", "d")
_UNUSED_AXIS = {"o": 1, "i": 1, "k": 1, "s": 1, "p": 0, "d": 0}
_POSITIVE = {"g", "mb", "ic", "oc"} | {f"{p}{a}" for p in "iosk" for a in AXES}

_ENTRY = re.compile(r"(%s)(-?\d+)?" % "|".join(sorted(KEYS, key=len, reverse=True)))
_WORD = re.compile(r"[A-Za-z]+-?\d*")


def _cdiv(a: int, b: int) -> int:
    """Integer division truncating toward zero, as C's ``/`` that benchdnn uses."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def kernel_extent(k: int, d: int) -> int:
    """Inputs spanned by ``k`` taps with zero-based dilation ``d``."""
    return (k - 1) * (d + 1) + 1


def compute_out(i: int, k: int, s: int, p: int, d: int) -> int:
    """benchdnn's output size for input ``i`` with padding ``p`` on both sides."""
    return _cdiv(i - kernel_extent(k, d) + 2 * p, s) + 1


def compute_pad(o: int, i: int, k: int, s: int, d: int) -> int:
    """benchdnn's left padding making ``o`` outputs from ``i`` inputs (half the total)."""
    return _cdiv((o - 1) * s - i + kernel_extent(k, d), 2)


def right_pad(o: int, i: int, k: int, s: int, p: int, d: int) -> int:
    """The end padding that makes exactly ``o`` outputs for left padding ``p``."""
    return (o - 1) * s - i + kernel_extent(k, d) - p


@dataclass(frozen=True)
class Axis:
    """One spatial dimension of a convolution, both paddings included."""

    i: int
    o: int
    k: int
    s: int
    pl: int
    pr: int
    d: int

    def valid_taps(self) -> int:
        """Number of (output, kernel tap) pairs that read a real (non-padding) input."""
        step = self.d + 1
        total = 0
        for o in range(self.o):
            base = o * self.s - self.pl
            # Taps t with 0 <= base + t*step <= i-1 form one range [lo, hi].
            lo = -(base // step) if base < 0 else 0
            hi = min(self.k - 1, (self.i - 1 - base) // step)
            total += max(0, hi - lo + 1)
        return total


@dataclass(frozen=True)
class ConvShape:
    """A convolution's sizes, filled in exactly as benchdnn fills them.

    ``ic``/``oc`` are total channel counts. ``ndims`` is the number of spatial
    dimensions (1..3); unused outer dimensions hold ``i=o=k=s=1, p=d=0``.
    Build one with :func:`parse_conv_shape`; direct construction checks the
    invariants but does no deduction.
    """

    g: int
    mb: int
    ic: int
    id: int
    ih: int
    iw: int
    oc: int
    od: int
    oh: int
    ow: int
    kd: int
    kh: int
    kw: int
    sd: int
    sh: int
    sw: int
    pd: int
    ph: int
    pw: int
    dd: int
    dh: int
    dw: int
    ndims: int
    name: str | None = None

    def __post_init__(self):
        for f in fields(self)[:-1]:
            if type(getattr(self, f.name)) is not int:
                raise ValueError(f"ConvShape.{f.name} must be an int, got {getattr(self, f.name)!r}")
        for key in sorted(_POSITIVE):
            if getattr(self, key) < 1:
                raise ValueError(f"ConvShape.{key} must be positive, got {getattr(self, key)}")
        for a in AXES:
            if getattr(self, f"d{a}") < 0:
                raise ValueError(f"ConvShape.d{a} (zero-based dilation) must be >= 0")
        if self.ndims not in (1, 2, 3):
            raise ValueError(f"ConvShape.ndims must be 1, 2 or 3, got {self.ndims}")
        for a in self.unused_axes:
            for p, default in _UNUSED_AXIS.items():
                if getattr(self, p + a) != default:
                    raise ValueError(f"{self.ndims}D problem: {p}{a} must be {default}, "
                                     f"got {getattr(self, p + a)}")
        for key in ("ic", "oc"):
            if getattr(self, key) % self.g:
                raise ValueError(f"{key}={getattr(self, key)} is not divisible by g={self.g}")

    @property
    def used_axes(self) -> tuple[str, ...]:
        """The spatial dimensions of this problem, outermost first (``('h', 'w')`` for 2D)."""
        return AXES[3 - self.ndims:]

    @property
    def unused_axes(self) -> tuple[str, ...]:
        return AXES[:3 - self.ndims]

    def axis(self, a: str) -> Axis:
        """Spatial dimension ``a`` (``'d'``, ``'h'`` or ``'w'``) with both paddings."""
        o, i, k, s, p, d = (getattr(self, x + a) for x in _AXIS_PARAMS)
        return Axis(i=i, o=o, k=k, s=s, pl=p, pr=right_pad(o, i, k, s, p, d), d=d)

    @property
    def pd_r(self) -> int:
        return self.axis("d").pr

    @property
    def ph_r(self) -> int:
        return self.axis("h").pr

    @property
    def pw_r(self) -> int:
        return self.axis("w").pr

    def spatial_taps(self) -> int:
        """(output point, kernel tap) pairs over all spatial dims that read real input."""
        taps = 1
        for a in self.used_axes:
            taps *= self.axis(a).valid_taps()
        return taps

    def canonical(self) -> str:
        """benchdnn's short form of this shape; parsing it gives this shape back."""
        shown = self._shown_axes()

        def spatial(param: str) -> str:
            return "".join(f"{param}{a}{getattr(self, param + a)}" for a in shown)

        out = []
        if self.g != 1:
            out.append(f"g{self.g}")
        if self.mb != 2:
            out.append(f"mb{self.mb}")
        out += [f"ic{self.ic}", spatial("i"), f"oc{self.oc}", spatial("o"), spatial("k")]
        if any(getattr(self, f"s{a}") != 1 for a in AXES):
            out.append(spatial("s"))
        out.append(spatial("p"))
        if any(getattr(self, f"d{a}") != 0 for a in AXES):
            out.append(spatial("d"))
        out.append(format_name(self.name))
        return "".join(out)

    def _shown_axes(self) -> tuple[str, ...]:
        def params(a):
            return tuple(getattr(self, p + a) for p in _AXIS_PARAMS)

        if self.ndims == 3:
            cubic = params("d") == params("h") == params("w")
            return ("d",) if cubic else AXES
        if self.ndims == 2:
            return ("h",) if params("h") == params("w") else ("h", "w")
        return ("w",)

    def to_dict(self) -> dict:
        """All 22 benchdnn fields plus ``ndims``, ``name`` and ``canonical``.

        ``ndims`` here is benchdnn's ``desc_t::ndims``: the tensor rank, i.e. the
        spatial dims plus batch and channels (3, 4 or 5), not ``self.ndims``.
        """
        out = {key: getattr(self, key) for key in KEYS}
        out.update(ndims=self.ndims + 2, name=self.name, canonical=self.canonical())
        return out

    def __str__(self) -> str:
        return self.canonical()


def parse_conv_shape(text: str) -> ConvShape:
    """Parse a benchdnn convolution descriptor, filling it as benchdnn does.

    Raises :class:`ProblemError` naming the offending token and its span.
    """
    given, name = scan_entries(text)
    return _fill(given, name, text)


# key -> (value, start, end) of each written entry.
Given = dict[str, tuple[int, int, int]]


def scan_entries(text: str) -> tuple[Given, str | None]:
    """The entries written in a descriptor, each with its value and span, and the name (``n"..."``).

    Nothing is deduced; hovers use the spans to explain the entry under the cursor.
    Raises :class:`ProblemError` at the first malformed entry.
    """
    end = len(text.rstrip())
    pos = len(text) - len(text.lstrip())
    if pos >= end:
        raise ProblemError("empty convolution descriptor", 0, len(text))
    given: Given = {}
    name = None
    while pos < end:
        if text[pos] == "_":
            pos += 1
            continue
        if text[pos] == "n":
            name = parse_name(text[:end], pos)
            break
        m = _ENTRY.match(text, pos, end)
        if not m and text[pos].isspace():
            raise ProblemError("unexpected whitespace inside the descriptor", pos, pos + 1)
        if not m:
            w = _WORD.match(text, pos, end)
            stop = w.end() if w else pos + 1
            raise ProblemError(f"unknown entry {text[pos:stop]!r} (keys: {' '.join(KEYS)})", pos, stop)
        key, digits = m.groups()
        if digits is None:
            raise ProblemError(f"{key!r} must be followed by a number, e.g. {key}3", m.start(), m.end())
        value = check_size(int(digits), m.group(), m.start(), m.end())
        if value < 0 and key[0] != "p":
            raise ProblemError(f"{m.group()!r}: {key} cannot be negative", m.start(), m.end())
        if key in _POSITIVE and value == 0:
            raise ProblemError(f"{m.group()!r}: {key} must be positive", m.start(), m.end())
        if key in given:
            raise ProblemError(f"{m.group()!r}: {key} is given twice", m.start(), m.end())
        given[key] = (value, m.start(), m.end())
        pos = m.end()
    return given, name


class _Written:
    """The keys of a descriptor as written: their tokens and their span in ``text``, for messages."""

    def __init__(self, given: Given, text: str):
        self.given, self.text = given, text

    def tokens(self, keys) -> str:
        spans = sorted(self.given[k][1:] for k in keys if k in self.given)
        return " ".join(repr(self.text[start:end]) for start, end in spans)

    def span(self, keys) -> tuple[int, int]:
        spans = [self.given[k][1:] for k in keys if k in self.given]
        return min(s for s, _ in spans), max(e for _, e in spans)


def _fill(given: Given, name: str | None, text: str) -> ConvShape:
    written = _Written(given, text)
    for key in ("ic", "oc"):
        if key not in given:
            raise ProblemError(f"missing {key!r} ({'input' if key == 'ic' else 'output'} channels)",
                               0, len(text))
    axes = {a: v for a in AXES if (v := _axis(given, a, written)) is not None}
    if not axes:
        raise ProblemError("no spatial size given: write at least an input and a kernel size, "
                           "e.g. ih56kh3 (2D) or iw56kw3 (1D)", 0, len(text))
    ndims = _spatial_rank(axes, written)
    for a in AXES:
        axes.setdefault(a, _UNUSED_AXIS)
    g = given.get("g", (1,))[0]
    for key in ("ic", "oc"):
        if given[key][0] % g:
            raise ProblemError(f"{written.tokens([key])} is not divisible by {written.tokens(['g'])} "
                               f"(ic and oc count all groups' channels)", *written.span([key]))
    return ConvShape(
        g=g, mb=given.get("mb", (2,))[0], ic=given["ic"][0], oc=given["oc"][0], ndims=ndims, name=name,
        **{p + a: axes[a][p] for a in AXES for p in _AXIS_PARAMS})


def _axis(given: Given, a: str, written: _Written) -> dict[str, int] | None:
    """Every parameter of spatial axis ``a`` (input, output, kernel, stride, padding, dilation), the
    output or the padding computed from the others; None when the descriptor does not describe it."""
    keys = [p + a for p in _AXIS_PARAMS]
    v = {p: given[p + a][0] for p in _AXIS_PARAMS if p + a in given}
    present = any(p in v for p in "iok") or v.get("s", 1) != 1 or v.get("p", 0) != 0 \
        or v.get("d", 0) != 0
    if not present:
        return None
    missing = [p + a for p in "ik" if p not in v]
    if missing:
        raise ProblemError(f"{written.tokens(keys)} describe the {a} dimension, which also needs "
                           f"{' and '.join(missing)}", *written.span(keys))
    v.setdefault("s", 1)
    v.setdefault("d", 0)
    if "o" not in v:
        v.setdefault("p", 0)
        v["o"] = compute_out(v["i"], v["k"], v["s"], v["p"], v["d"])
        if v["o"] <= 0:
            raise ProblemError(f"o{a} computed from {written.tokens(keys)} is {v['o']}; "
                               f"the kernel does not fit the padded input", *written.span(keys))
    elif "p" not in v:
        v["p"] = compute_pad(v["o"], v["i"], v["k"], v["s"], v["d"])
    return v


def _spatial_rank(axes: dict[str, dict[str, int]], written: _Written) -> int:
    """3, 2 or 1 spatial dims from the axes given; a missing h or w copies the one above it (``axes`` is
    completed in place)."""
    if "d" in axes:
        if "h" not in axes and "w" not in axes:
            axes["h"] = axes["w"] = axes["d"]
        elif "h" not in axes or "w" not in axes:
            lone = "h" if "h" in axes else "w"
            other = "w" if lone == "h" else "h"
            keys = [p + lone for p in _AXIS_PARAMS]
            raise ProblemError(f"3D problem: {written.tokens(keys)} give the {lone} dimension but nothing "
                               f"gives {other}; give both or neither (then both copy d)", *written.span(keys))
        return 3
    if "h" in axes:
        axes.setdefault("w", axes["h"])
        return 2
    return 1
