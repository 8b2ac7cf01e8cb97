"""Hovers of ``[problem]`` and ``[check]``: shapes, types, post-ops, op and prop.

A shape hover lists all 22 benchdnn fields of a convolution (or a GEMM's
batch, M, N, K) with where each value came from: written in the descriptor,
deduced by benchdnn's rules, a default, copied from another axis, or unused;
then the problem as a batched GEMM (B/M/N/K per the propagation kind) and
its operation count.
"""
from __future__ import annotations

from dataclasses import replace

from kdd.core.config import operands
from kdd.core.problem import (CONV_KEYS, OPS, Bias, Binary, ConvShape, Eltwise, Problem, Scale, Sum, detect_op,
                              parse_post_op, parse_shape)
# The descriptor scanner reports which keys were written and where; nothing public exposes that yet.
from kdd.core.problem.conv_shape import scan_entries

from .document import Value
from .hover_text import code, count, join, section, table

AXIS_WORDS = {"d": "depth", "h": "height", "w": "width"}
PARAM_WORDS = {"i": "input {}", "o": "output {}", "k": "kernel {}", "s": "stride along {}",
               "p": "padding at the start of {}", "d": "dilation along {} (0 = none)"}
# Which axis an omitted axis copies: 2D w from h, 3D h and w from d.
COPIED_FROM = {2: {"w": "h"}, 3: {"h": "d", "w": "d"}}
GEMM_MEANING = {"m": "rows of A and C", "n": "columns of B and C", "k": "reduction (columns of A, rows of B)"}
ROLE_WORDS = {"b": "batch", "m": "rows of C", "n": "columns of C", "k": "reduction"}


def key_meaning(key: str) -> str:
    """What a benchdnn convolution key stands for: ``kh`` -> "kernel height"."""
    fixed = {"g": "groups", "mb": "minibatch", "ic": "input channels (all groups)",
             "oc": "output channels (all groups)"}
    if key in fixed:
        return fixed[key]
    return PARAM_WORDS[key[0]].format(AXIS_WORDS[key[1]])


def conv_origins(shape: ConvShape, written: set[str]) -> dict[str, str]:
    """Where each of the 22 fields got its value (see the module doc)."""
    origins = {}
    for key in CONV_KEYS:
        param, axis = key[:-1], key[-1]
        if key in written:
            origins[key] = "written"
        elif key in ("g", "mb"):
            origins[key] = "default"
        elif axis in shape.unused_axes:
            origins[key] = f"unused ({shape.ndims}D problem)"
        elif not any(p + axis in written for p in "ik") and axis in COPIED_FROM.get(shape.ndims, {}):
            origins[key] = f"copied from {param}{COPIED_FROM[shape.ndims][axis]}"
        elif param == "o" or (param == "p" and f"o{axis}" in written):
            origins[key] = "deduced"
        else:
            origins[key] = "default"
    return origins


def _focus_line(text: str, given: dict, offset: int | None, origins: dict[str, str]) -> str:
    """The entry under the cursor, spelled out."""
    if offset is None:
        return ""
    for key, (value, start, end) in given.items():
        if start <= offset < end:
            return f"{code(text[start:end])}: {key_meaning(key)} = {value} ({origins[key]})"
    return ""


def _conv_fields(shape: ConvShape, text: str, offset: int | None) -> str:
    given, _ = scan_entries(text)
    origins = conv_origins(shape, set(given))
    rows = [(code(k), getattr(shape, k), origins[k], key_meaning(k)) for k in CONV_KEYS]
    ends = ", ".join(f"p{a}_r = {shape.axis(a).pr}" for a in shape.used_axes)
    return join(_focus_line(text, given, offset, origins),
                table(("key", "value", "from", "meaning"), rows),
                f"End padding (never written; it makes the output size exact): {ends}.")


def _gemm_fields(shape) -> str:
    rows = [(code(f"b{i}"), size, "written", f"batch dim {i}") for i, size in enumerate(shape.batch)]
    rows += [(code(k), getattr(shape, k), "written", GEMM_MEANING[k]) for k in "mnk"]
    return table(("dim", "value", "from", "meaning"), rows)


