"""Knob changes as text edits of a config document, for the editors' code actions: one knob set to a
value (a repair the out-of-registers error lists, a "did you mean"), and every knob the defaults
heuristic chose written out explicitly.

An edit replaces the knob where the document writes it (its value, or its ``key=value`` token inside
``line``) and otherwise adds ``key = value`` to ``[config]`` (adding the table when there is none).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from kdd.core.config import KNOB_BY_KEY, KNOBS, KernelConfig
from kdd.core.config.tiles import Tile
from kdd.core.config.values import Buffering, Pipeline, Subtiles

from .document import Document, Position, Range
from .kernel_spec import KernelSpec
from .schema import toml_literal

# Knobs kdd only reads and prints for oneDNN's sake: spelling their defaults out adds nothing.
_PRINTED_ONLY = ("vec", "walk_order", "pad_slm", "bwd_d_optimize", "src_layout", "wei_layout", "dst_layout",
                 "bia_layout")


@dataclass(frozen=True)
class TextEdit:
    """Replace ``range`` of the document with ``new_text`` (LSP's TextEdit)."""

    range: Range
    new_text: str

    def to_dict(self) -> dict:
        r = self.range
        return {"range": {"start": {"line": r.start.line, "character": r.start.character},
                          "end": {"line": r.end.line, "character": r.end.character}}, "newText": self.new_text}


def knob_text(knob: str, value) -> str:
    """``key = value`` as ``[config]`` writes it."""
    return f"{knob} = {toml_literal(KNOB_BY_KEY[knob].codec.to_toml(value))}"


def set_knob(doc: Document, spec: KernelSpec, knob: str, value) -> TextEdit | None:
    """The edit that makes the document set ``knob`` to ``value`` (a :class:`KernelConfig` field value);
    None where a pasted portBLAS launcher sets it (its arguments are portBLAS's, not knob values)."""
    source = spec.knob_sources.get(knob)
    codec = KNOB_BY_KEY[knob].codec
    if source is not None and source.in_portblas:
        return None
    if source is not None and not source.inherited:
        if source.in_line:
            return TextEdit(source.range, f"{KNOB_BY_KEY[knob].onednn}={codec.format(value)}")
        return TextEdit(source.range, toml_literal(codec.to_toml(value)))
    return add_knobs(doc, [knob_text(knob, value)])


def add_knobs(doc: Document, lines: list[str]) -> TextEdit:
    """Lines added at the end of ``[config]``, or a new ``[config]`` table after the last table."""
    table = doc.table("config")
    if table is not None and table.header_range is not None:
        end = table.entries[-1].range.end if table.entries else table.header_range.end
        return TextEdit(Range(end, end), "".join("\n" + line for line in lines))
    last = max((t.range.end for t in doc.tables), default=Position(0, 0), key=lambda p: (p.line, p.character))
    return TextEdit(Range(last, last), "\n\n[config]" + "".join("\n" + line for line in lines) + "\n")


def explicit_defaults(doc: Document, spec: KernelSpec) -> TextEdit | None:
    """Every knob the defaults heuristic chose (and kdd acts on) written into ``[config]``; None when the
    document sets them all."""
    chosen = [k.key for k in KNOBS if k.key not in spec.user_knobs and k.key not in _PRINTED_ONLY
              and getattr(spec.config, k.key) is not None]
    if not chosen:
        return None
    return add_knobs(doc, [knob_text(k, getattr(spec.config, k)) for k in chosen])


def repair_settings(spec: KernelSpec, repair: dict) -> list[tuple[str, object]]:
    """The knob values that apply one repair of an out-of-registers error (``{"repair", "knob", "how"}``) to
    the config: each ``(knob, value)`` is one alternative; none when the config has nothing to change."""
    config: KernelConfig = spec.config
    knob = repair.get("knob")
    if knob == "regs":
        top = max(spec.target.registers.modes or (config.regs,))
        return [("regs", top)] if top != config.regs else []
    if knob == "subtiles":
        return [("subtiles", Subtiles(a=2)), ("subtiles", Subtiles(b=2))]
    if knob == "pipeline":
        flags = config.pipeline or Pipeline()
        return [] if flags.reuse_headers else [("pipeline", replace(flags, reuse_headers=True))]
    if knob == "slm" and config.slm is not None:
        slm = config.slm
        if slm.gmem > 1:
            return [("slm", replace(slm, gmem=slm.gmem - 1))]
        return [("slm", replace(slm, bufs=slm.bufs - 1))] if slm.bufs > 0 else []
    if knob == "prefetch":
        return [] if config.prefetch is not None and config.prefetch.bufs == 0 else [("prefetch", Buffering(0))]
    if knob == "iter" and config.iter is not None:
        return [("iter", t)] if (t := _halved(spec, config.iter)) is not None else []
    return []


def _halved(spec: KernelSpec, tile: Tile) -> Tile | None:
    """``tile`` with its largest even M or N size halved (None when it has none)."""
    dims = spec.problem.gemm_dims()
    mn = {name for role in "mn" for name, _ in getattr(dims, role)}
    candidates = [(size, name) for name, size in tile.items if name in mn and size % 2 == 0]
    if not candidates:
        return None
    _, name = max(candidates)
    return Tile.of((d, s // 2 if d == name else s) for d, s in tile.items)
