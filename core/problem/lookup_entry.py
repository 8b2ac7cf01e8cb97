"""Entries of oneDNN's conv lookup table: a problem key and the tuned config line for it.

oneDNN's GPU conv generator ships tuned configs as one line each::

    xehpg dpas fwd x16:x16:any mb32 ic64ih56oc64oh56kh3ph1 simd=8 l=kh3kw3ic4 T=oc4ow4 i=mb32oc32ic16 bufs=3

Fields: the hardware (``xehpg``, ``xehpc``, optionally ``:family`` such as
``xehpg:arl``), the FMA kind, the propagation kind, a type filter
``src:wei:dst``, the minibatch the entry applies from (``mb32``; a trailing
``b`` says the activations' layout is blocked by the minibatch), the problem
descriptor without the minibatch, then the config line (``simd l T i`` and
the SLM buffer hint ``bufs``).

Type filters name classes: ``x16`` is f16 or bf16, ``x8`` s8 or u8, ``any``
is the tensor whose type does not choose the config (the destination of
fwd, diff_src of bwd_d, diff_weights of bwd_w); ``tf32`` is f32 data
multiplied in tf32. :meth:`LookupEntry.variants` turns a filter into concrete
kdd problems: every member of a class, and ``any`` taking the type of the
tensor it is computed from (fwd dst = src, bwd_d diff_src = diff_dst, bwd_w
diff_weights = src), as oneDNN's own benchmarks mostly run them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .document import kernel_document
from .problem import Problem, problem_from_text

# Type-filter class -> the concrete kdd types it stands for (tf32 is f32 data multiplied as tf32).
TYPE_CLASSES = {"x16": ("f16", "bf16"), "x8": ("u8",), "f16": ("f16",), "bf16": ("bf16",), "s8": ("s8",),
                "u8": ("u8",), "f32": ("f32",), "tf32": ("f32",), "f64": ("f64",), "s32": ("s32",)}
# The integer weights of an x8 class: oneDNN's int8 convolutions take u8 activations and s8 weights.
_X8_WEI = "s8"
# Which tensor an ``any`` slot copies its type from, per propagation kind.
_ANY_FROM = {"fwd": ("dst", "src"), "bwd_d": ("src", "dst"), "bwd_w": ("wei", "src")}
# Which activations an ``mb..b`` key blocks by the minibatch.
_MB_BLOCKED = {"fwd": ("src",), "bwd_d": ("dst",), "bwd_w": ("src", "dst")}
_KEY = re.compile(r"(?P<hw>[a-z0-9]+)(?::(?P<family>[a-z0-9]+))?\s+(?P<fma>\w+)\s+(?P<prop>fwd|bwd_d|bwd_w)\s+"
                  r"(?P<types>\w+:\w+:\w+)\s+mb(?P<mb>\d+)\+?(?P<blocked>b?)\s+(?P<desc>\S+)\s*(?P<line>.*)$")


class LookupEntryError(ValueError):
    """A lookup-table line that does not read as ``hw fma prop types mbN desc line``."""


@dataclass(frozen=True)
class Variant:
    """One concrete problem a lookup entry stands for."""

    label: str        # the type class spelled concretely: ``f16``, ``bf16``, ``u8:s8:u8``, ``tf32``
    problem: Problem


@dataclass(frozen=True)
class LookupEntry:
    """One lookup-table line, its fields as written."""

    hw: str
    family: str | None
    fma: str
    prop: str
    types: tuple[str, str, str]
    mb: int
    mb_blocked: bool
    desc: str
    line: str

    @staticmethod
    def parse(text: str) -> "LookupEntry":
        """Read one line (surrounding blanks ignored)."""
        m = _KEY.fullmatch(text.strip())
        if m is None:
            raise LookupEntryError(f"not a lookup-table entry (hw fma prop src:wei:dst mbN desc config): {text!r}")
        types = tuple(m["types"].split(":"))
        for t in types:
            if t != "any" and t not in TYPE_CLASSES:
                raise LookupEntryError(f"unknown type class {t!r} in {text!r}")
        return LookupEntry(m["hw"], m["family"], m["fma"], m["prop"], types, int(m["mb"]), bool(m["blocked"]),
                           m["desc"], m["line"].strip())

    @property
    def target(self) -> str:
        """The kdd target: the hardware without its product family (``xehpg:arl`` runs as ``xehpg``)."""
        return self.hw

    @property
    def type_class(self) -> str:
        """The filter's class of the tensors that choose the config (``x16``, ``x8``, ``f32``, ``tf32``...)."""
        return next(t for t in self.types if t != "any")

    @property
    def shape(self) -> str:
        """The benchdnn descriptor with the entry's minibatch.

        oneDNN's descriptor counts ``ic`` and ``oc`` per group; benchdnn's
        counts all groups' channels, so they are multiplied by ``g``. A
        descriptor with no spatial size (oneDNN omits sizes that are all 1)
        is a 1x1 point: ``ih1kh1``.
        """
        pairs = [(name, int(size)) for name, size in re.findall(r"([a-z]+)(\d+)", self.desc)]
        groups = dict(pairs).get("g", 1)
        text = f"mb{self.mb}" + "".join(f"{n}{s * groups if n in ('ic', 'oc') else s}" for n, s in pairs)
        return text if any(n[0] in "iok" and n not in ("ic", "oc") for n, _ in pairs) else text + "ih1kh1"

    def variants(self) -> tuple[Variant, ...]:
        """The concrete problems of this entry, one per member of its type class."""
        out = []
        for member in TYPE_CLASSES[self.type_class]:
            types = dict(zip(("src", "wei", "dst"), self.types))
            for tensor, t in types.items():
                if t != "any":
                    types[tensor] = _X8_WEI if (t == "x8" and tensor == "wei") else TYPE_CLASSES[t][0]
                    if t == "x16":
                        types[tensor] = member
            slot, source = _ANY_FROM[self.prop]
            if types[slot] == "any":
                types[slot] = types[source]
            text = ":".join(types[t] for t in ("src", "wei", "dst"))
            label = "tf32" if self.type_class == "tf32" else (text if self.type_class == "x8" else member)
            tags = {t: _mb_blocked_tag(types[t]) for t in _MB_BLOCKED[self.prop]} if self.mb_blocked else {}
            out.append(Variant(label, problem_from_text(self.shape, op="conv", prop=self.prop, types=text,
                                                        tags=tags)))
        return tuple(out)

    def document(self, variant: Variant) -> str:
        """The kernel config (``*.kernel.toml`` text) a user writes for ``variant``: its problem, the
        target, and the entry's config line with the entry's ``fma``."""
        return kernel_document(variant.problem, self.target, f"fma={self.fma} {self.line}")


def _mb_blocked_tag(dtype: str) -> str:
    """A minibatch-blocked activation layout (32 minibatch x one GRF row of channels), oneDNN's
    ``NCx32n16c`` for 16-bit, ``NCx32n32c`` for 8-bit and ``NCx32n16c`` for 32-bit types."""
    channels = 32 if dtype in ("s8", "u8") else 16
    return f"ABx32a{channels}b"


def read_lookup_table(text: str) -> tuple[LookupEntry, ...]:
    """Every entry of a table file: one per line, blank lines and ``#`` comments skipped."""
    return tuple(LookupEntry.parse(line) for line in text.splitlines() if line.strip() and
                 not line.lstrip().startswith("#"))
