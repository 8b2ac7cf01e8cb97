"""``kdd portblas HEADER``: a portBLAS backend header's launchers and the conditions that select them.

Without ``--shape`` it lists every ``return`` of the header's ``_gemm`` overloads: the launcher's
template arguments (or ``return _dependencies``, a case the backend skips) with the overload's type
condition and every ``if``/``else``/``#ifdef`` on its path, as written. With ``--shape DESC --types T``
it runs the header's dispatch for that call and writes the kernel config it picks: the problem in
portBLAS's column-major layouts, ``[config] portblas`` the launcher's arguments (a header's local
constants, such as ``wg_size``, replaced by their values). Exit 2 for a header that cannot be read,
an argument that is invalid, a call no launcher serves, or a launcher kdd cannot map for the call (the
config is still written, the reason on stderr).
"""
from __future__ import annotations

import sys
from pathlib import Path

DEFAULT_DEFINES = ("GEMM_TALL_SKINNY_SUPPORT",)     # portBLAS's CMake default (ON)
MAX_HEADER_BYTES = 1 << 20


def _listing(name: str, leaves) -> str:
    overloads = list(dict.fromkeys(leaf.overload for leaf in leaves))
    launchers = sum(leaf.args is not None for leaf in leaves)
    out = [f"{name}: {launchers} launchers, {len(leaves) - launchers} skips in {len(overloads)} _gemm overloads"]
    for overload in overloads:
        out.append(f"\n_gemm enabled if {overload}")
        for leaf in (x for x in leaves if x.overload == overload):
            out.append(f"  #{leaf.index} (line {leaf.line})")
            for guard in leaf.guards:
                out.append(f"      {'' if guard.macro else 'if '}{guard}")
            for const, expr in leaf.constants:
                out.append(f"      constexpr {const} = {expr}")
            out.append(f"      Gemm_Launcher<{leaf.args}>" if leaf.args is not None else
                       "      return _dependencies (no launcher)")
    return "\n".join(out)


def _target_for(path: str, given: str | None) -> str | None:
    if given:
        return given
    stem = Path(path).stem
    return "sm_90" if "nvidia" in stem else "xehpg" if "intel" in stem else None


def _call(args):
    """(problem, Call) of the command line's call; a ValueError says which argument is wrong."""
    from kdd.core.config.portblas.binding import portblas_tags
    from kdd.core.config.portblas.header import Call
    from kdd.core.problem import problem_from_text

    trans = args.trans.upper()
    if len(trans) != 2 or set(trans) - {"N", "T"}:
        raise ValueError(f"--trans {args.trans!r}: two letters N or T (A's, then B's), e.g. NN, NT")
    probe = problem_from_text(args.shape, op="gemm", types=args.types)
    dims = probe.gemm_dims()
    tags = portblas_tags(len(dims.b), trans[0] == "T", trans[1] == "T", args.batch_type == "interleaved")
    post_ops = ([f"scale:{args.alpha:g}"] if args.alpha != 1 else []) + ([f"sum:{args.beta:g}"] if args.beta else [])
    problem = problem_from_text(args.shape, op="gemm", types=args.types, tags=tags, post_ops=post_ops)
    batch = 1
    for _, size in dims.b:
        batch *= size
    t = problem.types
    defines = (set(DEFAULT_DEFINES) | set(args.define)) - set(args.undef)
    env = {"SB_ENABLE_JOINT_MATRIX": "1"} if "SB_ENABLE_JOINT_MATRIX" in defines else {}
    call = Call(dims.m[0][1], dims.n[0][1], dims.k[0][1], batch, args.batch_type, trans[0] == "T",
                trans[1] == "T", args.beta == 0, (str(t.src), str(t.wei), str(t.dst)), frozenset(defines), env)
    return problem, call


