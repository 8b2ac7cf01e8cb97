"""The pass manager: ordered passes, traces, identity-based change detection, memoization."""
import pytest

from kdd.core.ir import IRMutator, Let, Store, count_nodes, seq, var, walk
from kdd.core.ir.expr import IntImm
from kdd.core.ir.types import s32
from kdd.core.passes import Pass, PassCache, PassError, Pipeline
from kdd.core.passes.let_opt import remove_unused_lets


class Counter:
    """Wraps a pass function and counts how often it really runs."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, ir, options):
        self.calls += 1
        return self.fn(ir, options)


class DoubleConstants(IRMutator):
    def mutate_IntImm(self, old, new):
        return IntImm.make(old.type, old.value * 2)


def kernel(scale=3):
    x, t = var("x"), var("t")
    return Let.make(t, x * 7, seq(Store.make(var("out", s32), 0, x * scale)))


def make_pipeline():
    double = Counter(lambda ir, o: DoubleConstants().mutate(ir))
    identity = Counter(lambda ir, o: ir)
    lets = Counter(remove_unused_lets)
    pipe = Pipeline((
        Pass("double", double, reads=("double",), enabled=lambda o: o.get("double", True)),
        Pass("nothing", identity),
        Pass("let-opt", lets),
    ))
    return pipe, (double, identity, lets)


def test_trace_records_each_pass_in_order_with_identity_change():
    pipe, _ = make_pipeline()
    ir = kernel()
    trace = pipe.run(ir)
    assert [e.name for e in trace.entries] == ["double", "nothing", "let-opt"]
    assert [e.changed for e in trace.entries] == [True, False, True]
    assert trace.entries[1].ir is trace.entries[0].ir
    assert trace.final == Store.make(var("out", s32), 0, var("x") * 6)
    assert all(e.nodes == count_nodes(e.ir) and e.ms >= 0 for e in trace.entries)
    assert trace.before("let-opt") is trace.after("nothing")
    with pytest.raises(KeyError):
        trace.after("unknown")


def test_disabled_pass_does_not_run():
    pipe, (double, _, _) = make_pipeline()
    trace = pipe.run(kernel(), {"double": False})
    assert [e.name for e in trace.entries] == ["nothing", "let-opt"]
    assert double.calls == 0


def test_second_run_on_equal_input_does_no_pass_work():
    pipe, counters = make_pipeline()
    cache = PassCache()
    first = pipe.run(kernel(), cache=cache)
    assert [c.calls for c in counters] == [1, 1, 1]
    second = pipe.run(kernel(), cache=cache)  # equal, not identical, input
    assert [c.calls for c in counters] == [1, 1, 1]
    assert all(e.cached for e in second.entries)
    assert [e.changed for e in second.entries] == [e.changed for e in first.entries]
    assert second.final == first.final


def test_changed_input_or_option_reruns_only_what_depends_on_it():
    pipe, (double, identity, lets) = make_pipeline()
    cache = PassCache()
    pipe.run(kernel(3), cache=cache)
    pipe.run(kernel(4), cache=cache)  # new input: every pass runs again
    assert (double.calls, identity.calls, lets.calls) == (2, 2, 2)
    # An option no pass reads does not invalidate anything.
    pipe.run(kernel(4), {"unrelated": 1}, cache=cache)
    assert (double.calls, identity.calls, lets.calls) == (2, 2, 2)


def test_pass_must_return_ir_and_names_are_unique():
    with pytest.raises(ValueError):
        Pipeline((Pass("a", lambda ir, o: ir), Pass("a", lambda ir, o: ir)))
    with pytest.raises(TypeError):
        Pipeline((Pass("bad", lambda ir, o: 42),)).run(kernel())


def test_remove_unused_lets_keeps_used_and_is_identity_when_nothing_to_do():
    x, y, z = var("x"), var("y"), var("z")
    s = Let.make(y, x + 1, Let.make(z, x * 2, Store.make(var("out", s32), 0, y)))
    out = remove_unused_lets(s)
    assert out == Let.make(y, x + 1, Store.make(var("out", s32), 0, y))
    assert remove_unused_lets(out) is out


def test_a_pass_that_raises_is_named_in_a_pass_error():
    def boom(ir, options):
        raise KeyError("x")

    pipeline = Pipeline((Pass("first", lambda ir, o: ir), Pass("boom", boom)))
    with pytest.raises(PassError) as info:
        pipeline.run(var("a") + 1)
    assert info.value.name == "boom" and "pass 'boom' failed: KeyError" in str(info.value)


def test_a_pass_is_handed_only_the_options_it_declares():
    from kdd.core.passes.options import PassOptions, UndeclaredOption
    from kdd.core.targets import XEHPG

    seen = {}

    def reads_regs(ir, options):
        seen["regs"] = options["regs"]
        return ir

    def sneaks(ir, options):
        return ir if options.get("regs") else ir

    options = PassOptions(target=XEHPG, regs=128)
    Pipeline((Pass("ok", reads_regs, reads=("regs",)),)).run(kernel(), options)
    assert seen == {"regs": 128}
    with pytest.raises(PassError) as err:
        Pipeline((Pass("sneaks", sneaks, reads=("target",)),)).run(kernel(), options)
    assert isinstance(err.value.__cause__, UndeclaredOption) and "'regs'" in str(err.value)


def test_typed_options_hold_the_target_and_key_it_by_name():
    from kdd.core.passes.options import PassOptions
    from kdd.core.targets import XEHPC, XEHPG

    a, b = PassOptions(target=XEHPG, regs=128), PassOptions(target=XEHPC, regs=128)
    assert a["reg_bytes"] == 32 and b["reg_bytes"] == 64 and a["target"] is XEHPG
    assert a.key(("target", "regs")) == (("target", "xehpg"), ("regs", 128))
    p = Pass("p", lambda ir, options: ir, reads=("target",))
    assert p.key(kernel(), a) != p.key(kernel(), b)
    q = Pass("q", lambda ir, options: ir, reads=("regs",))
    assert q.key(kernel(), a) == q.key(kernel(), b)  # what a pass does not read cannot tell them apart
    with pytest.raises(AttributeError):
        a.regs = 256  # frozen


def test_a_pass_with_notes_keeps_them_in_the_trace_and_in_the_cache():
    def count_lets(ir, options):
        return ir, {"lets": sum(isinstance(n, Let) for n in walk(ir))}

    pipe = Pipeline((Pass("count", count_lets, notes=True), Pass("let-opt", remove_unused_lets)))
    cache = PassCache()
    first = pipe.run(kernel(), cache=cache)
    assert first.entries[0].notes == {"lets": 1} and first.entries[0].ir is first.input
    assert first.entries[1].notes is None
    second = pipe.run(kernel(), cache=cache)
    assert second.entries[0].cached and second.entries[0].notes == {"lets": 1}


def test_the_cache_keeps_its_capacity_dropping_the_least_recently_used():
    cache = PassCache(capacity=2)
    a, b, c = (Store.make(var(n), IntImm.make(s32, 0), IntImm.make(s32, 1)) for n in "abc")
    cache.put(("p", 1), a, a)
    cache.put(("p", 2), b, b)
    assert cache.get(("p", 1), a)[0]        # used: now the most recent
    cache.put(("p", 3), c, c)               # over capacity: ("p", 2) goes
    assert list(cache.entries) == [("p", 1), ("p", 3)]
    assert not cache.get(("p", 2), b)[0] and cache.get(("p", 3), c)[0]
