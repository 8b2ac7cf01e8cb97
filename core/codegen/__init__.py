"""Code generation: final kernel IR to target assembly, with register pressure per line.

The API (what ``kdd compile --emit asm`` calls)::

    from kdd.core.codegen import generate_asm
    listing = generate_asm(kernel, body, target)   # kernel: the built Kernel (ABI, config, problem)
                                                   # body: its final IR (passes.run_pipeline(kernel).final)
    listing.to_dict()  # {"asm", "lines": [{"text", "live_regs", "live", "ir_node"}],
                       #  "registers": {"peak", "budget", "estimate", "by_label"}, "mix", "roofline",
                       #  "abi", "assembler": {"tool", "version", "ok", "messages", "binary_bytes"}}
    listing.render()   # header (peak/budget, estimate vs actual, mix, roofline) + asm with live registers

``target`` is a :class:`~kdd.core.targets.Target` or its name. Xe targets
(``xehpg``, ``xehpc``) are lowered by :mod:`kdd.core.codegen.xe` with kdd's
own register allocation and checked by ``iga64``; ``sm_90`` by
:mod:`kdd.core.codegen.ptx` (PTX checked by ``ptxas``, live registers per
SASS instruction from ``nvdisasm``). A kernel
whose live values exceed the register budget raises :class:`OutOfRegisters`,
which lists the live buffers by label at that point, the repairs to try and
the config knobs responsible. Each line's ``ir_node`` gives the printed IR
line (``core/ir/printer.py`` numbering of the final IR), the builder step and
the config knob (``origin.knob``) the instruction came from; the caller joins
the knob to its source range in the config file (``config_range``).
"""
from __future__ import annotations

from kdd.core.targets import Target

from .assembler import AssemblerReport, assemble
from .backend import Backend, backend_for
from .errors import AssemblerRejected, CodegenError, CodegenUnsupported, LiveBuffer, OutOfRegisters
from .listing import AsmLine, Listing


def generate_asm(kernel, body, target: Target | str, check: bool = True, disassemble: bool = True) -> Listing:
    """Lower ``body`` for ``target`` (its :class:`Backend`) and (``check``) run the target's assembler on the
    result; an Xe listing the installed assembler rejects raises :class:`AssemblerRejected` (a generator bug).
    ``disassemble=False`` spares what only a shown listing or the stats read (sm_90's nvdisasm live
    registers; the IR lines and the IR register model on every target; see :mod:`.ptx`)."""
    return backend_for(target).generate(kernel, body, check, disassemble)


__all__ = ["AsmLine", "AssemblerRejected", "AssemblerReport", "Backend", "CodegenError", "CodegenUnsupported", "Listing",
           "LiveBuffer", "OutOfRegisters", "assemble", "backend_for", "generate_asm"]
