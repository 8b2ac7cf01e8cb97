"""``cp.async`` commit groups and how long each barrier lets them run (multi-stage pipelines).

The buffering pass's global -> shared copies become ``cp.async`` (:mod:`.memory`). The copies
issued between two commit points form one group (``cp.async.commit_group``); a barrier waits with
``cp.async.wait_group K``, leaving the ``K`` newest groups of this thread in flight, and every read
of shared memory after the barrier must find the data it reads complete. The right ``K`` depends
on what is read after the barrier, so the lowering runs twice: the first run records
:class:`Events` (barriers, commits, shared-memory reads and copy writes as byte intervals over
every warp of the group, loops and branches), :func:`plan_waits` finds per barrier the largest
safe ``K``, and the second run emits it. With three buffers a copy issued in iteration ``i`` is
read in iteration ``i + 2``: the barrier of iteration ``i + 1`` waits with ``K = 1`` and the copy
overlaps a whole iteration of ``mma``.

A read of bytes whose newest writing copy was issued after the last barrier (the thread reads its
own copy) is a *local* read: it waits for every copy first (``cp.async.wait_all``). Intervals come
from :func:`bounds` over the thread and group ids; an offset it cannot bound covers all of shared
memory, which makes the plan wait longer, never less.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kdd.core.ir.expr import Binary, Broadcast, Cast, IntImm, Op, Ramp, Ternary, Var

Interval = tuple[int, int]          # bytes [lo, hi) of shared memory
MAX_QUEUE = 6                       # pending groups tracked per state (stages < 6); older ones count as unknown
MAX_ROUNDS = 48                     # loop iterations interpreted before giving up on a fixpoint
MAX_STATES = 4096                   # states a loop may reach before its barriers wait for everything


def bounds(e, var) -> Interval | None:
    """Closed integer bounds ``(lo, hi)`` of ``e`` over every thread, or None; ``var(name)`` gives a
    variable's bounds (or None)."""
    if isinstance(e, IntImm):
        return e.value, e.value
    if isinstance(e, Var):
        return var(e.name)
    if isinstance(e, Cast) and e.type.is_int:
        return bounds(e.a, var)
    if isinstance(e, Broadcast):
        return bounds(e.a, var)
    if isinstance(e, Ramp):             # base + i * stride, 0 <= i < lanes
        b = bounds(e.base, var)
        span = e.stride * (e.lanes - 1)
        return None if b is None else (b[0] + min(0, span), b[1] + max(0, span))
    if isinstance(e, Ternary) and e.op in (Op.MAD, Op.ADD3):
        a, b, c = (bounds(x, var) for x in (e.a, e.b, e.c))
        if None in (a, b, c):
            return None
        return _add(a, _mul(b, c)) if e.op is Op.MAD else _add(_add(a, b), c)
    if isinstance(e, Binary):
        a, b = bounds(e.a, var), bounds(e.b, var)
        if a is None or b is None:
            return None
        if e.op is Op.ADD:
            return _add(a, b)
        if e.op is Op.SUB:
            return a[0] - b[1], a[1] - b[0]
        if e.op is Op.MUL:
            return _mul(a, b)
        if e.op is Op.SHL and b[0] == b[1] and b[0] >= 0:
            return _mul(a, (1 << b[0], 1 << b[0]))
        if e.op is Op.DIV and b[0] == b[1] and b[0] > 0 and a[0] >= 0:
            return a[0] // b[0], a[1] // b[0]
        if e.op is Op.MOD and b[0] == b[1] and b[0] > 0 and a[0] >= 0:
            return (a[0], a[1]) if a[1] < b[0] else (0, b[0] - 1)
        if e.op in (Op.MIN, Op.MAX):
            f = min if e.op is Op.MIN else max
            return f(a[0], b[0]), f(a[1], b[1])
    return None


def _add(a: Interval, b: Interval) -> Interval:
    return a[0] + b[0], a[1] + b[1]


def _mul(a: Interval, b: Interval) -> Interval:
    p = [x * y for x in a for y in b]
    return min(p), max(p)


