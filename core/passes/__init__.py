"""Optimization passes over kernel IR and the pipeline that runs, traces and memoizes them."""
from .pipeline import Pass, PassCache, Pipeline, Trace, TraceEntry

__all__ = ["Pass", "PassCache", "Pipeline", "Trace", "TraceEntry"]