def gemm_view(problem: Problem) -> str:
    """The problem's B/M/N/K roles with their dims, and the A/B/C tensors."""
    dims = problem.gemm_dims()
    ops = operands(problem)
    rows = [(role.upper(), getattr(dims, role.upper()),
             " * ".join(f"{name}{size}" for name, size in getattr(dims, role)) or "-", ROLE_WORDS[role])
            for role in "bmnk"]
    a, b, c = ops.tensors
    return section(f"As a batched GEMM ({problem.op} {problem.prop}): C[{c}] += A[{a}] * B[{b}]",
                   table(("role", "size", "dims", "meaning"), rows))


# Counting a convolution's work walks every output position of each axis; past this many the
# count would stall the hover, so it is left out.
COUNTED_OUTPUTS = 1_000_000


def countable(problem: Problem) -> bool:
    """Whether the problem's work is cheap enough to count for a hover."""
    return problem.op != "conv" or all(problem.shape.axis(a).o <= COUNTED_OUTPUTS for a in problem.shape.used_axes)


def flops_line(problem: Problem) -> str:
    if not countable(problem):
        return f"Work: not counted (more than {COUNTED_OUTPUTS:,} outputs along an axis)."
    note = " (taps reading padding not counted, as benchdnn counts)" if problem.op == "conv" else ""
    flops = problem.flops()
    return f"Work: {count(flops, 'FLOP')} = {flops:,} operations, 2 per multiply-add{note}."


def shape_hover(ctx, value: Value, offset: int | None, check: bool) -> str:
    """Hover of ``[problem] shape`` (``check`` False) or ``[check] shape``."""
    text = value.value
    problem = ctx.problem
    op = problem.op if problem is not None else ctx.string(("problem", "op"))
    op = op if op in OPS else detect_op(text)
    try:
        shape = parse_shape(text, op)
    except ValueError as exc:
        return error_text(exc, text)
    fields = _conv_fields(shape, text, offset) if op == "conv" else _gemm_fields(shape)
    title = "check problem (reduced, run on save)" if check else f"{op} problem"
    head = f"**{title}** {code(shape.canonical())}"
    if op == "conv":
        head += f" ({shape.ndims}D)"
    if problem is None:
        return join(head, fields, "(the GEMM view needs a valid [problem])")
    this = replace(problem, shape=shape)
    return join(head, fields, gemm_view(this), flops_line(this), _check_ratio(problem, this) if check else "")


def _check_ratio(problem: Problem, check: Problem) -> str:
    if not (countable(problem) and countable(check)) or not problem.flops():
        return ""
    return f"The check runs {check.flops() / problem.flops():.3%} of the problem's work."


def error_text(exc: ValueError, text: str | None = None) -> str:
    """The message of a parse error, with the offending token of ``text`` when the error has a span."""
    message = getattr(exc, "message", str(exc))
    start, end = getattr(exc, "start", None), getattr(exc, "end", None)
    where = ""
    if text is not None and start is not None and end is not None and 0 <= start < end <= len(text):
        where = f" (at {code(text[start:end])}, characters {start}..{end})"
    return f"**error**: {message}{where}"


def types_hover(ctx) -> str:
    problem = ctx.problem
    if problem is None:
        return "(the types are shown once [problem] op and shape are valid)"
    ops = operands(problem)
    role = dict(zip(ops.tensors, "ABC"))
    def size(t):  # a 4-bit type's element is half a byte
        return "1/2" if t.scalar.is_packed else t.size
    rows = [(t, getattr(problem.types, t), role[t], size(getattr(problem.types, t))) for t in ("src", "wei", "dst")]
    rows.append(("acc", ops.acc, "accumulator", ops.acc.size))
    parts = [f"**data types** {code(problem.types.canonical())}",
             table(("tensor", "type", "GEMM operand", "bytes"), rows),
             "The accumulator is s32 when src and wei are both integers, f64 when either is f64, f32 otherwise "
             "(oneDNN's rule); post-ops compute in f32 (f64 for an f64 accumulator)."]
    target = ctx.target
    if target is not None:
        forms = target.shapes(a=ops.a, b=ops.b)
        listed = ", ".join(f"{code(s.spelling)} ({s.m}x{s.n}x{s.k})" for s in forms) or "none"
        parts.append(f"Instructions of {target.name} that multiply {ops.a} by {ops.b}: {listed}.")
    return join(*parts)


def _num(x: float) -> str:
    return f"{x:g}"


