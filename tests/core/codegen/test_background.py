"""Background (kdd.core.codegen.assembler): a call run beside the caller hands back its value or its exception."""
import threading

import pytest

from kdd.core.codegen.assembler import Background


def test_result_waits_for_the_call_and_returns_its_value():
    release = threading.Event()
    started = threading.Event()

    def slow(a, b):
        started.set()
        release.wait(5)
        return a * b

    call = Background(slow, 6, 7)
    started.wait(5)
    assert threading.active_count() >= 2  # running in a thread of its own while the caller goes on
    release.set()
    assert call.result() == 42
    assert call.result() == 42  # asked again: the same value, no second run


def test_result_raises_what_the_call_raised():
    def broken():
        raise ValueError("iga64 said no")

    call = Background(broken)
    with pytest.raises(ValueError, match="iga64 said no"):
        call.result()
