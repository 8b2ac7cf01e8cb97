"""``gelu_erf`` on Xe: erf by a polynomial and ``math.exp``/``math.inv`` (Abramowitz and Stegun 7.1.26), run
in kdd's simulator against the float64 reference; an eltwise the generator cannot lower is an error at
``post_ops``."""
from __future__ import annotations

import pytest

from kdd.core.codegen.xe import tensor
from kdd.core.engine import Engine, Source


def _doc(types: str, target: str, post_ops: str = '"gelu_erf"') -> str:
    return (f'[problem]\nop = "conv"\nshape = "mb2ic16ih6oc32oh6kh3ph1"\ntypes = "{types}"\n'
            f'post_ops = [{post_ops}]\n\n[target]\nhw = "{target}"\n')


@pytest.mark.slow
@pytest.mark.parametrize("types,target", [("f32", "xehpg"), ("f16", "xehpc"), ("s8:s8:s8", "xehpg")])
def test_gelu_erf_assembly_matches_the_reference(types, target):
    post_ops = '"gelu_erf", "scale:0.25"' if types.startswith("s8") else '"gelu_erf"'
    out = Engine().check(Source(_doc(types, target, post_ops)))
    assert (out["artifact"], out["verdict"]) == ("asm", "ok"), out
    assert out["rel_err"] <= out["tol"]


def test_an_eltwise_xe_does_not_lower_is_an_error_at_post_ops(monkeypatch):
    monkeypatch.delitem(tensor._RECIPES, "gelu_erf")
    text = _doc("f32", "xehpg")
    out = Engine().compile(Source(text), "asm")
    assert not out["ok"] and out["failure"]["code"] == "no-codegen" and out["failure"]["knob"] == "post_ops"
    assert out["error"] == "xehpg code generation: eltwise gelu_erf is not lowered for Xe"
    start = out["failure"]["range"]["start"]
    assert text.splitlines()[start["line"]].startswith("post_ops = ")
