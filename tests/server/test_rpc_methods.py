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


def test_asm_hover_answers_a_listing_line_or_says_why_not():
    from pathlib import Path

    from kdd.core.engine import Engine
    from kdd.server.rpc.methods import call

    with pytest.raises(RpcError) as info:
        validate("kdd/asmHover", {"text": "", "line": "3"})
    assert info.value.code == INVALID_PARAMS and "'line'" in info.value.message
    path = str(Path(__file__).resolve().parents[2] / "examples" / "gemm_f16.kernel.toml")
    engine = Engine()
    listing = engine.compile(engine.read(path), "asm")["asm"]["lines"]
    index = next(i for i, line in enumerate(listing) if "dpas" in line["text"])
    out = call(engine, "kdd/asmHover", {"path": path, "line": index})
    assert out["ok"] and out["hover"]["doc"]["mnemonic"] == "dpas" and out["hover"]["lines"] == len(listing)
    assert call(engine, "kdd/asmHover", {"path": path, "line": len(listing)}) == {"ok": True, "hover": None}
    bad = call(engine, "kdd/asmHover", {"text": "[problem]\nop = 1\n", "line": 0})
    assert not bad["ok"] and bad["error"]
