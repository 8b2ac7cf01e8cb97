"""The options the kernel passes read, derived from a built kernel, as plain hashable values.

``Pipeline.run`` memoizes a pass on the values of the option keys it reads
(``Pass.reads``), so options are plain data: names, numbers, booleans and
tuples, never kernel or config objects.
"""
from __future__ import annotations

from typing import Any, Mapping


def kernel_options(kernel) -> dict[str, Any]:
    """Options for ``kernel`` (a ``kdd.core.builder.Kernel``): target, registers, launch ranges, knobs."""
    from kdd.core.config.operands import operands

    cfg = kernel.config
    ids = [(f"group_id{i}", 0, g - 1) for i, g in enumerate(kernel.grid)]
    ids += [(f"thread_id{i}", 0, t - 1) for i, t in enumerate(kernel.tg)]
    slm, prefetch, pipeline = cfg.slm, cfg.prefetch, cfg.pipeline
    a_name, b_name, _ = operands(kernel.problem).tensors
    fetched = () if prefetch is None else tuple(n for n, on in ((a_name, prefetch.a), (b_name, prefetch.b)) if on)
    return {
        "target": kernel.target,
        "reg_bytes": kernel.reg_bytes,
        "regs": cfg.regs,
        "var_ranges": tuple(ids),
        "slm_bufs": slm.bufs if slm is not None else 0,
        "gmem_bufs": slm.gmem if slm is not None else 0,
        "prefetch_bufs": prefetch.bufs if prefetch is not None else 0,
        "prefetch_buffers": fetched,
        "pipeline_unroll": bool(pipeline and pipeline.unroll),
        "reuse_headers": bool(pipeline and pipeline.reuse_headers),
    }


def launch_ranges(options: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    """``options["var_ranges"]`` (``(name, lo, hi)`` triples) as ``{name: (lo, hi)}``."""
    return {name: (lo, hi) for name, lo, hi in options.get("var_ranges", ())}
