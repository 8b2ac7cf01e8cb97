"""The numpy interpreter of kernel IR, float64 references, and the correctness check.

* :mod:`.program` — ``compile_program``/``run_ir``: every SIMD thread of a launch in lockstep
* :mod:`.vexpr` — expressions compiled to vectorized numpy closures
* :mod:`.memory`, :mod:`.sends`, :mod:`.fma`, :mod:`.tensor_ops`, :mod:`.sync` — memories and intrinsics
* :mod:`.values` — IR types as numpy arrays (bf16 as float32 / uint16 bits)
* :mod:`.eltwise_math` — oneDNN's element-wise algorithms
* :mod:`.reference_conv`, :mod:`.reference` — float64 references of conv/GEMM problems
* :mod:`.check` — ``check_kernel``/``run_check``: a built kernel against its reference

``docs/ir-semantics.md`` is the contract this package executes.
"""
from .check import CheckResult, check_kernel, default_tol, run_check
from .errors import InterpError
from .grid import Grid, Launch
from .program import Program, RunResult, compile_program, run_ir
from .reference import reference

__all__ = ["CheckResult", "Grid", "InterpError", "Launch", "Program", "RunResult", "check_kernel",
           "compile_program", "default_tol", "reference", "run_check", "run_ir"]
