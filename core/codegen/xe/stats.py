"""Instruction mix per pipe (seed 002's table) and the roofline of a kernel.

Static counts are instructions in the listing; dynamic counts weigh each by
the trip counts of the loops around it (loops with run-time bounds count once
and make the figure a lower bound). The main loop is the loop whose body holds
the most weighted multiply instructions; its per-iteration mix counts its
body once, inner loops by their trip counts. The roofline takes the
problem's flops and the global bytes the kernel's messages move (dynamic
counts times the threads of the grid) against the default device's peak
compute and memory bandwidth from target data.
"""
from __future__ import annotations

from math import prod

from kdd.core.passes.reduction_nest import K_LOOP
from kdd.core.targets.xe_asm import LSC_DATA, PIPES
from kdd.core.targets.xe_syntax import Instruction, lsc_message, parse_line

_GLOBAL_OPS = frozenset({"load", "store", "atomic_fadd", "atomic_iadd"})


def instruction_mix(lines, loops: list[dict]) -> dict:
    static = dict.fromkeys(PIPES, 0)
    dynamic = dict.fromkeys(PIPES, 0)
    per_loop_fma = [0] * len(loops)
    for ln in lines:
        if ln.pipe is None:
            continue
        static[ln.pipe] += 1
        dynamic[ln.pipe] += ln.weight
        if _is_fma(ln):
            loop = ln.loop
            while loop >= 0:
                per_loop_fma[loop] += ln.weight
                loop = loops[loop]["parent"]
    out = {"static": static, "dynamic": dynamic, "dynamic_exact": all(lp["trips"] is not None for lp in loops)}
    if loops and max(per_loop_fma) > 0:
        best = max(range(len(loops)), key=lambda i: (per_loop_fma[i], -loops[i]["weight"]))
        inner = {i for i in range(len(loops)) if _inside(loops, i, best)}
        base = loops[best]["weight"]
        body = [(ln, ln.weight // base if base else ln.weight) for ln in lines if ln.loop in inner]
        out["main_loop"] = {"var": loops[best]["label"], "trips": loops[best]["trips"], **_body_counts(body)}
    else:
        # Unrolling removed every loop of the reduction: its group stands for the main loop, as in the IR's
        # loop figures (kdd.core.passes.loop_stats), once.
        group = _group_lines(lines, K_LOOP)
        if any(_is_fma(ln) for ln in group):
            out["main_loop"] = {"var": K_LOOP, "trips": 1, **_body_counts([(ln, ln.weight) for ln in group])}
    return out


def _body_counts(body) -> dict:
    """Instructions per pipe (``per_iteration``) and per loop-figure kind of ``(line, times)`` pairs."""
    pipes = dict.fromkeys(PIPES, 0)
    kinds = {"fma": 0, "moves": 0, "int_ops": 0, "float_ops": 0}
    for ln, times in body:
        if ln.pipe is None:
            continue
        pipes[ln.pipe] += times
        kind = _alu_kind(ln)
        if kind is not None:
            kinds[kind] += times
    return {"per_iteration": pipes, **kinds}


def _group_lines(lines, label: str) -> list:
    """The lines of the first IR group named ``label`` (between the comments the lowering puts around it)."""
    start = next((i for i, ln in enumerate(lines) if ln.pipe is None and ln.text == f"// {label} {{"), None)
    if start is None:
        return []
    end = next((i for i in range(start, len(lines)) if lines[i].pipe is None and lines[i].text == f"// }} {label}"),
               len(lines))
    return lines[start + 1:end]


def _alu_kind(ln) -> str | None:
    """What a line counts as in the loop figures: a multiply, a register move, an integer or a float
    operation (None: a send or control flow)."""
    if _is_fma(ln):
        return "fma"
    if ln.pipe not in ("int", "float"):
        return None
    return "moves" if _mnemonic(ln) == "mov" else f"{ln.pipe}_ops"


def _mnemonic(ln) -> str:
    return ln.text.split()[1]


def _is_fma(ln) -> bool:
    """A multiply instruction: ``dpas`` (xmx), or the ``mad``/``dp4a`` of a vector kernel."""
    if ln.pipe is None:   # a label or a comment
        return False
    return ln.pipe == "xmx" or _mnemonic(ln) == "dp4a" or (ln.pipe == "float" and _mnemonic(ln) == "mad")


def _inside(loops, i: int, outer: int) -> bool:
    while i >= 0:
        if i == outer:
            return True
        i = loops[i]["parent"]
    return False


def global_bytes(lines, threads: int) -> int:
    """Bytes the kernel's global messages move, over the whole grid. Non-transposed vector messages
    (``d32x4``: four dwords gathered per lane) are not counted: a known undercount of this figure."""
    total = 0
    for ln in lines:
        if ln.pipe != "send":
            continue
        line = parse_line(ln.text)
        m = lsc_message(line.mnemonic) if isinstance(line, Instruction) else None
        if (m is None or m.op not in _GLOBAL_OPS or m.sfid != "ugm" or m.addr_bits != 64
                or (m.vector is not None and not m.transposed) or line.exec_size is None):
            continue
        size = LSC_DATA[m.data][0]
        total += (m.vector * size if m.vector else size * line.exec_size) * ln.weight
    return total * threads


def roofline(kernel, target, lines) -> dict:
    problem = kernel.problem
    threads = prod(kernel.grid) * prod(kernel.tg)
    nbytes = global_bytes(lines, threads)
    flops = problem.flops() if problem is not None else 0
    fma = kernel.fma or "mad"
    engine = "matrix" if fma in ("dpas", "dpasw") else "vector"
    dtype = str(problem.types.src) if problem is not None else "f32"
    if engine == "vector" and dtype not in ("f16", "f64"):
        dtype = "f32" if dtype != "s8" and dtype != "u8" else "s8"
    if dtype == "u8":
        dtype = "s8"
    if engine == "matrix":  # f32 data on the matrix engine runs at the rate of its compute format (tf32)
        dtype = next((s.math for s in target.shapes(fma="dpas") if str(s.a) == dtype and s.math), dtype)
    device = target.device
    try:
        peak = device.peak(dtype, engine).value
    except KeyError:
        peak = device.peak("f32", "vector").value
        engine, dtype = "vector", "f32"
    bw = device.bandwidth.value
    t_compute, t_memory = flops / peak, nbytes / bw if bw else 0.0
    return {"device": device.name, "engine": engine, "dtype": dtype, "flops": flops, "bytes": nbytes,
            "intensity": flops / nbytes if nbytes else None, "peak_ops": peak, "bandwidth": bw,
            "time_s": max(t_compute, t_memory), "bound": "compute" if t_compute >= t_memory else "memory",
            "source": "flops from the problem; bytes from the listing's global messages x dynamic counts x "
                      f"{threads} threads; peaks from target data ({device.name})"}
