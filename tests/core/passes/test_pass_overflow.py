"""Overflow safety: 32-bit addresses that can wrap are recomputed in 64 bits, the rest stay."""
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st
from passes_kernels import example_kernel
from passes_oracle import EXPR_CODE, OUT, build_expr

from kdd.core.builder import build_kernel
from kdd.core.ir import FuncCall, Let, Store, evaluate, var, walk
from kdd.core.ir.expr import Binary, IntImm, Op
from kdd.core.ir.funcs import Send
from kdd.core.ir.types import s64
from kdd.core.passes.kernel_pipeline import run_pipeline
from kdd.core.passes.overflow import widen_overflowing_offsets
from kdd.core.problem import parse_shape

N, C = var("n"), var("c")
RANGES = {"var_ranges": (("n", 0, 600_000), ("c", 0, 63))}


def test_an_offset_that_can_pass_2_gib_is_computed_in_s64():
    s = Store.make(OUT, (N * 4096 + C) * 2, C)
    out = widen_overflowing_offsets(s, RANGES)
    assert out.offset.type == s64
    env = {"n": 600_000, "c": 5}
    right = (600_000 * 4096 + 5) * 2
    assert evaluate(s.offset, env) != right  # the s32 program wraps
    assert evaluate(out.offset, env) == right


def test_a_wrapping_let_gets_an_s64_twin_used_by_addresses_only():
    off = var("off")
    s = Let.make(off, N * 8192, Store.make(OUT, off + C, off))
    out = widen_overflowing_offsets(s, RANGES)
    twin = out.body
    assert isinstance(twin, Let) and twin.var.name == "off_w" and twin.var.type == s64
    store = twin.body
    assert store.value == off  # a value keeps its 32-bit meaning
    assert store.offset.type == s64 and twin.var in set(walk(store.offset))


def test_offsets_that_fit_are_the_same_object():
    s = Store.make(OUT, (C * 4096 + C) * 2, C)
    assert widen_overflowing_offsets(s, RANGES) is s
    small = {"var_ranges": (("n", 0, 1000), ("c", 0, 63))}
    t = Store.make(OUT, (N * 4096 + C) * 2, C)
    assert widen_overflowing_offsets(t, small) is t


class Beyond64(Exception):
    """Some step of an exact computation leaves the 64-bit range: the pass widens to 64 bits
    only, so it promises nothing there."""


def exact(e, env):
    """The value of ``e`` over unbounded integers (C division and modulus, shifts as products);
    raises ``Beyond64`` when a step's value does not fit in 64 bits."""
    if isinstance(e, IntImm):
        return e.value
    if not isinstance(e, Binary):
        return env[e.name]
    a, b = exact(e.a, env), exact(e.b, env)
    if e.op is Op.DIV:
        value = 0 if b == 0 else (abs(a) // abs(b)) * (1 if (a >= 0) == (b >= 0) else -1)
    elif e.op is Op.MOD:
        value = 0 if b == 0 else a - exact(Binary.make(Op.DIV, IntImm.make(s64, a), IntImm.make(s64, b)), env) * b
    else:
        value = {Op.ADD: a + b, Op.SUB: a - b, Op.MUL: a * b, Op.MIN: min(a, b), Op.MAX: max(a, b),
                 Op.SHL: a * 2 ** (b % 32)}[e.op]
    if not -(2 ** 63) <= value < 2 ** 63:
        raise Beyond64(value)
    return value


@settings(max_examples=400, deadline=None)
@given(EXPR_CODE, st.integers(0, 2 ** 24), st.data())
def test_every_address_is_exact_for_values_in_the_ranges(code, r, data):
    x, y = var("x"), var("y")
    e = build_expr(code, [x, y])
    out = widen_overflowing_offsets(Store.make(OUT, e, x), {"var_ranges": (("x", -r, r), ("y", -r, r))})
    env = {"x": data.draw(st.integers(-r, r)), "y": data.draw(st.integers(-r, r))}
    try:
        value = exact(e, env)
    except Beyond64:
        return  # (x * x) * (x * x) with x near 2**20 wraps in 64 bits too, even under a min(.., 0)
    # Not widened: the analysis proved no operation wraps. Widened: computed in 64 bits.
    assert evaluate(out.offset, env) == value


def test_a_large_tensor_kernel_widens_its_activation_addresses_only():
    kernel = example_kernel("resnet50_3x3", full_shape=True)
    huge = replace(kernel.problem, shape=parse_shape("mb6000ic64ih56oc64oh56kh3ph1", "conv"))
    big = build_kernel(huge, kernel.config, kernel.target)
    assert max(a.size_bytes for a in big.args) > 2 ** 31
    trace = run_pipeline(big)
    types = {}
    for n in walk(trace.after("overflow")):
        if isinstance(n, FuncCall) and isinstance(n.func, Send):
            types.setdefault(n.ops.mem.name, set()).add(n.ops.mem_offset.type.scalar.bits)
    assert types["src"] == {64} and types["dst"] == {64}
    assert types["wei"] == {32} and types["a_slm"] == {32}
    # At its real size the same kernel needs nothing; without launch ranges the worst is assumed.
    assert widen_overflowing_offsets(kernel.body, {"var_ranges": tuple(_launch(kernel))}) is kernel.body
    assert widen_overflowing_offsets(kernel.body, {"var_ranges": ()}) is not kernel.body


def _launch(kernel):
    from kdd.core.passes.options import kernel_options
    return kernel_options(kernel)["var_ranges"]
