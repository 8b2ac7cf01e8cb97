"""Bisect names the first stage whose IR computes a wrong result; a deliberately faulty pass is found."""
from passes_kernels import example_kernel

from kdd.core.ir import IRMutator
from kdd.core.ir.expr import BoolImm
from kdd.core.ir.funcs import Send, SendOp
from kdd.core.passes import Pass, Pipeline
from kdd.core.passes.kernel_pipeline import KERNEL_PASSES
from kdd.core.engine import InterpreterCheck
from kdd.core.passes.pass_bisect import bisect, render_bisect

KERNEL = example_kernel("gemm_bert")
CHECK = InterpreterCheck(KERNEL.problem)


class _MaskOffLoads(IRMutator):
    """A broken 'optimization': every global load reads zeros."""

    def mutate_FuncCall(self, old, new):
        if isinstance(new.func, Send) and new.func.op is SendOp.LOAD and new.func.space == "global":
            return new.with_ops(mask=BoolImm.make(False))
        return new


def with_faulty_pass_after(name: str) -> Pipeline:
    faulty = Pass("faulty", lambda ir, o: _MaskOffLoads().mutate(ir))
    i = [p.name for p in KERNEL_PASSES].index(name) + 1
    return Pipeline(KERNEL_PASSES[:i] + (faulty,) + KERNEL_PASSES[i:])


def test_an_injected_faulty_pass_is_named():
    result = bisect(KERNEL, CHECK, pipeline=with_faulty_pass_after("cse"))
    assert result.first_bad == "faulty"
    names = [v.name for v in result.verdicts]
    assert names[0] == "build" and names[-1] == "faulty"
    assert all(v.ok for v in result.verdicts[:-1]) and not result.verdicts[-1].ok
    assert "rel_err" in result.verdicts[-1].detail
    assert "first wrong after: faulty" in render_bisect(result.to_dict())


def test_the_real_pipeline_is_right_after_every_pass_and_unchanged_stages_are_not_rechecked():
    result = bisect(KERNEL, CHECK)
    assert result.first_bad is None
    assert [v.name for v in result.verdicts] == ["build"] + [p.name for p in KERNEL_PASSES]
    assert all(v.ok for v in result.verdicts)
    assert any(not v.checked for v in result.verdicts)
    assert result.to_dict()["first_bad"] is None


def test_a_wrong_skeleton_is_blamed_on_the_build():
    seen = []

    def check(kernel):
        seen.append(kernel)
        return False, "bad skeleton"

    result = bisect(KERNEL, check)
    assert result.first_bad == "build" and len(seen) == 1 and result.verdicts[0].detail == "bad skeleton"
