"""``kdd bench FILE``: time the compiled sm_90 kernel of a config on a CUDA GPU.

The kernel of the config's problem (or ``--shape``) is compiled to PTX,
assembled by ptxas and launched through CuPy: the median of ``--runs``
launches timed with CUDA events, inputs rotated over copies larger than the
L2 cache, printed as microseconds, TFLOP/s and the fraction of the device's
matrix peak (target data). Before timing, the kernel is checked at that
shape against the float64 reference (three launches on the same buffers,
inputs that round); a wrong kernel is reported and not timed. Exit status
0, 1 when the kernel computes wrong values, 2 when the config is invalid,
the target is not sm_90 or no CUDA device is present.
"""
from __future__ import annotations

import json

from . import engine_call, render


def run(args) -> int:
    params = {"path": args.file, "runs": args.runs}
    if args.shape is not None:
        params["shape"] = args.shape
    from kdd.core.engine.verdict import exit_status

    result = engine_call.call(args, "kdd/bench", params)
    wrong = "verdict" in result and "failure" not in result       # checked at full shape, not timed
    if args.json:
        print(json.dumps(result))
        return exit_status(result) if wrong else (0 if result["ok"] else 2)
    if wrong:
        print(f"WRONG {result['shape']} on {result['device']}: rel_err {result['rel_err']} (tol {result['tol']}) "
              f"in {result['tensor']} at {result['first_bad_index']}, over {result['launches']} launches; not timed")
        return exit_status(result)
    if not result["ok"]:
        return render.print_failure("bench", result)
    peak = (f", {100 * result['fraction_of_peak']:.1f}% of {result['peak_device']}'s "
            f"{result['peak_tflops']:.0f} TFLOP/s") if "fraction_of_peak" in result else ""
    print(f"{result['shape']} on {result['device']}: {result['median_us']:.1f} us median of {result['runs']} "
          f"(min {result['min_us']:.1f}), {result['tflops']:.2f} TFLOP/s{peak}; checked at this shape over "
          f"{result['check']['launches']} launches: rel_err {result['check']['rel_err']:.3g} "
          f"(tol {result['check']['tol']:.3g})")
    return 0


def register(sub) -> None:
    p = sub.add_parser("bench", help="time the compiled sm_90 kernel on a CUDA GPU",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("file", help="a *.kernel.toml file")
    p.add_argument("--shape", help="time this problem shape instead (benchdnn descriptor)")
    p.add_argument("--runs", type=int, default=50, help="timed launches (default 50)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    engine_call.add_engine_options(p)
    p.set_defaults(run=run)
