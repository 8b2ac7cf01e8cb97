"""``kdd compile FILE``: build a kernel config's IR and print it.

``--emit ir`` (the default) prints the IR skeleton the builder makes;
``--emit passes`` runs the optimization pipeline and prints a table of the
passes and the final IR, ``ir:PASS`` the IR after one pass and
``diff:PASS`` what one pass changed (items combine, comma-separated). With
``--json`` the output is one JSON object: the problem, target, config line,
kernel ABI and the IR as text plus a line map (for every printed line the
IR node's kind and origin: the builder step, the config knob behind it and
that knob's range in FILE). ``--shape DESC`` compiles the same config for
another problem shape (the defaults are re-resolved around the written
knobs). Exit status 0 on success, 2 when FILE cannot be read or the config
is invalid (the diagnostics are printed: on stderr, or in the JSON).
"""
from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

from kdd.core.builder import BuildError, Origin, build_kernel
from kdd.core.config.defaults import resolve_config
from kdd.core.ir.printer import print_ir
from kdd.core.passes import PassError
from kdd.core.problem import ProblemError, parse_shape
from kdd.core.spec import Severity, load_spec
from kdd.server.cli import passes_emit

EMITS = ("ir",)


def _range(r) -> dict:
    return {"start": {"line": r.start.line, "character": r.start.character},
            "end": {"line": r.end.line, "character": r.end.character}}


def _diagnostic(d) -> dict:
    return {"range": _range(d.range), "severity": d.severity.name.lower(), "message": d.message,
            "code": d.code}


def _fail(args, message: str, diagnostics: list[dict], code: int = 2) -> int:
    if args.json:
        print(json.dumps({"file": args.file, "ok": False, "error": message, "diagnostics": diagnostics}, indent=1))
    else:
        print(f"kdd compile: error: {message}", file=sys.stderr)
        for d in diagnostics:
            start = d["range"]["start"]
            print(f"{args.file}:{start['line'] + 1}:{start['character'] + 1}: {d['severity']}: "
                  f"{d['message']} [{d['code']}]", file=sys.stderr)
    return code


def line_map(printed, sources: dict) -> list[dict]:
    """For each printed line: the node kind and origin (with the knob's range in the file)."""
    out = []
    for i, node in enumerate(printed.nodes):
        entry: dict = {"line": i, "kind": type(node).__name__}
        origin = node.origin
        if isinstance(origin, Origin):
            entry["origin"] = origin.to_dict()
            if origin.knob in sources:
                entry["origin"]["range"] = _range(sources[origin.knob])
        out.append(entry)
    return out


def run(args) -> int:
    emits = [e.strip() for e in args.emit.split(",") if e.strip()]
    unknown = [e for e in emits if e not in EMITS and not passes_emit.is_pass_emit(e)]
    if unknown or not emits:
        return _fail(args, f"cannot emit {', '.join(unknown) or repr(args.emit)} "
                           f"(available: {', '.join(EMITS)}, {passes_emit.EMIT_HELP})", [])
    bad_pass = passes_emit.check_pass_emits(args.emit)
    if bad_pass is not None:
        return _fail(args, f"--emit: {bad_pass}", [])
    pass_items = [e for e in emits if passes_emit.is_pass_emit(e)]
    try:
        text = Path(args.file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return _fail(args, f"cannot read {args.file}: {getattr(exc, 'strerror', None) or exc}", [])
    spec, diagnostics = load_spec(text, args.file)
    diags = [_diagnostic(d) for d in diagnostics]
    errors = [d for d in diagnostics if d.severity == Severity.ERROR]
    if spec is None or errors:
        return _fail(args, f"{len(errors)} error(s) in {args.file}", diags)
    problem, config = spec.problem, spec.config
    if args.shape:
        try:
            problem = replace(problem, shape=parse_shape(args.shape, problem.op))
        except (ProblemError, ValueError) as exc:
            return _fail(args, f"--shape {args.shape!r}: {exc}", diags)
        config = resolve_config(problem, spec.target, spec.user_config)
    try:
        kernel = build_kernel(problem, config, spec.target)
    except BuildError as exc:
        return _fail(args, f"cannot build the kernel: {exc}", diags)
    printed = print_ir(kernel.body)
    try:
        if not args.json:
            passes = passes_emit.pass_emits_text(kernel, pass_items)
            print((printed.text if "ir" in emits else "") + passes, end="")
            return 0
        passes = passes_emit.pass_emits_json(kernel, pass_items)
    except PassError as exc:
        return _fail(args, f"internal error (please report it): {exc}", diags, code=3)
    out = {
        "file": args.file, "ok": True, "problem": {"op": problem.op, "prop": problem.prop,
                                                   "shape": problem.shape.canonical(),
                                                   "types": problem.types.canonical()},
        "target": spec.target.name, "config": config.line(), "kernel": kernel.to_dict(),
        "diagnostics": diags,
    }
    if "ir" in emits:
        out["ir"] = {"text": printed.text, "lines": line_map(printed, spec.source_map())}
    out.update(passes)
    print(json.dumps(out, indent=1))
    return 0


def register(sub) -> None:
    p = sub.add_parser("compile", help="build a kernel config and print its IR",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("file", help="a *.kernel.toml file")
    p.add_argument("--emit", default="ir", help=f"what to print, comma-separated (available: ir, {passes_emit.EMIT_HELP})")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--shape", help="compile for this problem shape instead (benchdnn descriptor)")
    p.set_defaults(run=run)
