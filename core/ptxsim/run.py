"""Running a PTX kernel on buffers: :func:`run_ptx`."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .machine import Machine
from .program import Program


@dataclass
class PtxRun:
    """What a run did: warp instructions executed, wall seconds, and per argument (by parameter name)
    the bytes any store wrote."""
    instructions: int
    seconds: float
    written: dict[str, np.ndarray]


def run_ptx(ptx: str, launch: dict, buffers: list[np.ndarray]) -> PtxRun:
    """Run the ``.entry`` of ``ptx`` over ``launch`` (``grid``, ``block``, ``shared_bytes``, as the PTX
    listing's ``launch``) on ``buffers``: byte arrays in parameter order, modified in place (the
    outputs). Raises :class:`~kdd.core.xesim.errors.SimulatorGap` for what the simulator does not
    model and :class:`~kdd.core.xesim.errors.Fault` for an access outside the buffers."""
    start = time.perf_counter()
    program = Program(ptx)
    if len(program.params) != len(buffers):
        raise ValueError(f"{len(buffers)} buffers for {len(program.params)} parameters")
    machine = Machine(program, buffers, launch.get("tensor_maps", ()))
    machine.run(tuple(launch["grid"]), tuple(launch["block"]), launch["shared_bytes"])
    names = [p.removeprefix("p_") for p in program.params]
    return PtxRun(machine.instructions, time.perf_counter() - start, dict(zip(names, machine.written)))
