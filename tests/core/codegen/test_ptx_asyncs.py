"""cp.async wait planning (:mod:`kdd.core.codegen.ptx.asyncs`): the K of each barrier's wait_group and
the local reads, on event trees written by hand, and interval bounds of offsets."""
from __future__ import annotations

from hypothesis import given, strategies as st

from kdd.core.codegen.ptx.asyncs import Events, bounds, plan_waits
from kdd.core.ir.expr import Binary, IntImm, Op, Ternary, Var
from kdd.core.ir.types import s32

BUF = 1024          # bytes per stage


def _pipeline(stages: int, trips: int | None, drain: int) -> tuple[Events, list[int], list[int]]:
    """A buffering pass's pipeline: ``stages - 1`` stages copied ahead, a loop that waits, reads stage
    ``i``, copies stage ``i + stages - 1`` and commits; ``drain`` iterations without copies after it."""
    ev = Events()
    for s in range(stages - 1):
        ev.add("write", s * BUF, (s + 1) * BUF)
        ev.add("commit")
    loop_barriers, drain_barriers = [], []
    ev.loop(trips)      # one iteration of a loop unrolled by `stages`, so buffers are constants
    for i in range(stages):
        loop_barriers.append(ev.barrier())
        ev.read(i * BUF, (i + 1) * BUF)
        nxt = (i + stages - 1) % stages
        ev.add("write", nxt * BUF, (nxt + 1) * BUF)
        ev.add("commit")
    ev.close()
    for i in range(drain):
        drain_barriers.append(ev.barrier())
        ev.read(i * BUF, (i + 1) * BUF)
    return ev, loop_barriers, drain_barriers


def test_a_three_stage_pipeline_keeps_one_copy_in_flight_and_drains_to_zero():
    ev, loop, drain = _pipeline(3, 10, 2)
    plan = plan_waits(ev)
    assert [plan.waits[b] for b in loop] == [1, 1, 1]
    assert plan.waits[drain[0]] == 1 and plan.waits[drain[1]] == 0
    assert plan.local == set()


def test_a_loop_that_may_not_run_waits_for_the_prologue_after_it():
    ev, _, drain = _pipeline(3, None, 2)
    plan = plan_waits(ev)
    assert plan.waits[drain[0]] == 1        # both paths: the stage-0 copy is the older of two
    assert plan.waits[drain[1]] == 0


def test_reading_ones_own_copy_before_any_barrier_is_local():
    ev = Events()
    ev.add("write", 0, 64)
    n = ev.read(32, 48)
    other = ev.read(64, 128)
    plan = plan_waits(ev)
    assert n in plan.local and other not in plan.local


def test_a_read_of_unknown_bytes_waits_for_everything():
    ev = Events()
    ev.add("write", 0, 64)
    ev.add("commit")
    ev.add("write", 64, 128)
    ev.add("commit")
    b = ev.barrier()
    ev.read(-(1 << 40), 1 << 40)
    assert plan_waits(ev).waits[b] == 0


def test_a_branch_takes_the_worse_of_its_paths():
    ev = Events()
    ev.add("write", 0, 64)
    ev.add("commit")
    ev.branch()
    ev.add("write", 64, 128)
    ev.add("commit")
    ev.otherwise()
    ev.close()
    b = ev.barrier()
    ev.read(0, 64)
    assert plan_waits(ev).waits[b] == 0     # without the branch's copy the stage-0 copy is the newest


@given(st.integers(-50, 50), st.integers(0, 20), st.integers(-8, 8), st.integers(1, 7), st.integers(0, 100))
def test_bounds_contain_every_value(lo, width, k, tg, c):
    t = Var.make(s32, "t")
    e = Ternary.make(Op.MAD, Binary.make(Op.ADD, t, IntImm.make(s32, c)), Binary.make(Op.MUL, t, IntImm.make(s32, k)),
                     IntImm.make(s32, tg))
    b = bounds(e, lambda name: (lo, lo + width))
    for v in range(lo, lo + width + 1):
        assert b[0] <= (v + c) + v * k * tg <= b[1]
    assert bounds(Var.make(s32, "u"), lambda name: None) is None


def test_a_dropped_group_is_waited_for_as_the_oldest():
    """Seven groups, the first one (the bytes read) past the tracked queue of six: it is the seventh
    newest, so at most six groups may stay in flight, and six may."""
    ev = Events()
    for g in range(7):
        ev.add("write", g * 64, (g + 1) * 64)
        ev.add("commit")
    b = ev.barrier()
    ev.read(0, 64)
    assert plan_waits(ev).waits[b] == 6


def test_prefetches_under_a_loop_bound_branch_keep_one_copy_in_flight():
    """The convolution's main loop: unrolled by three, the copies of the last two iterations under
    ``if (k < trips - n)``; paths that skip them (infeasible before the loop's end, not known here)
    must not drain the pipeline at every barrier."""
    ev = Events()
    for s in range(2):
        ev.add("write", s * BUF, (s + 1) * BUF)
        ev.add("commit")
    ev.loop(12)
    barriers = []
    for i in range(3):
        barriers.append(ev.barrier())
        ev.read(i * BUF, (i + 1) * BUF)
        nxt = (i + 2) % 3
        if i:
            ev.branch()
        ev.add("write", nxt * BUF, (nxt + 1) * BUF)
        if i:
            ev.otherwise()
            ev.close()
        ev.add("commit")
    ev.close()
    plan = plan_waits(ev)
    assert [plan.waits[b] for b in barriers] == [1, 1, 1]


@given(st.integers(-50, 50), st.integers(0, 20), st.integers(-9, 9), st.sampled_from([2, 4, 8, 16, 32]),
       st.integers(-100, 100))
def test_bounds_of_a_vector_contain_every_element(lo, width, stride, lanes, c):
    """Ramps and broadcasts (vectors a lane evaluates element by element): every element of every
    value of the scalar inside lies within the bounds, checked with the IR's own evaluator."""
    import numpy as np

    from kdd.core.ir.eval import evaluate
    from kdd.core.ir.expr import Broadcast, Ramp

    t = Var.make(s32, "t")
    e = Binary.make(Op.ADD, Ramp.make(Binary.make(Op.MUL, t, IntImm.make(s32, 3)), stride, lanes),
                    Broadcast.make(IntImm.make(s32, c), lanes))
    b = bounds(e, lambda name: (lo, lo + width))
    for v in range(lo, lo + width + 1):
        vals = np.asarray(evaluate(e, {"t": v}))
        assert b[0] <= vals.min() and vals.max() <= b[1]
