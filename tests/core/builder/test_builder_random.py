"""Random small problems, layouts and configs: every kernel the builder accepts passes the check."""
from __future__ import annotations

from math import prod

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
import pytest

from kernel_strategies import configs, problems
from kdd.core.builder import BuildError, build_kernel
from kdd.core.interp.check import check_kernel


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much,
                                                                  HealthCheck.too_slow])
@given(st.data())
def test_random_configs_pass_the_check(data):
    p = data.draw(problems(["f32", "f16", "s8", "bf16", "f16:f16:f32", "s8:s8:s32", "bf16:f32:bf16"]))
    target = data.draw(st.sampled_from(["xehpg", "xehpc", "sm_90"]))
    assert_checks_if_built(p, data.draw(configs(p)), target)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much,
                                                                 HealthCheck.too_slow])
@given(st.data())
def test_random_configs_verify_after_every_pass(data):
    """The IR verifier passes on the builder's IR and after every pass, for random problems and configs."""
    from kdd.core.passes.kernel_pipeline import run_pipeline
    from kdd.core.passes.verify import verify_problems_text, verify_trace

    p = data.draw(problems(["f32", "f16", "s8", "f16:f16:f32", "bf16:f32:bf16"], tagged=False))
    target = data.draw(st.sampled_from(["xehpg", "xehpc", "sm_90"]))
    config = data.draw(configs(p))
    try:
        kernel = build_kernel(p, config, target)
    except BuildError:
        assume(False)
    stages = verify_trace(kernel, run_pipeline(kernel))
    assert not any(problems for _, problems in stages), (str(kernel.config), verify_problems_text(stages))


def assert_checks_if_built(p, config, target: str) -> None:
    """Every kernel the builder accepts for ``p`` and ``config`` passes the check; a config it
    rejects, or a launch too large for a quick interpreter run, is discarded (``assume``)."""
    try:
        kernel = build_kernel(p, config, target)
    except BuildError:
        assume(False)
    # The interpreter runs every thread at once; keep launches small.
    assume(prod(kernel.grid) * prod(kernel.tg) <= 256)
    result = check_kernel(kernel)
    assert result.ok, (str(kernel.config), result)
    assert result.unwritten == 0
