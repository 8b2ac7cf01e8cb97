"""``kdd check FILE``: run the compiled kernel of the ``[check]`` problem and compare with a float64 reference.

By default the check runs the deepest artifact kdd can run here: on Xe targets
the binary iga64 assembled from kdd's assembly, in kdd's instruction-level
simulator; on sm_90 the PTX, in kdd's PTX simulator (``--device`` runs the
cubin on a CUDA GPU instead, where there is one). ``--stage NAME`` runs the IR
after a stage instead (``build``, a pass name or ``final``) in the
interpreter, the reference semantics; ``--bisect`` checks the IR after the
build and after every pass, then the code, and names the first wrong one. The
output says what ran (``artifact``: asm, ptx or ir). The kernel is built from
the knobs written in FILE; without a ``[check] shape`` a problem over the
check's size bound is checked at a reduced shape that keeps the config's
tiles, every kernel size, stride, padding, dilation and tail and two trips of
every loop, and ``--shape DESC`` is reduced the same way unless ``--exact``;
the output lists what was reduced. ``--asm`` is accepted and means the default.

Verdicts and exit status: 0 ok (the outputs match); 1 wrong (a wrong value, an
output never written, or a fault: an access outside a buffer, an SLM race);
4 not checkable (a gap in kdd's simulator, a tool that is not installed, or a
shape over the check's bound without --unbounded: no verdict on the kernel);
2 when FILE cannot be read, the config is invalid or the kernel cannot be
compiled; 3 for a failure inside kdd (a pass that raised, assembly the
assembler rejects). A verdict
already reached for the same config, options, tools and kdd is answered from
the on-disk cache the daemons share (``$KDD_CACHE_DIR``, else
``~/.cache/kdd``; ``--no-cache`` checks anew) once the kernel is rebuilt and
its code or IR is the one that verdict judged; ``--device`` runs are never
cached.
"""
from __future__ import annotations

import argparse
import json

from . import engine_call, render


def run(args) -> int:
    from kdd.core.engine.verdict import exit_status

    params = {"path": args.file, "bisect": args.bisect, "unbounded": args.unbounded, "device": args.device,
              "asm": args.asm, "exact": args.exact}
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
    return exit_status(result)


def register(sub) -> None:
    p = sub.add_parser("check", help="run a kernel config's code (or an IR stage) and compare with a reference",
                       description="\n\n".join(__doc__.split("\n\n")[1:3]),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="a *.kernel.toml file")
    p.add_argument("--shape", help="check this problem shape instead of [check] shape (benchdnn descriptor)")
    p.add_argument("--target", help="check for this target instead (xehpg, xehpc, xe2, sm_90)")
    p.add_argument("--stage", help="check the IR after this stage in the interpreter (build, a pass name or "
                                   "final) instead of the code; default: [check] stage, else the code")
    p.add_argument("--bisect", action="store_true",
                   help="check the IR after the build and after every pass, then the code; name the first wrong")
    p.add_argument("--device", action="store_true",
                   help="sm_90: run the compiled kernel on the CUDA GPU (CuPy) instead of the PTX simulator")
    p.add_argument("--asm", action="store_true",
                   help="the default now (the assembled kernel in the simulator); kept for old scripts")
    p.add_argument("--exact", action="store_true",
                   help="check --shape as given, not reduced to check size")
    p.add_argument("--unbounded", action="store_true",
                   help="run the check even when the problem is over the check's size bound (slow)")
    p.add_argument("--json", action="store_true",
                   help="print the verdict as JSON (protocol/check.schema.json)")
    engine_call.add_engine_options(p)
    p.set_defaults(run=run)
