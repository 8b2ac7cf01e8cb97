"""Built kernels for pass tests: the shipped examples at their ``[check]`` shapes, and exact output runs.

``outputs(kernel, body)`` runs a kernel body in the interpreter on the same
seeded inputs the check uses and returns every output buffer's bytes and the
bytes written, so two IRs of one kernel can be compared bit for bit: the
passes reorder no floating-point operation, so "computes the same result"
means identical bytes.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from kdd.core.builder import build_kernel
from kdd.core.config import parse_config_line
from kdd.core.config.defaults import resolve_config
from kdd.core.interp import Launch, run_ir
from kdd.core.interp.check import pack, random_values, unwritten_bytes
from kdd.core.spec import load_spec

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def example_names() -> list[str]:
    return sorted(p.name[: -len(".kernel.toml")] for p in EXAMPLES.glob("*.kernel.toml"))


def example_kernel(name: str, line: str | None = None, full_shape: bool = False, **sizes: int):
    """The kernel of example ``name`` at its check shape (or its real shape), ``line`` overriding knobs,
    ``sizes`` the shape's (``k=256``)."""
    path = EXAMPLES / f"{name}.kernel.toml"
    spec, _ = load_spec(path.read_text(), str(path))
    problem = spec.problem if full_shape else spec.check
    if sizes:
        problem = replace(problem, shape=replace(problem.shape, **sizes))
    user = parse_config_line(line).over(spec.user_config) if line else spec.user_config
    return build_kernel(problem, resolve_config(problem, spec.target, user), spec.target)


def outputs(kernel, body=None, seed: int = 0) -> dict[str, tuple[bytes, bytes]]:
    """``{buffer: (bytes, written mask)}`` of every output after running ``body`` (default: the kernel's)."""
    rng = np.random.default_rng(seed)
    buffers = {}
    for arg in kernel.args:
        if arg.role == "output":
            buffers[arg.var.name] = unwritten_bytes(arg)
        else:
            values = random_values(arg.dtype, tuple(s for _, s in arg.dims), rng)
            buffers[arg.var.name] = pack(values, arg.dtype, arg.layout)
    launch = Launch(tuple(kernel.grid), tuple(kernel.tg), kernel.simd, kernel.reg_bytes)
    run = run_ir(kernel.body if body is None else body, launch, buffers)
    return {a.var.name: (buffers[a.var.name].tobytes(), run.written[a.var.name].tobytes()) for a in kernel.outputs}


def assert_passes_preserve(kernel, pipeline=None):
    """Runs the pipeline on ``kernel`` and asserts the IR after every pass that changed something
    computes the built kernel's exact outputs; returns the trace."""
    from kdd.core.passes.kernel_pipeline import KERNEL_PIPELINE, run_pipeline

    expected = outputs(kernel)
    trace = run_pipeline(kernel, pipeline or KERNEL_PIPELINE)
    for e in trace.entries:
        if e.changed:
            assert outputs(kernel, e.ir) == expected, f"the IR after pass '{e.name}' computes another result"
    return trace


def assert_verified(kernel, trace) -> None:
    """The IR verifier finds nothing wrong in the builder's IR nor after any pass."""
    from kdd.core.passes.verify import verify_problems_text, verify_trace

    stages = verify_trace(kernel, trace)
    assert not any(problems for _, problems in stages), verify_problems_text(stages)


def check_example_pipeline(kernel) -> None:
    """The whole contract for one kernel: the built IR passes the reference check, every pass keeps
    its exact outputs (so every stage passes it too), the IR verifier passes after every stage, and the
    reduction loop does less address arithmetic at the end."""
    from kdd.core.interp.check import check_kernel
    from kdd.core.passes.metrics import kernel_metrics, reduction_iterations
    from kdd.core.passes.registers import RegisterModel
    from kdd.core.targets import get_target

    assert check_kernel(kernel).ok
    trace = assert_passes_preserve(kernel)
    assert_verified(kernel, trace)
    model = RegisterModel.of(get_target(kernel.target))
    iterations = reduction_iterations(kernel.body)
    before, after = kernel_metrics(kernel.body, model, iterations), kernel_metrics(trace.final, model, iterations)
    if getattr(kernel.config, "schedule", "classic") == "classic":
        assert after.inner_ops < before.inner_ops and after.loop_ops < before.loop_ops
    else:   # schedule=tma*: the copy engine computes the tiles' addresses, the passes add none to the loops
        assert after.inner_ops <= before.inner_ops and after.loop_ops < before.loop_ops
    assert after.barriers <= before.barriers
