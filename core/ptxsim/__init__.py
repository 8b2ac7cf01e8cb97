"""The PTX simulator: the PTX kdd's sm_90 generator emits, run on the CPU, warp by warp.

Independent of the code generator it checks (it reads only the PTX text and imports nothing from
``kdd.core.codegen``); the semantics follow NVIDIA's PTX ISA manual (docs/ir-semantics.md gives the
conversion rules)::

    run = run_ptx(listing.asm, listing.launch, buffers)     # buffers: bytes per parameter, in place
    result = check_ptx(kernel, listing.to_dict())           # kdd check's JSON object

What it does not model raises :class:`kdd.core.xesim.errors.SimulatorGap` (a gap in kdd, never a
wrong kernel), the same class the Xe simulator raises.
"""
from .check import check_ptx
from .run import PtxRun, run_ptx

__all__ = ["PtxRun", "check_ptx", "run_ptx"]
