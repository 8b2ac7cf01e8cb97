"""gc_paused: the cyclic collector is off inside a compile stage and restored after it."""
import gc
import threading

import pytest

from kdd.core.ir.gc_pause import gc_paused


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_off_inside_and_back_on_after_nested_stages(collector_on):
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer stage is still running
    assert gc.isenabled()


def test_back_on_after_a_stage_that_raises(collector_on):
    with pytest.raises(ValueError):
        with gc_paused():
            raise ValueError("a failing pass")
    assert gc.isenabled()


def test_a_collector_the_caller_switched_off_stays_off(collector_on):
    gc.disable()
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_on_again_only_when_the_last_thread_leaves(collector_on):
    entered, release = threading.Event(), threading.Event()

    def other_stage():
        with gc_paused():
            entered.set()
            release.wait(5)

    t = threading.Thread(target=other_stage)
    t.start()
    entered.wait(5)
    with gc_paused():
        pass
    assert not gc.isenabled()  # the other thread's stage still runs
    release.set()
    t.join(5)
    assert gc.isenabled()
