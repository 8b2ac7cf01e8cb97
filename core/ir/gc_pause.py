"""Cyclic garbage collection paused while a compile stage builds and drops IR.

IR nodes cannot form reference cycles (they are immutable and built from
existing children), so reference counting frees every node a pass drops. The
cyclic collector still traverses all live nodes whenever enough allocations
pile up, and a pass that builds a 40,000-node tree next to the memo tables
of its analyses triggers it often: a third of the simplifier's time went to
collections that found nothing. ``gc_paused`` switches it off for the
duration of a stage and back on when the last stage still running (nested
or in another thread) ends; whatever cyclic garbage a stage left (a
traceback, a generator) is then collected as usual.
"""
from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

_lock = threading.Lock()
_depth = 0  # stages running with the collector paused by us


@contextmanager
def gc_paused() -> Iterator[None]:
    """Run the body with the cyclic garbage collector off; reentrant and thread-safe.

    A collector the caller switched off itself stays off afterwards.
    """
    global _depth
    with _lock:
        if _depth == 0 and not gc.isenabled():
            owned = False
        else:
            owned = True
            _depth += 1
            gc.disable()
    try:
        yield
    finally:
        if owned:
            with _lock:
                _depth -= 1
                if _depth == 0:
                    gc.enable()
