"""Barrier optimization: a barrier goes only when no SLM access pair on any path needed it."""
from hypothesis import given, settings
from hypothesis import strategies as st
from passes_oracle import OUT, execute

from kdd.core.ir import Alloc, For, FuncCall, If, MemKind, Store, seq, var, walk
from kdd.core.ir.funcs import Barrier, BarrierSignal, BarrierWait
from kdd.core.ir.types import s32
from kdd.core.passes.barrier_opt import remove_redundant_barriers

SLM = var("slm", s32)
X, K = var("x"), var("k")


def bar():
    return FuncCall.make(Barrier())


def slm_access(v=0):
    return Store.make(SLM, (X % 4 + 4) % 4 * 4, X + v)


def in_slm(body):
    return Alloc.make(SLM, 16, MemKind.SLM, body)


def barriers(s) -> int:
    return sum(isinstance(n, FuncCall) and isinstance(n.func, Barrier) for n in walk(s))


def test_back_to_back_barriers_become_one():
    s = in_slm(seq(slm_access(), bar(), bar(), slm_access(1)))
    assert barriers(remove_redundant_barriers(s)) == 1


def test_barriers_before_the_first_and_after_the_last_access_go():
    s = in_slm(seq(bar(), slm_access(), bar(), slm_access(1), bar(), Store.make(OUT, 0, X)))
    out = remove_redundant_barriers(s)
    assert barriers(out) == 1
    assert out.body.stmts[0] == slm_access() and barriers(out.body.stmts[1]) == 1


def test_without_slm_every_barrier_goes():
    s = seq(bar(), Store.make(OUT, X, X), bar())
    assert barriers(remove_redundant_barriers(s)) == 0


def test_a_barrier_ordering_one_iteration_against_the_next_stays():
    # write; barrier; read | next iteration's write must wait for this read: the top barrier is needed.
    body = seq(bar(), slm_access(), bar(), slm_access(1))
    loop = in_slm(For.make(K, 0, 3, body))
    assert remove_redundant_barriers(loop) is loop


def test_split_barriers_are_kept_and_keep_their_neighbours():
    s = in_slm(seq(slm_access(), FuncCall.make(BarrierSignal()), FuncCall.make(BarrierWait()), bar(), slm_access(1)))
    assert remove_redundant_barriers(s) is s


def test_a_shared_barrier_object_is_removed_only_where_redundant():
    b = bar()
    s = in_slm(seq(slm_access(), b, slm_access(1), b, b))
    out = remove_redundant_barriers(s)
    assert barriers(out) == 1 and barriers(s) == 3


# -- random programs: every SLM access pair a barrier separated stays separated ----------------------

@st.composite
def barrier_programs(draw, depth=3):
    def block(d):
        items = []
        for _ in range(draw(st.integers(1, 5))):
            kind = draw(st.sampled_from(("slm", "bar", "bar", "global", "loop", "if") if d else ("slm", "bar", "global")))
            if kind == "slm":
                items.append(slm_access(draw(st.integers(0, 9))))
            elif kind == "bar":
                items.append(bar())
            elif kind == "global":
                items.append(Store.make(OUT, X, X))
            elif kind == "loop":
                items.append(For.make(var(f"k{draw(st.integers(0, 10 ** 6))}"), 0, draw(st.integers(0, 3)), block(d - 1)))
            else:
                items.append(If.make(X.lt(draw(st.integers(-2, 2))), block(d - 1),
                                     block(d - 1) if draw(st.booleans()) else None))
        return seq(*items)
    return in_slm(block(depth))


def separated_pairs(events) -> set[tuple[int, int]]:
    """(i, j) for SLM accesses i < j (numbered in order) with a barrier between them."""
    out = set()
    accesses = []  # (access number, barriers seen so far)
    seen = 0
    for e in events:
        if e[0] == "call" and e[1] == "barrier":
            seen += 1
        elif e == ("slm",):
            accesses.append(seen)
    for i, bi in enumerate(accesses):
        for j in range(i + 1, len(accesses)):
            if accesses[j] > bi:
                out.add((i, j))
    return out


@settings(max_examples=300, deadline=None)
@given(barrier_programs(), st.integers(-3, 3))
def test_random_programs_keep_every_needed_barrier(p, x):
    before = execute(p, env={"x": x}).events
    out = remove_redundant_barriers(p)
    after = execute(out, env={"x": x}).events
    strip = lambda ev: [e for e in ev if not (e[0] == "call" and e[1] == "barrier")]  # noqa: E731
    assert strip(after) == strip(before)
    assert separated_pairs(after) == separated_pairs(before)
    assert barriers(out) <= barriers(p)
