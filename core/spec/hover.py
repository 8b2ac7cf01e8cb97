"""Hover for kernel config documents: markdown about whatever lies under a position.

``hover(document, line, character)`` finds the table header, key or value at
an LSP position (0-based line, UTF-16 character) and describes it:

======================================  ==========================================  =====================
under the cursor                        shows                                       module
======================================  ==========================================  =====================
``[problem] src`` / ``wei`` / ``dst``   the layout: tag, blocks and strides, CuTe   :mod:`.hover_layout`
                                        form, size and padding, an offset table
``[problem] shape``, ``[check] shape``  all fields (written, deduced, default),      :mod:`.hover_problem`
                                        B/M/N/K, operation count
``types``, ``post_ops``, ``op``,        the types and GEMM operands, what each      :mod:`.hover_problem`
``prop``                                post-op computes, the GEMM view
``[target] hw``, ``[target]``           registers, SIMD, FMA forms, SLM, peaks      :mod:`.hover_target`
a ``[config]`` knob or ``line``         the knob's doc, value in effect, tiling,    :mod:`.hover_config`
                                        grids, register/SLM budget (sm_90 lanes)
the ``[config]`` header                 every knob in effect, defaults filled in    :mod:`.hover_config`
any other key of the format             its documentation from the schema           :mod:`.schema`
======================================  ==========================================  =====================

Diagnostics whose range holds the position come first (unless the topic
already explains them), so a position inside a broken value still shows the
error and whatever else can be said about it.
``None`` means nothing is under the cursor (blank space, comments, text no
key owns). Hover does not raise on any text or position: a bug in a topic
is shown as an internal error instead of taking the editor's hover down.
"""
from __future__ import annotations

from kdd.core.config import KNOB_BY_KEY
from kdd.core.problem import TENSORS

from .diagnostics import Diagnostic, Severity
from .document import Document, Hit, KeyPath, Position, Value, parse_document
from .extends import ReadText, read_file
from .hover_config import config_table_hover, knob_hover, line_hover
from .hover_portblas import portblas_hover
from .hover_context import HoverContext, cursor_offset
from .hover_layout import layout_hover
from .hover_problem import (decompression_hover, flops_line, gemm_view, post_ops_hover, problem_key_hover, shape_hover,
                            types_hover)
from .hover_target import target_hover
from .hover_text import code, join
from .schema import SCHEMA, KeySpec, TableSpec

__all__ = ["hover"]

INTERNAL_ERROR = "internal error"


def hover(document: Document | str, line: int, character: int, *, path: str | None = None,
          read_text: ReadText = read_file, registers: dict | None = None) -> str | None:
    """Markdown describing what is at (``line``, ``character``) of ``document``, or None.

    ``document`` is a parsed document or its text; ``path`` is its file (for
    ``extends``, whose parents are read with ``read_text``). ``registers``, the
    ``stats.registers`` of a compile of this text when there is one, makes the
    register total the compile's figure: the code generator's allocation (with
    the built IR's register model beside it), or the IR register model's where
    none ran; without it only the floor (C, A, B) is shown.
    """
    doc = document if isinstance(document, Document) else parse_document(document)
    pos = Position(line, character)
    ctx = HoverContext(doc, path, read_text, registers)
    hit = doc.node_at(pos)
    try:
        body = _topic(ctx, hit, pos) if hit is not None else ""
    except Exception as exc:  # a bug in a topic must become text, not a dead hover (as in load_spec)
        body = f"**{INTERNAL_ERROR}** while building this hover: {type(exc).__name__}: {exc}"
    # A problem the topic already explains (a knob's error) is not repeated above it.
    notes = "\n\n".join(_diagnostic_line(d) for d in ctx.diagnostics_at(pos) if d.message not in body)
    return join(notes, body) or None


def _diagnostic_line(d: Diagnostic) -> str:
    return f"**{Severity(d.severity).name.lower()}** ({d.code}): {d.message}"


def _topic(ctx: HoverContext, hit: Hit, pos: Position) -> str:
    if hit.part == "table":
        table = hit.table
        if len(table.path) == 1:
            return _table_hover(ctx, table.path[0])
        return _path_hover(ctx, table.path, None, None, None)
    value = hit.entry.value
    offset = cursor_offset(ctx.doc, value, pos) if hit.part == "value" else None
    item = hit.value if hit.value is not value else None
    return _path_hover(ctx, hit.entry.path, value, item, offset)


