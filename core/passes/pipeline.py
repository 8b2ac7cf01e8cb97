"""Pass pipelines: an ordered, declarative list of named IR passes, traced and memoized.

A ``Pass`` names a pure function ``fn(ir, options) -> ir``, the option keys it
reads (the only ones it is handed: ``options.restricted``), a version (bump it
when the pass's behaviour changes) and an ``enabled`` predicate over the
options. A pass that can say more than its output IR (CSE: what it named and
what it skipped) is declared with ``notes=True`` and returns ``(ir, notes)``,
notes being JSON-ready data; the trace keeps them, so nothing re-runs the
pass's analysis to explain it. ``Pipeline.run`` applies the enabled
passes in order and records a ``Trace``: after every pass, its name, the IR
object, whether it changed (identity: passes return the same object when they
change nothing), wall time and node count. The trace is what the daemon serves
as "IR after pass X".

Results are memoized in a ``PassCache`` keyed by (pass name, pass version,
structural hash of the input IR, the values of the options the pass reads), so
rerunning a pipeline on equal input does no pass work.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..ir.gc_pause import gc_paused
from ..ir.node import Node
from ..ir.visitor import count_nodes
from .options import options_key, restricted

PassFn = Callable[[Node, Mapping[str, Any]], Node]


def _always(options: Mapping[str, Any]) -> bool:
    return True


@dataclass(frozen=True)
class Pass:
    """One named pass. ``reads`` lists the option keys the pass depends on."""

    name: str
    fn: PassFn
    reads: tuple[str, ...] = ()
    enabled: Callable[[Mapping[str, Any]], bool] = _always
    version: int = 1
    doc: str = ""
    notes: bool = False  # fn returns (ir, JSON-ready notes)

    def key(self, ir: Node, options: Mapping[str, Any]) -> tuple:
        """The memoization key of running this pass on ``ir`` under ``options``."""
        return (self.name, self.version, hash(ir), options_key(options, self.reads))


@dataclass(frozen=True)
class TraceEntry:
    """The state after one pass."""

    name: str
    ir: Node
    changed: bool
    ms: float
    nodes: int
    cached: bool = False
    notes: Any = None  # what a pass declared with ``notes`` said besides its IR


@dataclass(frozen=True)
class Trace:
    """The input IR and the entry recorded after each pass, in order."""

    input: Node
    entries: tuple[TraceEntry, ...]

    @property
    def final(self) -> Node:
        return self.entries[-1].ir if self.entries else self.input

    def after(self, name: str) -> Node:
        """The IR after pass ``name``."""
        for e in self.entries:
            if e.name == name:
                return e.ir
        raise KeyError(f"no pass named '{name}' ran (ran: {', '.join(e.name for e in self.entries)})")

    def before(self, name: str) -> Node:
        """The IR that pass ``name`` received."""
        prev = self.input
        for e in self.entries:
            if e.name == name:
                return prev
            prev = e.ir
        raise KeyError(f"no pass named '{name}' ran")


@dataclass
class PassCache:
    """Memoized pass results. Entries keep their input so a hash collision is never trusted.

    An entry's output is ``None`` when the pass left its input unchanged, so a
    hit on equal (not identical) input hands back the caller's own object. At
    most ``capacity`` entries are kept, the least recently used dropped first:
    a long-lived worker compiles many documents, and each entry holds IR.
    """

    entries: dict[tuple, tuple[Node, Node | None, Any]] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0
    capacity: int = 1024

    def get(self, key: tuple, ir: Node) -> tuple[bool, Node | None, Any]:
        """``(found, output, notes)``; ``output`` is None when the pass changes nothing."""
        hit = self.entries.get(key)
        if hit is not None and (hit[0] is ir or hit[0].is_equal(ir)):
            self.hits += 1
            self.entries[key] = self.entries.pop(key)  # the most recently used goes last
            return True, hit[1], hit[2]
        self.misses += 1
        return False, None, None

    def put(self, key: tuple, ir: Node, out: Node, notes: Any = None) -> None:
        self.entries.pop(key, None)
        self.entries[key] = (ir, None if out is ir else out, notes)
        while len(self.entries) > self.capacity:
            del self.entries[next(iter(self.entries))]


class PassError(Exception):
    """A pass raised: the message names the pass and what it raised (a bug in the pass, not in the input)."""

    def __init__(self, name: str, cause: BaseException):
        super().__init__(f"pass '{name}' failed: {type(cause).__name__}: {cause}")
        self.name = name


@dataclass(frozen=True)
class Pipeline:
    """An ordered list of passes; the order is the documentation of the generator."""

    passes: tuple[Pass, ...]

    def __post_init__(self):
        names = [p.name for p in self.passes]
        dupes = {n for n in names if names.count(n) > 1}
        if dupes:
            raise ValueError(f"duplicate pass names: {sorted(dupes)}")

    def names(self) -> list[str]:
        return [p.name for p in self.passes]

    def run(self, ir: Node, options: Mapping[str, Any] | None = None,
            cache: PassCache | None = None) -> Trace:
        """Apply every enabled pass in order, tracing each one.

        A pass that raises stops the run with a :class:`PassError` naming it.
        """
        with gc_paused():
            return Trace(ir, tuple(self._entries(ir, options or {}, cache)))

    def _entries(self, ir: Node, options: Mapping[str, Any], cache: PassCache | None):
        """The trace entry of each enabled pass, running the passes in order."""
        current = ir
        for p in self.passes:
            if not p.enabled(options):
                continue
            start = time.perf_counter()
            key = p.key(current, options) if cache is not None else None
            cached, out, notes = cache.get(key, current) if cache is not None else (False, None, None)
            if cached:
                out = current if out is None else out
            else:
                try:
                    out = p.fn(current, restricted(options, p.reads, p.name))
                except Exception as exc:  # noqa: BLE001 - any bug in a pass is reported with its name
                    raise PassError(p.name, exc) from exc
                if p.notes:
                    out, notes = out
                if not isinstance(out, Node):
                    raise TypeError(f"pass '{p.name}' returned {type(out).__name__}, not IR")
                if cache is not None:
                    cache.put(key, current, out, notes)
            ms = (time.perf_counter() - start) * 1e3
            changed = out is not current
            yield TraceEntry(p.name, out, changed, ms, count_nodes(out), cached, notes)
            current = out
