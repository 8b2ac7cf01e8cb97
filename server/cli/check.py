"""``kdd check FILE``: run the compiled kernel of the ``[check]`` problem in the interpreter and compare.

The kernel is built from the knobs written in FILE for the ``[check]``
shape (the omitted knobs chosen by the defaults for that shape), optimized
by every pass, run by the numpy interpreter on random inputs and compared
with the float64 reference (protocol and tolerances:
``kdd.core.interp.check``). ``--stage NAME`` checks the IR after an earlier
stage instead (``build`` or a pass name); ``--shape DESC`` checks another
shape; a problem over the interpreter's size bound is refused (exit 2)
unless ``--unbounded``. ``--device`` (sm_90) runs the cubin on a CUDA GPU
instead, against the same reference; ``--asm`` (Xe) runs the binary the assembler built in
kdd's instruction-level simulator, against the same reference. ``--bisect`` checks the IR after the build and after every pass and
names the first stage whose IR computes a wrong result. A verdict already
reached for the same config, options, tools and kdd is answered from the
on-disk cache the daemons share (``$KDD_CACHE_DIR``, else ``~/.cache/kdd``;
``--no-cache`` checks anew; ``--device`` runs are never cached). Exit status 0 when
the outputs match, 1 when they do not (or the kernel breaks the IR
semantics while running), 2 when FILE cannot be read or the config is
invalid, 3 for a failure inside kdd (a pass that raised).
"""
from __future__ import annotations

import json

from . import engine_call, render

PASS, MISMATCH = 0, 1


def run(args) -> int:
    params = {"path": args.file, "bisect": args.bisect, "unbounded": args.unbounded, "device": args.device,
              "asm": args.asm}
    for name in ("shape", "stage", "target"):
        if getattr(args, name) is not None:
            params[name] = getattr(args, name)
    result = engine_call.call(args, "kdd/check", params)
    failure = result.get("failure")
    if args.json:
        print(json.dumps(result))
    elif failure is not None:
        return render.print_failure("check", result)
    else:
        print(render.check_text(result), end="")
    if failure is not None:
        return 3 if failure["internal"] else 2
    ok = result["first_bad"] is None if args.bisect else result["ok"]
    return PASS if ok else MISMATCH


def register(sub) -> None:
    p = sub.add_parser("check", help="run a kernel config in the interpreter and compare with a reference",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("file", help="a *.kernel.toml file")
    p.add_argument("--shape", help="check this problem shape instead of [check] shape (benchdnn descriptor)")
    p.add_argument("--target", help="check for this target instead (xehpg, xehpc, sm_90)")
    p.add_argument("--stage", help="check the IR after this stage (build, a pass name or final; "
                                   "default: [check] stage, else final)")
    p.add_argument("--bisect", action="store_true",
                   help="check the IR after the build and after every pass; name the first wrong stage")
    p.add_argument("--device", action="store_true",
                   help="sm_90: run the compiled kernel on the CUDA GPU (CuPy) instead of the interpreter")
    p.add_argument("--asm", action="store_true",
                   help="xehpg/xehpc: run the assembled kernel in the instruction-level simulator instead; "
                        "with --bisect, say whether the IR or the assembly is wrong")
    p.add_argument("--unbounded", action="store_true",
                   help="interpret the problem even when it is over the interpreter's size bound (slow)")
    p.add_argument("--json", action="store_true",
                   help="print the verdict as JSON (protocol/check.schema.json)")
    engine_call.add_engine_options(p)
    p.set_defaults(run=run)
