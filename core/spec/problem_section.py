"""``[problem]`` and ``[check]`` of a loaded document: the :class:`Problem`, its layouts, the check problem.

Every field is read with the parser of :mod:`kdd.core.problem` (or
:func:`kdd.core.layout.parse_layout` for tags); their errors carry the span of
the bad token inside the string, which becomes the diagnostic's range. The
problem is then assembled in steps (shape and types, then tags, then post-ops)
so an inconsistency is reported on the key that introduced it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, TypeVar

from kdd.core.layout import parse_layout
from kdd.core.problem import OPS, PROPS, TENSORS, FrozenMap, Problem, parse_data_types, parse_post_op, parse_shape
from kdd.core.problem.decompression import parse_decompression, parse_fpmath, parse_quantization
from kdd.core.problem.reduced import MAX_CHECK_MACS, REDUCED_MACS, check_macs, reduce_problem

from .diagnostics import Severity
from .extends import Chain, Located
from .reporter import Reporter

CODE = "problem"
BAD_VALUE = "bad-value"
T = TypeVar("T")


@dataclass(frozen=True)
class ProblemPart:
    """What ``[problem]`` and ``[check]`` describe."""

    problem: Problem
    layouts: FrozenMap  # tensor -> Layout, for tensors with a written tag
    check: Problem
    check_seed: int
    check_tol: float | None
    check_stage: str | None = None  # None: the deepest artifact this machine runs (the code)


def _text(chain: Chain, path: tuple[str, str]) -> tuple[Located | None, str | None]:
    """The located entry at ``path`` and its string value (None when absent or not a string)."""
    located = chain.get(path)
    if located is None or located.entry.value.kind != "string":
        return located, None
    return located, located.entry.value.value


def _parsed(report: Reporter, located: Located, parse: Callable[[], T], value=None) -> T | None:
    """``parse()``, or None after reporting its error on the value (inside the string when it has a span)."""
    try:
        return parse()
    except ValueError as exc:
        span = (getattr(exc, "start", None), getattr(exc, "end", None))
        report.on_value(located, getattr(exc, "message", str(exc)), CODE, value=value, span=span)
        return None


def build_problem(chain: Chain, report: Reporter) -> ProblemPart | None:
    """The problem part, or None when something needed is missing or wrong (all of it reported)."""
    base = _base_problem(chain, report)
    if base is None:
        return None
    problem, post_ops, shape_at = base
    laid_out = _with_layouts(chain, report, problem, post_ops)
    if laid_out is None:
        return None
    problem, layouts = laid_out
    check = _check_of(chain, report, problem, shape_at)
    if check is None:
        return None
    seed, tol = _check_number(chain, report, "seed"), _check_number(chain, report, "tol")
    if seed is _BAD or tol is _BAD:
        return None
    _, stage = _text(chain, ("check", "stage"))  # the schema checked its value
    return ProblemPart(problem, FrozenMap(layouts), check, 0 if seed is None else seed,
                       None if tol is None else float(tol), stage)


def _base_problem(chain: Chain, report: Reporter) -> tuple[Problem, tuple, Located | None] | None:
    """The problem of ``op``, ``prop``, ``shape`` and ``types``, the post-ops written (not yet in it, as
    the layout tags are not) and where its shape is written."""
    op_at, op = _text(chain, ("problem", "op"))
    prop_at, prop = _text(chain, ("problem", "prop"))
    shape_at, shape_text = _text(chain, ("problem", "shape"))
    types_at, types_text = _text(chain, ("problem", "types"))
    if op not in OPS or shape_text is None or (prop_at is not None and prop not in PROPS) or \
            (types_at is not None and types_text is None):
        return None  # missing, misspelled or mistyped: the schema checks reported it
    prop = prop or "fwd"
    shape = _parsed(report, shape_at, lambda: parse_shape(shape_text, op))
    types = _parsed(report, types_at, lambda: parse_data_types(types_text)) if types_at else parse_data_types("f32")
    post_ops = _post_ops(chain, report)
    if shape is None or types is None or post_ops is None:
        return None
    problem = _parsed(report, prop_at or op_at, lambda: Problem(op, prop, shape, types))
    return None if problem is None else (problem, post_ops, shape_at)


def _with_layouts(chain: Chain, report: Reporter, problem: Problem, post_ops) -> tuple[Problem, dict] | None:
    """``problem`` with its written layout tags and ``post_ops``, and the layout of each tagged tensor."""
    layouts, tags = {}, {}
    for tensor in TENSORS:
        tag_at, tag = _text(chain, ("problem", tensor))
        if tag_at is None:
            continue
        if tag is None:
            return None
        if tag == "any":  # oneDNN's format_tag::any, as when the key is left out: the kernel chooses
            continue
        layout = _parsed(report, tag_at, lambda: _layouts(problem, tensor, tag))
        if layout is None:
            return None
        layouts[tensor] = layout
        problem = _parsed(report, tag_at, lambda: replace(problem, tags={**tags, tensor: tag}))
        if problem is None:
            return None
        tags[tensor] = tag
    if post_ops:
        problem = _parsed(report, chain.get(("problem", "post_ops")), lambda: replace(problem, post_ops=post_ops))
        if problem is None:
            return None
    problem = _decompressed(chain, report, problem)
    if problem is None:
        return None
    return problem, layouts


def _check_of(chain: Chain, report: Reporter, problem: Problem, shape_at: Located | None) -> Problem | None:
    """The ``[check]`` problem (``problem`` itself without a check shape), when both are addressable and the
    layout tags fit the check shape too."""
    check = _check_problem(chain, report, problem, shape_at)
    if check is None or not _addressable(report, shape_at, problem):
        return None
    check_at = chain.get(("check", "shape"))
    if check is not problem and (not _addressable(report, check_at, check) or
                                 not _check_layouts(report, check_at, check)):
        return None
    return check


_BAD = object()
MAX_SEED = 2 ** 63 - 1


def _check_number(chain: Chain, report: Reporter, key: str):
    """``[check] seed`` or ``tol``: None when absent or mistyped (the schema said so), _BAD when out of range.

    A seed is a non-negative integer below 2**63 (numpy's generators take no
    other); a tolerance is a finite number >= 0 (NaN would accept everything).
    """
    located = chain.get(("check", key))
    if located is None or located.entry.value.kind not in ("integer", "float"):
        return None
    value = located.entry.value.value
    if key == "seed":
        ok = located.entry.value.kind == "integer" and 0 <= value <= MAX_SEED
        expected = f"an integer from 0 to {MAX_SEED}"
    else:
        ok = math.isfinite(value) and value >= 0
        expected = "a finite number >= 0"
    if ok:
        return value
    report.on_value(located, f"`{key}` must be {expected}, got {located.entry.value.value}", BAD_VALUE)
    return _BAD


def _layouts(problem: Problem, tensor: str, tag: str):
    """The layout of ``tensor`` under ``tag`` over ``problem``'s dims (ValueError when they do not fit)."""
    dims = problem.tensor_dims(tensor)
    return parse_layout(tag, [s for _, s in dims], getattr(problem.types, tensor), dim_names=[n for n, _ in dims])