@dataclass
class Events:
    """What the first lowering run saw, in emission order: a tree of ``("barrier", n)``,
    ``("commit",)``, ``("write", lo, hi)``, ``("read", n, lo, hi)``, ``("loop", body, trips)`` and
    ``("if", then, else)`` (``n`` numbers barriers and reads in emission order)."""

    root: list = field(default_factory=list)
    stack: list = field(default_factory=list)
    barriers: int = 0
    reads: int = 0

    def __post_init__(self):
        self.stack = [self.root]

    def add(self, *event) -> None:
        self.stack[-1].append(event)

    def barrier(self) -> int:
        self.barriers += 1
        self.add("barrier", self.barriers - 1)
        return self.barriers - 1

    def read(self, lo: int, hi: int) -> int:
        self.reads += 1
        self.add("read", self.reads - 1, lo, hi)
        return self.reads - 1

    def loop(self, trips: int | None) -> None:
        """Start a loop body (``trips``: its trip count where constant); :meth:`close` ends it."""
        body: list = []
        self.add("loop", body, trips)
        self.stack.append(body)

    def branch(self) -> None:
        """Start a branch's then-part; :meth:`otherwise` its else-part, :meth:`close` ends it."""
        then: list = []
        self.add("if", then, [])
        self.stack.append(then)

    def otherwise(self) -> None:
        """Switch from the then-part of the innermost branch to its else-part."""
        self.stack.pop()
        self.stack.append(self.stack[-1][-1][-1])

    def close(self) -> None:
        self.stack.pop()


@dataclass(frozen=True)
class _State:
    """Committed groups not known complete (oldest first; a group is its writes), the groups
    committed before the last barrier, the writes not committed yet, and whether groups were
    dropped past ``MAX_QUEUE``."""

    queue: tuple = ()
    at_barrier: int = 0
    open: tuple = ()
    barrier: int | None = None
    lost: bool = False


@dataclass
class Plan:
    """Per barrier the ``K`` of its ``cp.async.wait_group``, and the reads that wait for every copy."""

    waits: dict[int, int] = field(default_factory=dict)
    local: set[int] = field(default_factory=set)


def plan_waits(events: Events) -> Plan:
    """The largest safe ``K`` per barrier and the local reads, interpreting ``events`` over every
    path (loops to a fixpoint)."""
    plan = Plan(waits={b: MAX_QUEUE for b in range(events.barriers)})
    _run(events.root, {_State()}, plan)
    return plan


def _overlaps(group, lo: int, hi: int) -> bool:
    return any(a < hi and lo < b for a, b in group)


def _step(event, s: _State, plan: Plan) -> _State:
    kind = event[0]
    if kind == "write":
        return _State(s.queue, s.at_barrier, s.open + (event[1:],), s.barrier, s.lost)
    if kind == "commit":            # an empty group too: a path that skipped its copies
        queue, lost = s.queue + (s.open,), s.lost
        drop = max(0, len(queue) - MAX_QUEUE)
        return _State(queue[drop:], max(0, s.at_barrier - drop), (), s.barrier, lost or drop > 0)
    if kind == "barrier":           # the lowering commits open copies before it (a commit event)
        return _State(s.queue, len(s.queue), s.open, event[1], s.lost)
    _, n, lo, hi = event             # a read
    if _overlaps(s.open, lo, hi) or any(_overlaps(g, lo, hi) for g in s.queue[s.at_barrier:]):
        plan.local.add(n)           # its own copy since the last barrier
        return s
    newest = next((i for i in range(s.at_barrier - 1, -1, -1) if _overlaps(s.queue[i], lo, hi)), None)
    if s.barrier is None:
        if newest is not None or s.lost:
            plan.local.add(n)
        return s
    if newest is None:
        if s.lost:                  # a dropped group is older than every queued one: waiting for the
            # oldest queued group's predecessors covers it (groups complete in commit order)
            plan.waits[s.barrier] = min(plan.waits[s.barrier], s.at_barrier)
        return s
    plan.waits[s.barrier] = min(plan.waits[s.barrier], s.at_barrier - 1 - newest)
    return s


def _run(events: list, states: set, plan: Plan) -> set:
    for event in events:
        if event[0] == "loop":
            _, body, trips = event
            seen, current, out = set(states), set(states), set()
            for _ in range(MAX_ROUNDS):
                current = _run(body, current, plan)
                out |= current
                new = current - seen
                if not new or len(seen) > MAX_STATES:
                    break
                seen |= new
                current = new
            if new:                             # no fixpoint: every barrier of the loop waits for all
                _zero(body, plan)
            states = out if trips else out | states
        elif event[0] == "if":
            _, then, other = event
            states = _run(then, states, plan) | _run(other, states, plan)
        else:
            states = {_step(event, s, plan) for s in states}
    return states


def _zero(events: list, plan: Plan) -> None:
    for event in events:
        if event[0] == "barrier":
            plan.waits[event[1]] = 0
        elif event[0] == "loop":
            _zero(event[1], plan)
        elif event[0] == "if":
            _zero(event[1], plan)
            _zero(event[2], plan)
