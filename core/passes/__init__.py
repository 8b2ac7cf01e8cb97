"""Optimization passes over kernel IR and the pipeline that runs, traces and memoizes them.

* :mod:`.pipeline` — ``Pass``, ``Pipeline``, ``Trace``, ``PassCache``: the pass manager
* :mod:`.kernel_pipeline` — ``KERNEL_PIPELINE``: the ordered passes from built to optimized IR
* one module per pass: :mod:`.buffering`, :mod:`.prefetch`, :mod:`.register_loops`,
  :mod:`.simplify_pass`, :mod:`.overflow`, :mod:`.send_headers`, :mod:`.cse`, :mod:`.hoist`,
  :mod:`.strength_reduce`, :mod:`.let_opt`, :mod:`.unroll`, :mod:`.peephole`, :mod:`.barrier_opt`
* :mod:`.trace_view` — tables, JSON, IR after a pass, diffs; :mod:`.pass_bisect` — first wrong pass
* :mod:`.metrics`, :mod:`.registers` — before/after figures and the register estimate

``docs/passes.md`` describes every pass and the IR conventions they add.
"""
from .pipeline import Pass, PassCache, PassError, Pipeline, Trace, TraceEntry

__all__ = ["Pass", "PassCache", "PassError", "Pipeline", "Trace", "TraceEntry"]