ELTWISE_FORMULAS = {
    "relu": lambda a, b: "max(x, 0)" if a == 0 else f"x if x > 0 else {_num(a)}*x",
    "gelu_tanh": lambda a, b: "0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x^3)))",
    "gelu_erf": lambda a, b: "0.5*x*(1 + erf(x/sqrt(2)))",
    "swish": lambda a, b: f"x*sigmoid({_num(a)}*x)",
    "tanh": lambda a, b: "tanh(x)",
    "logistic": lambda a, b: "1/(1 + exp(-x))",
    "elu": lambda a, b: f"x if x > 0 else {_num(a)}*(exp(x) - 1)",
    "linear": lambda a, b: f"{_num(a)}*x + {_num(b)}",
    "abs": lambda a, b: "|x|",
    "exp": lambda a, b: "exp(x)",
    "square": lambda a, b: "x^2",
    "sqrt": lambda a, b: "sqrt(x)",
}
POLICY_WORDS = {"per_tensor": "one value per destination element", "per_oc": "one value per output channel "
                "(GEMM: per column)", "common": "one value for all"}


def post_op_meaning(op) -> str:
    """What one post-op does to ``x``, the value computed so far."""
    if isinstance(op, Eltwise):
        return f"x = {ELTWISE_FORMULAS[op.alg](op.alpha, op.beta)}"
    if isinstance(op, Binary):
        return f"x = {op.alg}(x, src1) with src1 of type {op.dt}, {POLICY_WORDS[op.policy]}"
    if isinstance(op, Sum):
        return f"x = x + {_num(op.scale)}*dst: accumulates onto the destination's previous contents"
    if isinstance(op, Bias):
        return f"x = x + bias[oc], a {op.dt} vector over output channels (GEMM: columns)"
    if isinstance(op, Scale):
        return f"x = {_num(op.value)}*x, a common output scale"
    raise TypeError(f"not a post-op: {op!r}")


def post_ops_hover(ctx, value: Value, item: Value | None) -> str:
    """The chain of ``post_ops``; ``item`` is the hovered item, if any."""
    rows, errors = [], []
    for i, it in enumerate(value.items):
        if it.kind != "string":
            continue
        try:
            op = parse_post_op(it.value)
        except ValueError as exc:
            errors.append(f"item {i}: {error_text(exc, it.value)}")
            continue
        mark = " (here)" if it is item else ""
        rows.append((f"{i}{mark}", code(op.canonical()), post_op_meaning(op)))
    acc = ctx.problem.types.acc if ctx.problem is not None else "accumulator"
    dst = ctx.problem.types.dst if ctx.problem is not None else "destination"
    return join("**post-ops**, applied in order to the result x (in the "
                f"{acc} accumulator) before it is converted to the {dst} destination",
                table(("#", "post-op", "meaning"), rows) if rows else "(none)", *errors)


def decompression_hover(ctx) -> str:
    """``scales``, ``zero_points``, ``fpmath``: the tensors and the per-weight arithmetic they describe."""
    problem = ctx.problem
    d = problem.decompression if problem is not None else None
    if d is None:
        return ""
    dims = problem.gemm_dims()
    conv = problem.op == "conv"
    rows, cols = d.groups(dims.K, problem.shape.oc if conv else dims.N)
    at = "0, n" if d.per_oc else f"k / {d.group_k}, n / {d.group_n}"
    zp = f" - zp[{at}]" if d.zero_point is not None else ""
    tensors = [(code("wei_scales"), str(d.scale), f"{rows} x {cols}")]
    if d.zero_point is not None:
        tensors.append((code("wei_zero_points"), str(d.zero_point), f"{rows} x {cols}"))
    shared = "n is the output channel over every group, g * OC/g + oc." if conv else \
        "per_ocic masks K and N only, as benchdnn's: the batch shares them." if dims.b else ""
    return join(section(f"Weight decompression: B[k, n] = (wei[k, n]{zp}) * scale[{at}] "
                        f"in {d.math}", table(("argument", "type", "dims (row-major, N contiguous)"), tensors)),
                shared,
                f"Each thread converts its {problem.types.wei} B tile in registers (the `decompress` knob: how).")


def problem_key_hover(ctx) -> str:
    """``op`` and ``prop``: the GEMM the problem becomes."""
    if ctx.problem is None:
        return ""
    return join(gemm_view(ctx.problem), flops_line(ctx.problem))