def _check_layouts(report: Reporter, check_at: Located, check: Problem) -> bool:
    """Whether every written layout tag fits the ``[check]`` shape too (else reported on that shape)."""
    for tensor in TENSORS:
        tag = check.tags[tensor]
        if tag == "any":
            continue
        try:
            _layouts(check, tensor, tag)
        except ValueError as exc:
            report.on_value(check_at, f"{tensor} = '{tag}' does not fit this shape: "
                                      f"{getattr(exc, 'message', str(exc))}", CODE)
            return False
    return True


def _addressable(report: Reporter, shape_at: Located, problem: Problem) -> bool:
    """Whether 32-bit index arithmetic reaches every tensor of ``problem`` (else reported on the shape)."""
    message = problem.index_width_error()
    if message is not None:
        report.on_value(shape_at, message, CODE)
    return message is None


def _decompressed(chain: Chain, report: Reporter, problem: Problem) -> Problem | None:
    """``problem`` with the weight decompression of ``scales``, ``zero_points`` and ``fpmath`` (itself when
    none is written; None after reporting an error on the key that caused it)."""
    at = {key: _text(chain, ("problem", key)) for key in ("scales", "zero_points", "fpmath")}
    if all(located is None for located, _ in at.values()):
        if problem.types.wei.scalar.is_packed:
            report.on_value(chain.get(("problem", "types")), f"weights of type {problem.types.wei}: 4-bit weights "
                            "are decompressed in registers, which needs scales and fpmath (e.g. scales = "
                            "'wei:per_ocic:f16:128x1', fpmath = 'f16:true')", CODE)
            return None
        return problem
    if any(located is not None and text is None for located, text in at.values()):
        return None  # mistyped: the schema reported it
    scales_at, scales = at["scales"]
    if scales_at is None:
        located = at["zero_points"][0] or at["fpmath"][0]
        report.on_value(located, "zero_points and fpmath describe weight decompression: write scales too "
                                 "(e.g. 'wei:per_ocic:f16:128x1')", CODE)
        return None
    zp_at, zps = at["zero_points"]
    fp_at, fpmath = at["fpmath"]
    # each value alone first, so an error inside one points into it; then how they combine
    if _parsed(report, scales_at, lambda: parse_quantization(scales, "scales")) is None or \
            (zp_at is not None and _parsed(report, zp_at, lambda: parse_quantization(zps, "zero points")) is None) \
            or (fp_at is not None and _parsed(report, fp_at, lambda: parse_fpmath(fpmath)) is None):
        return None
    d = _parsed(report, zp_at or scales_at, lambda: parse_decompression(scales, zps, fpmath))
    if d is None:
        return None
    return _parsed(report, scales_at, lambda: replace(problem, decompression=d))


