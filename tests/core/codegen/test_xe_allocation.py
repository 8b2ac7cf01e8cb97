"""The Xe allocator's walk: its packing against a brute-force byte map, and the walk without code against
the lowering that emits it (the IR register model of Xe)."""
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.codegen.xe.allocation import allocation_peak
from kdd.core.codegen.xe.regalloc import NoRoom, RegisterFile
from kdd.core.ir import Alloc, For, Let, MemKind, Store, seq, var
from kdd.core.ir.expr import Broadcast, IntImm, Load
from kdd.core.ir.types import s32
from kdd.core.targets import get_target

RB = 32
XEHPG = get_target("xehpg")

# A step: allocate (whole registers or a sub-register of 1..RB bytes) or release the i-th live allocation.
STEPS = st.lists(st.one_of(st.tuples(st.just("regs"), st.integers(1, 3 * RB)),
                           st.tuples(st.just("sub"), st.integers(1, RB)),
                           st.tuples(st.just("free"), st.integers(0, 50))), max_size=60)


@settings(max_examples=200, deadline=None)
@given(STEPS)
def test_the_register_file_counts_every_register_holding_a_live_byte_and_never_overlaps(steps):
    regs = RegisterFile(16, RB)
    live = []
    for kind, n in steps:
        if kind == "free":
            if live:
                regs.release(live.pop(n % len(live)))
        else:
            try:
                a = regs.alloc_regs(n, "v", "x") if kind == "regs" else regs.alloc_sub(n, "v", "x")
            except NoRoom:
                continue
            if kind == "sub":  # inside one register, aligned to its size rounded to a power of two
                assert a.start // RB == (a.end - 1) // RB and a.start % (1 << (n - 1).bit_length()) == 0
            else:
                assert a.start % RB == 0 and a.size == -(-n // RB) * RB
            live.append(a)
        # The oracle: a byte map of the live allocations.
        owner = {}
        for a in live:
            for byte in range(a.start, a.end):
                assert byte not in owner, "two live values share a byte"
                owner[byte] = a
        assert regs.busy == len({byte // RB for byte in owner})


@settings(max_examples=200, deadline=None)
@given(st.lists(st.booleans(), min_size=12, max_size=12), st.sets(st.integers(0, 11)), st.integers(1, 3 * RB),
       st.booleans())
def test_avoided_registers_are_taken_only_where_no_free_range_lies_outside_them(used, avoid, nbytes, sub):
    # The oracle: every start of a run of free registers of the size asked for, by brute force.
    regs = RegisterFile(12, RB)
    for r, u in enumerate(used):
        if u:
            regs.reserve(r, 1, "held")
    count = -(-nbytes // RB)
    fits = [s for s in range(12 - count + 1) if not any(used[s:s + count])]
    clear = [s for s in fits if not avoid & set(range(s, s + count))]
    try:
        a = (regs.alloc_sub(nbytes, "v", "x", avoid=frozenset(avoid)) if sub and nbytes <= RB
             else regs.alloc_regs(nbytes, "v", "x", avoid=frozenset(avoid)))
    except NoRoom:
        assert not fits
        return
    start = a.start // RB
    assert start in fits
    assert start in clear or not clear


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from([1, 8, 16, 32]), min_size=1, max_size=40))
def test_the_walk_holds_r0_and_every_value_live_at_once_packed_as_the_allocator_packs(lanes):
    # Lets of s32 scalars and vectors, each stored to memory after all are defined: at the first store all
    # are live. The oracle packs by hand: r0, the scalars four bytes each in shared registers, each vector
    # in its own whole registers; at the start r0 and the local ids (a register each in x, y, z at SIMD16).
    x, mem = var("x"), var("mem", s32)
    values = [var(f"v{i}", s32.with_lanes(n)) for i, n in enumerate(lanes)]
    body = seq(*(Store.make(mem, i * 128, v) for i, v in enumerate(values)))
    for v in reversed(values):
        body = Let.make(v, x + 1 if v.type.lanes == 1 else Broadcast.make(x + 1, v.type.lanes), body)
    scalars = lanes.count(1)
    expected = max(1 + 3, 1 + -(-4 * scalars // RB) + sum(-(-4 * n // RB) for n in lanes if n > 1))
    assert allocation_peak(body, XEHPG, (), 16) == expected


def test_a_loop_keeps_its_variable_and_a_buffer_it_accumulates_into_beside_r0_and_the_arguments():
    k, acc, mem = var("k"), var("acc", s32), var("mem", s32)
    body = Alloc.make(acc, 4 * RB, MemKind.GRF, seq(For.make(k, 0, 4, Store.make(acc, 3 * RB, k)),
                                                    Store.make(mem, 0, k)))
    # r0, one register of arguments (two 64-bit addresses), acc's 4 registers, k in a sub-register.
    assert allocation_peak(body, XEHPG, ("src", "dst"), 16) == 1 + 1 + 4 + 1


def test_a_register_buffer_whose_scalar_accesses_reach_its_first_bytes_only_takes_a_sub_register():
    # A strength-reduced counter is a register-sized buffer the passes read and write at [0] only: the
    # allocator packs those bytes beside the loop variable instead of holding the whole register. Beside
    # them a 4-register buffer the loop writes at its last register (so the peak is inside the loop).
    k, ctr, acc, mem = var("k"), var("ctr", s32), var("acc", s32), var("mem", s32)

    def kernel(first):
        step = seq(Store.make(ctr, 0, Load.make(s32, ctr, 0) + k), Store.make(acc, 3 * RB, k))
        return Alloc.make(acc, 4 * RB, MemKind.GRF, Alloc.make(ctr, RB, MemKind.GRF, seq(
            Store.make(ctr, 0, first), For.make(k, 0, 4, step), Store.make(mem, 0, Load.make(s32, ctr, 0)),
            Store.make(mem, 4, Load.make(s32, acc, 3 * RB)))))
    # r0, the arguments, acc, then k and the counter's 4 bytes in one register
    assert allocation_peak(kernel(IntImm.make(s32, 0)), XEHPG, ("src", "dst"), 16) == 1 + 1 + 4 + 1
    # a vector store reaches the whole register: the counter holds it
    assert allocation_peak(kernel(Broadcast.make(IntImm.make(s32, 0), 8)), XEHPG, ("src", "dst"), 16) == 1 + 1 + 4 + 2


def test_headers_stop_rotating_before_any_value_is_recomputed():
    # An allocation that runs out only while headers rotate is retried without rotation, nothing recomputed;
    # first the global headers kept past their messages go, then the compact layout (SIMD1 headers' lets
    # at dword 0, counters in sub-registers) gives way, where the failing attempt compacted anything.
    from kdd.core.codegen.xe.allocation import HEADER_ROTATION, with_remat

    for placed in (True, False):
        tries = []

        def attempt(remat, rotation, compact, linger):
            tries.append((remat, rotation, compact, linger))
            if rotation:
                exc = NoRoom("a large buffer's free range was split")
                exc.compacted = compact and placed
                raise exc
            return "fits"

        assert with_remat(attempt, seq()) == "fits"
        roomy = [(frozenset(), HEADER_ROTATION, True, True), (frozenset(), HEADER_ROTATION, True, False)] + \
            [(frozenset(), HEADER_ROTATION, False, False)] * placed
        assert tries == roomy + [(frozenset(), 0, False, False)]


def _copy_lets(body):
    from kdd.core.codegen.xe.liveness import analyze, events

    live = analyze(body, set())
    return {x.var.name for p, (kind, x) in enumerate(events(body)) if kind == "let" and (id(x), p) in live.aliases}


def test_a_let_copying_a_loop_carried_register_reads_it_in_place_unless_the_register_changes_while_it_lives():
    # k = c[0] at the top of a step, c[0] = k + 1 at its end: the let reads c's register (no copy); a store
    # into c while k is still read later, or a division (several instructions writing c before they
    # finish reading k) as the store of k's last read, needs the copy.
    k, i, c, mem = var("k"), var("i"), var("c", s32), var("mem", s32)

    def kernel(step):
        return Alloc.make(c, RB, MemKind.GRF, seq(Store.make(c, 0, IntImm.make(s32, 0)), For.make(i, 0, 4, step)))

    bumped = Let.make(k, Load.make(s32, c, 0), seq(Store.make(mem, 0, k), Store.make(c, 0, k + 1)))
    clobbered = Let.make(k, Load.make(s32, c, 0), seq(Store.make(c, 0, i), Store.make(mem, 0, k)))
    divided = Let.make(k, Load.make(s32, c, 0), Store.make(c, 0, k // 3))
    assert _copy_lets(kernel(bumped)) == {"k"}
    assert _copy_lets(kernel(clobbered)) == set()
    assert _copy_lets(kernel(divided)) == set()


def test_a_copy_of_a_dword_keeps_a_large_buffer_it_would_otherwise_outlive_out_of_its_registers():
    # k copies one dword of an 8-register buffer read for the last time there: reading it in place would
    # hold all 8 registers for as long as k lives, so k stays a copy; a dword buffer is read in place.
    k, big, small, mem = var("k"), var("big", s32), var("small", s32), var("mem", s32)
    for buf, size, aliased in ((big, 8 * RB, set()), (small, 4, {"k"})):
        body = Alloc.make(buf, size, MemKind.GRF, seq(
            Store.make(buf, 0, IntImm.make(s32, 1)),
            Let.make(k, Load.make(s32, buf, 0), seq(Store.make(mem, 0, k), Store.make(mem, 4, k + 1)))))
        assert _copy_lets(body) == aliased
