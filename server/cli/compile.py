"""``kdd compile FILE``: build a kernel config, run its passes, print what ``--emit`` asks for.

``--emit`` items, comma-separated, printed in order: ``ir`` (the default: the
IR skeleton the builder makes), ``passes`` (a table of the passes and the
final IR), ``ir:PASS`` (the IR after one pass; ``ir:build``), ``diff:PASS``
(what one pass changed), ``stats`` (registers and operation counts),
``asm`` (the target's assembly with live registers per line: Xe assembly
checked by iga64, or PTX checked by ptxas on sm_90), ``ptx`` and ``sass``
(sm_90: the plain PTX module, as ptxas assembles it, and the SASS with
nvdisasm's live registers per instruction), ``check`` (the correctness check). ``--verify`` runs the IR verifier
(``core/passes/verify``) on the builder's IR and after every pass and exits
with 3 when it finds a problem. ``--json`` prints one JSON object (see
``protocol/compile.schema.json``). ``--shape DESC`` and ``--target NAME``
compile the same config for another problem shape or target (the defaults
are re-resolved around the written knobs). Warnings are printed on stderr
as ``FILE:LINE:COL: severity: message [code]``. A repeated compile of an
unchanged config is answered from the on-disk cache the daemons share
(``$KDD_CACHE_DIR``, else ``~/.cache/kdd``); ``--no-cache`` compiles from
scratch. Exit status 0 on success, 2
when FILE cannot be read or the config is invalid or cannot be built, or the
code generator cannot generate its code (out of registers, an operation it
cannot lower: an error whatever ``--emit`` asks for, at the knob responsible;
what was asked for is printed first), 3 for a failure inside kdd (named in the
message).
"""
from __future__ import annotations

import sys

from . import engine_call, render


def run(args) -> int:
    emit = f"{args.emit},verify" if args.verify else args.emit
    params = {"path": args.file, "emit": emit}
    for name in ("shape", "target"):
        if getattr(args, name) is not None:
            params[name] = getattr(args, name)
    result = engine_call.call(args, "kdd/compile", params)
    unsound = 3 if not result.get("verify", {"ok": True})["ok"] else 0
    if args.json:
        import json  # only --json prints it: a plain compile spares the import

        print(json.dumps(result, indent=1))
        return unsound if result["ok"] else (3 if result["failure"]["internal"] else 2)
    items = [e.strip() for e in emit.split(",") if e.strip()]
    if not result["ok"]:
        if "kernel" in result:      # built, but the code generator failed: what was asked for, then why
            print(render.compile_text(result, [i for i in items if render.emitted(result, i)]), end="")
        return render.print_failure("compile", result)
    render.print_diagnostics(args.file, result["diagnostics"])
    assembler = (result.get("asm") or result.get("ptx") or {}).get("assembler", {})
    for message in assembler.get("messages", []):
        print(f"{assembler.get('tool')}: {message}", file=sys.stderr)
    print(render.compile_text(result, items), end="")
    return unsound


def register(sub) -> None:
    p = sub.add_parser("compile", help="build a kernel config and print its IR, passes or assembly",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("file", help="a *.kernel.toml file")
    p.add_argument("--emit", default="ir", help="what to print, comma-separated (ir, passes, ir:PASS, diff:PASS, "
                                                "stats, asm, ptx, sass, check, verify)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--verify", action="store_true",
                   help="run the IR verifier on the builder's IR and after every pass (exit 3 if it finds a problem)")
    p.add_argument("--shape", help="compile for this problem shape instead (benchdnn descriptor)")
    p.add_argument("--target", help="compile for this target instead (xehpg, xehpc, xe2, sm_90)")
    engine_call.add_engine_options(p)
    p.set_defaults(run=run)
