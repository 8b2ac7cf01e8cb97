"""Expression simplification over the whole kernel, with the launch's variable ranges.

A thin pass around the IR core's simplifier (``kdd.core.ir.simplify``, see
``docs/simplifier.md``): every expression under the facts of its scope, let
propagation, decided branches and empty loops removed. ``options["var_ranges"]``
(``(name, lo, hi)`` triples for the thread and group ids) gives the facts the
launch fixes, so ``thread_id0 < 4`` folds when the group has four threads.
The messages the simplifier drops as never enabled (an unrolled tile's
padding rows) leave their headers unread: those registers go too
(``let_opt.remove_unread_registers``).
"""
from __future__ import annotations

from typing import Any, Mapping

from ..ir.node import Node
from ..ir.simplify import simplify
from .let_opt import remove_unread_registers
from .options import launch_ranges


def simplify_kernel(ir: Node, options: Mapping[str, Any] | None = None) -> Node:
    """``ir`` simplified under the launch ranges; the same object when nothing changes."""
    return remove_unread_registers(simplify(ir, launch_ranges(options or {})))
