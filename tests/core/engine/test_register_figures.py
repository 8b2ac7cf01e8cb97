"""One register model: the register figure a compile reports is the IR register model of the final IR
(within 4 registers, on every example), and its overflow warning follows that figure."""
from pathlib import Path

import pytest

from kdd.core.engine import Engine, Source
from kdd.core.passes.registers import RegisterModel, estimate_registers

EXAMPLES = sorted((Path(__file__).parents[3] / "examples").glob("*.kernel.toml"))


@pytest.fixture(scope="module")
def engine():
    return Engine()


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name.split(".")[0])
def test_the_reported_estimate_is_the_final_irs_register_model(engine, path):
    source = Source(path.read_text(), str(path))
    out = engine.compile(source, "stats")
    assert out["ok"], out
    regs = out["stats"]["registers"]
    # The oracle: the register model run here on the final IR of the engine's own stages.
    parsed = engine.parse(source)
    r = engine.resolve(parsed)
    final = engine.trace(engine.kernel(r, parsed.sources())).final
    ir = estimate_registers(final, RegisterModel.of(r.target)).regs
    assert abs(regs["estimate"] - ir) <= 4, (regs, ir)
    assert regs["config"] == sum(regs["by_label"].values())
    overflow = [d for d in out["diagnostics"] if d["code"] == "regs"]
    if regs["estimate"] > regs["budget"]:
        assert [d["severity"] for d in overflow] == ["warning"]
        assert f"{regs['estimate']} > {regs['budget']}" in overflow[0]["message"]
    else:
        assert overflow == []