def _post_ops(chain: Chain, report: Reporter) -> tuple | None:
    located = chain.get(("problem", "post_ops"))
    if located is None:
        return ()
    if located.entry.value.kind != "array":
        return None
    ops = []
    for item in located.entry.value.items:
        if item.kind != "string":
            return None
        op = _parsed(report, located, lambda text=item.value: parse_post_op(text), value=item)
        if op is None:
            return None
        ops.append(op)
    return tuple(ops)


def _check_problem(chain: Chain, report: Reporter, problem: Problem, shape_at: Located) -> Problem | None:
    """The problem with ``[check] shape``; without one, the problem itself, or reduced to check size (said on
    the shape) when it is over the interpreter's bound.

    A check problem over the interpreter's bound is a warning: the check
    refuses it unless asked to run it anyway.
    """
    located, text = _text(chain, ("check", "shape"))
    if located is None:
        reduction = reduce_problem(problem)
        if not reduction.reduced:
            return problem
        report.on_value(shape_at, f"no [check] shape: this problem has {check_macs(problem)} multiply-adds, more than the "
                                  f"{REDUCED_MACS} an on-save check runs; the check runs it at a reduced shape that "
                                  f"keeps the config's tiles (kdd check lists what it reduced)", CODE,
                        severity=Severity.INFORMATION)
        return replace(problem, shape=reduction.shape)
    if text is None:
        return None
    shape = _parsed(report, located, lambda: parse_shape(text, problem.op))
    if shape is None:
        return None
    check = _parsed(report, located, lambda: replace(problem, shape=shape))
    if check is not None and check_macs(check) > MAX_CHECK_MACS:
        report.on_value(located, f"the check would interpret {check_macs(check)} multiply-adds, more than the "
                                 f"bound of {MAX_CHECK_MACS}: it is refused unless asked for", CODE,
                        severity=Severity.WARNING)
    return check
