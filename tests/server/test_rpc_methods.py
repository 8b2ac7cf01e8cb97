"""The method table: parameters checked per method, and which answers a daemon may serve again."""
import pytest

from kdd.server.rpc.methods import INVALID_PARAMS, METHOD_NOT_FOUND, RpcError, cacheable, validate


def test_each_method_takes_its_own_parameters():
    assert validate("kdd/irAfterPass", {"text": "", "pass": "cse"}) == {"text": "", "pass": "cse"}
    with pytest.raises(RpcError) as info:
        validate("kdd/passes", {"text": "", "pass": "cse"})  # another method's parameter
    assert info.value.code == INVALID_PARAMS and "'pass'" not in info.value.message and "pass" in info.value.message
    with pytest.raises(RpcError) as info:
        validate("kdd/stats", {"path": "x"})
    assert info.value.code == INVALID_PARAMS and "takes: none" in info.value.message
    with pytest.raises(RpcError) as info:
        validate("kdd/nope", {})
    assert info.value.code == METHOD_NOT_FOUND


def test_measurements_and_device_runs_are_never_served_from_a_cache():
    assert cacheable("kdd/compile", {"text": ""}) and cacheable("kdd/check", {"text": ""})
    assert not cacheable("kdd/check", {"text": "", "device": True})
    assert not cacheable("kdd/bench", {"text": ""}) and not cacheable("kdd/stats", {})
