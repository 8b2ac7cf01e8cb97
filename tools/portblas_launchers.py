"""Write tests/data/portblas/launchers.json from portBLAS's backend headers.

    .venv/bin/python tools/portblas_launchers.py COMMIT intel_gpu.hpp nvidia_gpu.hpp > tests/data/portblas/launchers.json

For every ``return`` of each header (read by ``kdd.core.config.portblas.header``) it keeps the launcher's
template arguments, the overload's and the path's conditions as written, its local constants and line,
and, for each launcher a kdd problem can reach (real element types: not the complex overload), the
call nearest 128 x 128 (then with the least K) among a grid of sizes, transpositions, types, batch kinds and macros that the header
dispatches to it. The JSON is data about portBLAS (which arguments it runs for which call); the tests
read it (tests/core/config/test_portblas_launchers.py).
"""
from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

from kdd.core.config.portblas.header import Call, dispatch, read_header

SIZES = (4, 8, 16, 32, 64, 128, 256, 1024, 2048, 2112)
KS = (64, 1024, 4096)
TYPES = ("f32", "f16")
MACROS = (("GEMM_TALL_SKINNY_SUPPORT",), ("GEMM_TALL_SKINNY_SUPPORT", "SB_ENABLE_JOINT_MATRIX"))


def _calls():
    for m, n, k, t, trans, batch, macros in itertools.product(SIZES, SIZES, KS, TYPES, ("NN", "NT", "TN", "TT"),
                                                              ((1, "strided"), (2, "strided"), (2, "interleaved")),
                                                              MACROS):
        env = {"SB_ENABLE_JOINT_MATRIX": "1"} if "SB_ENABLE_JOINT_MATRIX" in macros else {}
        # the call nearest a 128 x 128 C (big enough for a work group's block, small enough to check), least K
        near = abs(m.bit_length() - 8) + abs(n.bit_length() - 8)
        yield (near, k, batch[0], m * n), Call(m, n, k, batch[0], batch[1], trans[0] == "T", trans[1] == "T", True,
                                         (t, t, t), frozenset(macros), env)


def main(argv: list[str]) -> int:
    commit, paths = argv[0], argv[1:]
    calls = sorted(_calls(), key=lambda c: c[0])
    out = {"source": {"repository": "https://github.com/codeplaysoftware/portBLAS", "commit": commit,
                      "paths": [f"src/interface/blas3/backend/{Path(p).name}" for p in paths]},
           "headers": {}}
    for path in paths:
        leaves = read_header(Path(path).read_text(encoding="utf-8"))
        chosen = {}
        for _, call in calls:
            leaf = dispatch(leaves, call)
            if leaf is not None and leaf.index not in chosen:
                chosen[leaf.index] = call
        rows = []
        for leaf in leaves:
            call = chosen.get(leaf.index)
            rows.append({
                "index": leaf.index, "line": leaf.line, "overload": leaf.overload,
                "guards": [{"text": g.text, "expected": g.expected, "macro": g.macro} for g in leaf.guards],
                "constants": [list(c) for c in leaf.constants], "args": leaf.args,
                "call": None if call is None else {
                    "m": call.m, "n": call.n, "k": call.k, "batch_size": call.batch_size,
                    "batch_type": call.batch_type, "trans": ("T" if call.trans_a else "N") + ("T" if call.trans_b else "N"),
                    "types": call.types[0], "defines": sorted(call.defines)}})
        out["headers"][Path(path).name] = rows
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
