"""``kdd shape DESC``: a benchdnn descriptor filled in the way benchdnn fills it, as JSON.

A convolution prints its 22 benchdnn fields plus ``ndims``, ``name`` and
``canonical``; a GEMM (``MxK:KxN`` or ``m..n..k..``) prints ``batch``, ``m``,
``n``, ``k``, ``name`` and ``canonical``. An invalid descriptor exits with
status 2 and an error on stderr that quotes the offending token and marks it.
"""
from __future__ import annotations

import json
import sys


def run(args) -> int:
    from kdd.core.problem import ProblemError, parse_shape

    try:
        shape = parse_shape(args.descriptor, args.op)
    except ProblemError as e:
        marker = " " * e.start + "^" * max(1, e.end - e.start)
        print(f"kdd shape: error: {e.message}\n  {args.descriptor}\n  {marker}", file=sys.stderr)
        return 2
    print(json.dumps(shape.to_dict()))
    return 0


def register(sub) -> None:
    p = sub.add_parser("shape", help="fill in a benchdnn problem descriptor and print it as JSON",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("descriptor", help='e.g. "mb32ic64ih56oc64oh56kh3ph1" or "1024x512:512x256"')
    # kdd.core.problem.OPS, spelled out so that `kdd --help` imports no generator (tests keep them equal)
    p.add_argument("--op", choices=("conv", "gemm"), default=None,
                   help="conv or gemm (default: detected from the descriptor)")
    p.set_defaults(run=run)
