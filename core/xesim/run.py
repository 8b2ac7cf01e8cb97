"""Running an assembled Xe kernel: assemble, disassemble, build every thread's payload, simulate.

::

    program = load(asm_text, "12p71")               # iga64 -a, then iga64 -d of the binary
    result = simulate(program, launch, abi, buffers)  # buffers: argument name -> bytes (updated)

The thread payload follows the kernel's ABI table (the listing's ``abi``, a
list of ``{name, reg, bytes, type}``): ``r0`` holds the group ids at the
dwords the table names and the group's thread count in byte 11 (what a
barrier header copies); each argument's 64-bit address sits where the table
puts it; the local ids of the lanes are words, x counting the lanes of the
SIMD threads of a group in order (``thread_id0 * simd + lane``), y and z the
thread's other ids.
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from kdd.core.toolchain import find_tool

from .errors import SimError
from .machine import Geometry, Machine
from .memory import Global, base
from .program import Instr, parse

GRF_LIMIT = 256
BARRIER_COUNT_BYTE = 11


class ToolMissing(RuntimeError):
    """``iga64`` is not installed."""


@dataclass(frozen=True)
class Launch:
    """Thread groups per dimension, SIMD threads per group per dimension (``thread_id0`` fastest),
    SIMD width, register row bytes, SLM bytes per group."""

    grid: tuple[int, int, int]
    tg: tuple[int, int, int]
    simd: int
    reg_bytes: int
    slm_bytes: int = 0


@dataclass
class SimResult:
    """Outputs of a run: ``written`` (argument name -> bool per byte), the counts, and the time."""

    written: dict
    instructions: int
    thread_instructions: int
    seconds: float


def assemble(text: str, command: tuple[str, ...]) -> bytes:
    """The binary of ``text`` under the target's assembler command (``iga64 -a -p=... ...``)."""
    path = find_tool(command[0])
    if path is None:
        raise ToolMissing(f"{command[0]} is not installed")
    with tempfile.TemporaryDirectory(prefix="kdd-sim-") as tmp:
        src, out = os.path.join(tmp, "k.asm"), os.path.join(tmp, "k.bin")
        with open(src, "w", encoding="utf-8") as f:
            f.write(text)
        run = subprocess.run([path, *command[1:], src, "-o", out], capture_output=True, text=True, timeout=120)
        if run.returncode != 0 or not os.path.exists(out):
            raise SimError(None, "", f"the assembler failed: {(run.stdout + run.stderr).strip()[:400]}")
        with open(out, "rb") as f:
            return f.read()


def disassemble(binary: bytes, platform: str, tool: str = "iga64") -> str:
    """``iga64 -d`` of ``binary`` for ``platform`` (``12p71``, ``12p72``)."""
    path = find_tool(tool)
    if path is None:
        raise ToolMissing(f"{tool} is not installed")
    with tempfile.TemporaryDirectory(prefix="kdd-sim-") as tmp:
        src = os.path.join(tmp, "k.bin")
        with open(src, "wb") as f:
            f.write(binary)
        run = subprocess.run([path, "-d", f"-p={platform}", src], capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        raise SimError(None, "", f"the disassembler failed: {(run.stdout + run.stderr).strip()[:400]}")
    return run.stdout


def platform_of(command: tuple[str, ...]) -> str:
    for arg in command:
        m = re.match(r"-p=(\S+)", arg)
        if m:
            return m.group(1)
    raise ValueError(f"no -p=PLATFORM in {' '.join(command)}")


@lru_cache(maxsize=8)
def load(text: str, command: tuple[str, ...]) -> tuple[list[Instr], str]:
    """The program the binary of ``text`` encodes, and its disassembly (the last few kept: a check
    rerun with another seed or tolerance assembles nothing again; a run never changes a program)."""
    dis = disassemble(assemble(text, command), platform_of(command), command[0])
    return parse(dis), dis


def _place(field: dict, reg_bytes: int) -> int:
    """Byte offset of an ABI entry (``reg`` ``rN.S`` counts ``S`` in elements of its type)."""
    reg, _, sub = field["reg"][1:].partition(".")
    size = {"s32": 4, "u32": 4, "u64": 8, "u16": 2, "s64": 8}[field["type"]]
    return int(reg) * reg_bytes + int(sub or 0) * size


def payload(m: Machine, launch: Launch, abi: list[dict], arg_index: dict[str, int]) -> None:
    """Writes every thread's starting registers (see the module docstring)."""
    geo = m.geo
    T = geo.threads
    t = np.arange(T)
    group, local = t // geo.group_size, t % geo.group_size
    gx, gy = launch.grid[0], launch.grid[1]
    gids = {"group_id0": group % gx, "group_id1": (group // gx) % gy, "group_id2": group // (gx * gy)}
    tx, ty = launch.tg[0], launch.tg[1]
    tids = (local % tx, (local // tx) % ty, local // (tx * ty))
    d = m.views["ud"]
    d[:, BARRIER_COUNT_BYTE // 4] = np.uint32(geo.group_size) << np.uint32(8 * (BARRIER_COUNT_BYTE % 4))
    lanes = np.arange(launch.simd)
    for f in abi:
        at = _place(f, geo.reg_bytes)
        name = f["name"]
        if name in gids:
            d[:, at // 4] = gids[name]
        elif name in arg_index:
            m.views["uq"][:, at // 8] = np.uint64(base(arg_index[name]))
        elif name.startswith("local_id_"):
            axis = "xyz".index(name[-1])
            ids = tids[axis][:, None] * launch.simd + lanes[None, :] if axis == 0 else \
                np.broadcast_to(tids[axis][:, None], (T, launch.simd))
            m.views["uw"][:, at // 2: at // 2 + launch.simd] = ids
        elif name != "r0":
            raise SimError(None, "", f"the ABI names {name!r}, which the launch does not know")


def simulate(program: list[Instr], launch: Launch, abi: list[dict], buffers: dict[str, np.ndarray],
             on_store=None, after: dict | None = None) -> SimResult:
    """Runs ``program`` over the whole launch; ``buffers`` (argument name -> uint8 array, in ABI
    order of appearance) are updated in place. ``on_store(instr, flat_indices, threads, memory)`` sees
    every global store; ``after[i](machine, threads)`` runs each time program instruction ``i`` has run.
    Raises :class:`~.errors.SimError`."""
    import time

    start = time.perf_counter()
    names = list(buffers)
    memory = Global([buffers[n] for n in names])
    geo = Geometry(int(np.prod(launch.grid)), int(np.prod(launch.tg)), launch.reg_bytes, GRF_LIMIT,
                   max(launch.slm_bytes, 0))
    hook = None if on_store is None else (lambda ins, idx, rows: on_store(ins, idx, rows, memory))
    m = Machine(program, geo, memory, hook)
    m.after = after or {}
    payload(m, launch, abi, {n: i for i, n in enumerate(names)})
    m.run()
    written = {}
    for i, n in enumerate(names):
        buffers[n][:] = memory.buffer(i)
        written[n] = memory.written_of(i).copy()
    return SimResult(written, m.executed, m.thread_steps, time.perf_counter() - start)