def run(args) -> int:
    from kdd.core.config.portblas import read_portblas
    from kdd.core.config.portblas.header import bound_args, dispatch, read_header
    from kdd.core.problem import ProblemError
    from kdd.core.problem.document import kernel_document
    from kdd.core.targets import TARGETS

    path = Path(args.header)
    try:
        if not path.is_file() or path.stat().st_size > MAX_HEADER_BYTES:
            raise OSError("not a regular file under 1 MiB")
        text = path.read_text(encoding="utf-8")
        leaves = read_header(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        print(f"kdd portblas: error: {args.header}: {exc}", file=sys.stderr)
        return 2
    if not leaves:
        print(f"kdd portblas: error: {args.header}: no _gemm overload returning a Gemm_Launcher",
              file=sys.stderr)
        return 2
    if args.shape is None:
        print(_listing(path.name, leaves))
        return 0
    hw = _target_for(args.header, args.target)
    if hw not in TARGETS:
        print(f"kdd portblas: error: --target {hw!r}: one of {', '.join(TARGETS)} (the header's name says "
              f"neither intel nor nvidia)" if hw else "kdd portblas: error: --target is needed for this header",
              file=sys.stderr)
        return 2
    try:
        problem, call = _call(args)
        leaf = dispatch(leaves, call)
    except (ProblemError, ValueError) as exc:
        print(f"kdd portblas: error: {exc}", file=sys.stderr)
        return 2
    if leaf is None or leaf.args is None:
        why = "no overload or path of the header serves it" if leaf is None else \
            f"the header returns without a launcher (#{leaf.index}, line {leaf.line})"
        print(f"kdd portblas: error: {args.shape} {args.types}: {why}", file=sys.stderr)
        return 2
    launcher = bound_args(leaf, call)
    mapping = read_portblas(launcher, problem, TARGETS[hw])
    for issue in mapping.issues:
        print(f"kdd portblas: {issue.severity}: {issue.param}: {issue.message}", file=sys.stderr)
    head = [f"# portBLAS {path.name}, launcher #{leaf.index} (line {leaf.line}) of the call {args.shape} "
            f"{problem.types.canonical()} trans {args.trans.upper()} alpha {args.alpha:g} beta {args.beta:g} "
            f"({args.batch_type} batch); its path:", f"#   _gemm enabled if {leaf.overload}"]
    head += [f"#   {'' if g.macro else 'if '}{g}" for g in leaf.guards]
    head += [f"#   constexpr {name} = {expr} (= {call.names(leaf.constants)[name]})" for name, expr in leaf.constants]
    doc = "\n".join(head) + "\n" + kernel_document(problem, hw, portblas=launcher)
    if args.out:
        try:
            Path(args.out).write_text(doc, encoding="utf-8")
        except OSError as exc:
            print(f"kdd portblas: error: --out {args.out}: {exc}", file=sys.stderr)
            return 2
    else:
        sys.stdout.write(doc)
    # the config is what portBLAS runs, written either way; one kdd cannot build is no success
    return 2 if any(issue.severity == "error" for issue in mapping.issues) else 0


def register(sub) -> None:
    p = sub.add_parser("portblas", help="list a portBLAS backend header's GEMM launchers, or write the config "
                                        "its dispatch picks for a problem", description=__doc__.split("\n\n")[1])
    p.add_argument("header", help="a backend header, e.g. portBLAS's src/interface/blas3/backend/intel_gpu.hpp")
    p.add_argument("--shape", help='the GEMM: "m512n512k256", "12x128x64:12x64x128" (batch dims first)')
    p.add_argument("--types", default="f32", help="A:B:C element types (default f32), e.g. f16")
    p.add_argument("--trans", default="NN", help="portBLAS's transA transB, N or T each (default NN)")
    p.add_argument("--alpha", type=float, default=1.0, help="alpha (default 1)")
    p.add_argument("--beta", type=float, default=0.0, help="beta (default 0: is_beta_zero)")
    p.add_argument("--batch-type", choices=("strided", "interleaved"), default="strided",
                   help="gemm_batch_type_t of a batched call (default strided)")
    p.add_argument("--define", action="append", default=[], metavar="MACRO",
                   help="a macro the build defines (GEMM_TALL_SKINNY_SUPPORT is, by portBLAS's default; "
                        "SB_ENABLE_JOINT_MATRIX also sets that environment variable to 1)")
    p.add_argument("--undef", action="append", default=[], metavar="MACRO", help="a macro the build leaves out")
    p.add_argument("--target", choices=("xehpg", "xehpc", "sm_90"),
                   help="the kdd target (default: sm_90 for an nvidia header, xehpg for an intel one)")
    p.add_argument("--out", help="write the config here instead of to stdout")
    p.set_defaults(run=run)