def _path_hover(ctx: HoverContext, path: KeyPath, value: Value | None, item: Value | None,
                offset: int | None) -> str:
    """The hover of the key at ``path`` whose (merged) value is ``value`` (None for a table header)."""
    doc = _schema_doc(path)
    text = value.value if value is not None and value.kind == "string" else None
    if path[0] == "config":
        hover = _config_key_hover(ctx, path, text, offset)
    elif path[0] in ("problem", "check"):
        hover = _problem_key_hover(ctx, path, doc, value, item, offset, text)
    else:
        hover = target_hover(text) if path == ("target", "hw") and text is not None else None
    return doc if hover is None else hover


def _config_key_hover(ctx: HoverContext, path: KeyPath, text: str | None, offset: int | None) -> str | None:
    """A ``[config]`` key's own hover: its knob's, the oneDNN line's or the portBLAS launcher's (None:
    the schema's documentation is all)."""
    if len(path) >= 2 and path[1] in KNOB_BY_KEY:
        return knob_hover(ctx, path[1])
    if path == ("config", "line") and text is not None:
        return line_hover(ctx, text, offset)
    if path == ("config", "portblas") and text is not None:
        return portblas_hover(ctx, offset)
    return None


def _problem_key_hover(ctx: HoverContext, path: KeyPath, doc: str, value: Value | None, item: Value | None,
                       offset: int | None, text: str | None) -> str | None:
    """A ``[problem]`` or ``[check]`` key's own hover (None: the schema's documentation is all)."""
    if path in (("problem", "shape"), ("check", "shape")) and text is not None:
        return shape_hover(ctx, value, offset, check=path[0] == "check")
    if path[0] == "problem" and len(path) == 2 and path[1] in TENSORS and text is not None:
        return layout_hover(ctx, path[1], value)
    if path == ("problem", "types") and text is not None:
        return join(doc, types_hover(ctx))
    if path == ("problem", "post_ops") and value is not None and value.kind == "array":
        return post_ops_hover(ctx, value, item)
    if path in (("problem", "op"), ("problem", "prop")):
        return join(doc, problem_key_hover(ctx))
    if path in (("problem", "scales"), ("problem", "zero_points"), ("problem", "fpmath")):
        return join(doc, decompression_hover(ctx))
    return None


def _table_hover(ctx: HoverContext, name: str) -> str:
    spec = _table_spec(name)
    if name == "config":
        return config_table_hover(ctx)
    hw = ctx.string(("target", "hw"))
    if name == "target" and hw is not None:
        return target_hover(hw)
    if spec is None:
        return ""
    doc = f"**[{name}]**: {spec.doc}"
    problem = ctx.problem
    if problem is None or name not in ("problem", "check"):
        return doc
    if name == "check":
        part = ctx.problem_part
        if part is None:
            return doc
        return join(doc, f"Check problem: {code(part.check.shape.canonical())}, seed {part.check_seed}, "
                         f"tolerance {part.check_tol if part.check_tol is not None else 'by destination type'}.")
    return join(doc, f"{problem.op} {problem.prop} {code(problem.shape.canonical())}, types "
                     f"{code(problem.types.canonical())}.", gemm_view(problem), flops_line(problem))


def _table_spec(name: str) -> TableSpec | None:
    return next((t for t in SCHEMA if t.name == name), None)


def _schema_doc(path: KeyPath) -> str:
    """The schema's documentation of the key at ``path`` (empty when the format has no such key)."""
    table = _table_spec(path[0] if len(path) > 1 else "")
    spec: TableSpec | KeySpec | None = table
    for name in path[1:] if len(path) > 1 else path:
        spec = spec.key(name) if isinstance(spec, (TableSpec, KeySpec)) and isinstance(name, str) else None
    if not isinstance(spec, KeySpec):
        return ""
    dotted = ".".join(map(str, path))
    lines = [f"**{code(dotted)}** ({spec.type_name}{', required' if spec.required else ''}): {spec.doc}"]
    if spec.allowed:
        lines.append(f"Allowed: {', '.join(code(a) for a in spec.allowed)}.")
    if spec.example:
        lines.append(f"Example: {code(spec.name + ' = ' + spec.example)}")
    return join(*lines)
