"""``kdd check FILE``: build a kernel config for its ``[check]`` shape, run it in the interpreter, compare.

The kernel is built from the knobs written in FILE, with the omitted ones
chosen by the default heuristic for the check shape (as ``kdd compile
--shape`` does), run by the numpy interpreter on random inputs and compared
with the float64 reference (protocol and tolerances: ``kdd.core.interp.check``).
``--shape DESC`` checks another shape. ``--bisect`` checks the IR after the
build and after every optimization pass and names the first stage whose IR
computes a wrong result. Exit status 0 when the outputs match,
1 when they do not (or the kernel breaks the IR semantics while running), 2
when FILE cannot be read or the config is invalid, 3 when a pass fails
under ``--bisect`` (a bug in kdd); diagnostics are printed as
``FILE:LINE:COL: severity: message``.
"""
from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import replace
from pathlib import Path

from kdd.core.builder import BuildError, build_kernel
from kdd.core.interp import InterpError
from kdd.core.interp.check import CheckResult, check_kernel
from kdd.core.passes import PassError
from kdd.core.problem import ProblemError, parse_shape
from kdd.core.spec import Severity, load_spec
from kdd.server.cli import passes_emit

PASS, MISMATCH, INVALID, INTERNAL = 0, 1, 2, 3


def _where(path: str, rng) -> str:
    return f"{path}:{rng.start.line + 1}:{rng.start.character + 1}"


def _print_diagnostics(path: str, diagnostics) -> None:
    for d in diagnostics:
        print(f"{_where(path, d.range)}: {d.severity.name.lower()}: {d.message}", file=sys.stderr)


def _knob_range(message: str, sources: dict):
    """The range of the first written knob a builder message names (``fma=dpas ...``)."""
    for knob in re.findall(r"[a-z_]+", message):
        if knob in sources:
            return sources[knob]
    return None


def _invalid(args, message: str, code: int = INVALID) -> int:
    if args.json:
        print(json.dumps({"ok": False, "error": message}))
    else:
        print(message, file=sys.stderr)
    return code


def _report(args, result: CheckResult, error: str | None = None) -> int:
    if args.json:
        out = result.to_dict()
        if error is not None:
            out["error"] = error
        print(json.dumps(out))
    elif error is not None:
        print(f"FAIL {result.shape}: the kernel broke the IR semantics while running:\n{error}")
    else:
        verdict = "ok" if result.ok else "FAIL"
        line = (f"{verdict} {result.shape}: rel_err {result.rel_err:.3g} (tol {result.tol:g}), "
                f"{result.ms:.0f} ms")
        if result.unwritten:
            line += f"; {result.unwritten} element(s) of {result.tensor} never written"
        if result.first_bad_index is not None:
            line += f"; first bad {result.tensor}{list(result.first_bad_index)}"
        print(line)
    return PASS if result.ok else MISMATCH


def run(args) -> int:
    try:
        text = Path(args.file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return _invalid(args, f"kdd check: error: cannot read {args.file}: "
                              f"{getattr(exc, 'strerror', None) or exc}")
    spec, diagnostics = load_spec(text, args.file)
    _print_diagnostics(args.file, diagnostics)
    errors = [d for d in diagnostics if d.severity == Severity.ERROR]
    if spec is None or errors:
        return _invalid(args, f"kdd check: {len(errors)} error(s) in {args.file}")
    problem = spec.check
    if args.shape:
        try:
            problem = replace(problem, shape=parse_shape(args.shape, problem.op))
        except (ProblemError, ValueError) as exc:
            return _invalid(args, f"kdd check: error: --shape {args.shape!r}: {exc}")
    try:
        kernel = build_kernel(problem, spec.user_config, spec.target)
    except BuildError as exc:
        rng = _knob_range(str(exc), spec.source_map())
        where = _where(args.file, rng) if rng is not None else args.file
        return _invalid(args, f"{where}: error: cannot build the kernel for {problem.shape.canonical()}: {exc}")
    if args.bisect:
        try:
            found = passes_emit.bisect_kernel(kernel, problem, seed=spec.check_seed, tol=spec.check_tol)
        except PassError as exc:
            return _invalid(args, f"kdd check: internal error (please report it): {exc}", INTERNAL)
        if args.json:
            print(json.dumps(found.to_dict()))
        else:
            print(found.render(), end="")
        return PASS if found.first_bad is None else MISMATCH
    try:
        result = check_kernel(kernel, problem, seed=spec.check_seed, tol=spec.check_tol)
    except InterpError as exc:
        failed = CheckResult(False, math.inf, math.nan, None, problem.shape.canonical(), 0.0)
        return _report(args, failed, str(exc))
    return _report(args, result)


def register(sub) -> None:
    p = sub.add_parser("check", help="run a kernel config in the interpreter and compare with a reference",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("file", help="a *.kernel.toml file")
    p.add_argument("--shape", help="check this problem shape instead of [check] shape (benchdnn descriptor)")
    p.add_argument("--bisect", action="store_true",
                   help="check the IR after the build and after every pass; name the first wrong stage")
    p.add_argument("--json", action="store_true",
                   help='print {"ok", "rel_err", "tol", "first_bad_index", "shape", "ms"} as JSON')
    p.set_defaults(run=run)
