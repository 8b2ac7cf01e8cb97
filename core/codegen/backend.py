"""One code generator per target behind one interface: :class:`Backend`.

A backend owns what only its code generator knows: how a built kernel's IR
is counted in registers (the IR register model, handed to the passes'
:func:`~kdd.core.passes.registers.estimate_registers` as a model's ``walk``,
so the passes import nothing of code generation) and how the final IR
becomes assembly. ``backend_for(target)`` picks it: Xe targets get
:class:`XeBackend` (kdd's own allocation, ``iga64``), ``sm_90``
:class:`PtxBackend` (ptxas allocates). Each generator's modules are loaded
when first asked for, so choosing a backend loads neither.
"""
from __future__ import annotations

from kdd.core.passes.registers import RegisterEstimate, RegisterModel, interval_sweep
from kdd.core.targets import Target, get_target

from .errors import CodegenUnsupported


class Backend:
    """The code generator of one target."""

    def __init__(self, target: Target):
        self.target = target

    def register_model(self, kernel) -> RegisterModel:
        """The IR register model of ``kernel`` (a built ``Kernel``): the figure ``kdd compile --emit stats``
        reports as ``ir``, beside the allocation it models."""
        regs = self.target.registers
        return RegisterModel(regs.reg_bytes, regs.lane_bytes, self._walk(kernel))

    def _walk(self, kernel):
        return None

    def ir_registers(self, kernel, body) -> int:
        """The IR register model's registers for ``body`` (the final IR of ``kernel``) in the config's budget."""
        from kdd.core.passes.registers import estimate_registers

        # A kernel built without a config (tests' hand-written kernels) has no budget.
        return estimate_registers(body, self.register_model(kernel), kernel.regs).regs

    def generate(self, kernel, body, check: bool = True, disassemble: bool = True):
        """The listing of ``body`` (the final IR of ``kernel``); ``check`` runs the target's assembler on it;
        ``disassemble=False`` leaves out what only a shown listing or the stats read: sm_90's disassembly
        (live registers per line), the lines' IR nodes, the IR register model's figure and Xe's round trip
        through iga64's disassembler."""
        raise CodegenUnsupported(f"kdd has no assembly generator for {self.target.name}")


class XeBackend(Backend):
    """Xe-HPG and Xe-HPC: kdd's own register allocation, the assembly checked by ``iga64``."""

    def _walk(self, kernel):
        args, simd = tuple(a.var.name for a in kernel.args), kernel.simd

        def walk(ir, model: RegisterModel, budget: int | None) -> RegisterEstimate:
            from .xe.allocation import allocation_peak

            peak = allocation_peak(ir, self.target, args, simd, budget)
            return RegisterEstimate(peak * model.reg_bytes, peak)
        return walk

    def generate(self, kernel, body, check: bool = True, disassemble: bool = True):
        from .xe import assembled

        return assembled(kernel, body, self.target, check, ir_map=disassemble)


class PtxBackend(Backend):
    """``sm_90``: per-lane PTX, registers allocated by ptxas."""

    def _walk(self, kernel):
        def walk(ir, model: RegisterModel, budget: int | None) -> RegisterEstimate:
            from .ptx.memory import readers_of

            # The PTX generator loads a buffer only reorders read straight into the reorder's destination
            # words, and copies one only sends read global -> shared with cp.async: neither holds registers.
            kept_out = {n for n, kinds in readers_of(ir).items() if kinds in ({"reorder"}, {"send"})}
            return interval_sweep(ir, model, frozenset(kept_out))
        return walk

    def generate(self, kernel, body, check: bool = True, disassemble: bool = True):
        from .ptx import generate_ptx

        return generate_ptx(kernel, body, self.target, check, disassemble)


def backend_for(target: Target | str) -> Backend:
    """The backend of ``target`` (a :class:`Target` or its name)."""
    t = get_target(target) if isinstance(target, str) else target
    if t.isa == "ptx":
        return PtxBackend(t)
    if t.xe is not None:
        return XeBackend(t)
    return Backend(t)
