"""Hover of ``[config] portblas``: the pasted ``Gemm_Launcher``, argument by argument, as kdd's knobs.

Over one argument the hover leads with that argument's line of the mapping (for a ``Tile<...>``
parameter, the Tile parameter's); the whole table follows: each parameter as written, what portBLAS
does with it and what kdd does (the knob it sets, the variable it binds from the problem, or why kdd
has no knob for it), then the knobs in effect and the config's tiling and budget.
"""
from __future__ import annotations

from kdd.core.config import KNOB_BY_KEY, ConfigError
from kdd.core.config.portblas import PortblasMapping
from kdd.core.config.portblas.launcher import TILE_PARAMS

from .hover_config import _problems, config_effects
from .hover_problem import error_text
from .hover_text import code, join, section, table
from .schema import PORTBLAS


def _param_at(mapping: PortblasMapping, offset: int | None) -> str | None:
    """The launcher (or Tile) parameter whose argument holds ``offset``; Tile parameters win over TileT."""
    if offset is None:
        return None
    launcher = mapping.launcher
    for name, arg in launcher.tile_args.items():
        if arg.start <= offset < arg.end:
            return name
    for name, arg in launcher.args.items():
        if arg.start <= offset < arg.end:
            return name
    return None


def _rows(mapping: PortblasMapping) -> list[tuple[str, str, str, str]]:
    launcher = mapping.launcher
    order = [p for name in launcher.args
             for p in ([name, *(t for t, _ in TILE_PARAMS)] if name == "TileT" else [name])] + [*launcher.defaulted]
    steps = sorted(mapping.steps, key=lambda s: order.index(s.param) if s.param in order else len(order))
    rows = []
    for step in steps:
        written = launcher.args.get(step.param) or launcher.tile_args.get(step.param)
        shown = code(written.text) if written is not None else "(default)"
        rows.append((code(step.param), shown, step.meaning, step.kdd))
    return rows


def portblas_hover(ctx, offset: int | None) -> str:
    """The hover of the ``portblas`` string with the cursor at ``offset`` (None: the key)."""
    head = f"**{code('portblas')}**: {PORTBLAS.doc}"
    mapping = ctx.portblas
    if mapping is None:
        return join(head, "(the mapping is shown once [problem] is a GEMM and [target] is valid)")
    if isinstance(mapping, ConfigError):
        return join(head, error_text(mapping))
    launcher = mapping.launcher
    here = _param_at(mapping, offset)
    lead = ""
    if here is not None:
        tile = dict(TILE_PARAMS)
        lines = [f"- {s.meaning}: **{s.kdd}**" for s in mapping.steps
                 if s.param == here or (here == "TileT" and s.param in tile)]
        for s in mapping.steps:      # a Tile parameter explained with its row's neighbour (ItemCols with ItemRows)
            if not lines and here in tile and s.param in tile and s.param[:2] == here[:2]:
                lines.append(f"- {s.meaning}: **{s.kdd}**")
        arg = launcher.args.get(here) or launcher.tile_args.get(here)
        lead = section(f"{here} = {code(arg.text)}", "\n".join(lines) or "- read, no effect of its own on kdd's "
                                                                             "kernel")
    knobs = sorted(mapping.config.set_keys(), key=list(KNOB_BY_KEY).index)
    set_rows = [(code(k), code(f"{KNOB_BY_KEY[k].onednn}={KNOB_BY_KEY[k].codec.format(getattr(mapping.config, k))}"),
                 code(mapping.sources.get(k, "-"))) for k in knobs]
    issues = "\n\n".join(f"**{i.severity}** ({i.param}): {i.message}" for i in mapping.issues)
    bound = ", ".join(f"{code(v)} = {str(mapping.binding.values[v]).lower()}"
                      for v in ("_t_a", "_t_b", "s_a", "s_b", "is_beta_zero") if v in mapping.binding.values)
    form = ("the seed's form (SYCL-BLAS: no container types, no SymmA/SymmB)" if launcher.form == "seed" else
            "portBLAS's current form (container types first)")
    return join(lead, head, f"Read as {form}. Dispatcher variables bound from [problem]: {bound}.", issues,
                section("Mapping, argument by argument", table(("parameter", "written", "portBLAS", "kdd"),
                                                               _rows(mapping))),
                section("Knobs it sets", table(("knob", "value", "from"), set_rows)),
                _problems(ctx, "portblas"), config_effects(ctx))
