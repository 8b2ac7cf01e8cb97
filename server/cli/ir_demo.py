"""``kdd ir-demo``: a small kernel fragment, its simplified form and a pass trace."""
from __future__ import annotations


def demo_kernel():
    """A reduction loop with the address arithmetic a builder emits before optimization."""
    from kdd.core.ir import Alloc, For, FuncCall, Group, Let, Load, MemKind, Store, const, seq, var
    from kdd.core.ir.funcs import Barrier
    from kdd.core.ir.types import f32, s32

    a, c = var("a_buf", s32), var("c_buf", s32)
    k, i, lane = var("k"), var("i"), var("lane")
    a_off = var("a_off")
    unused = var("tmp")
    # (k*16 + lane) / 16 is k and % 16 is lane because 0 <= lane < 16 (the loop bounds say so)
    elem = ((k * 16 + lane) // 16) * 64 + (k * 16 + lane) % 16
    body = Let.make(a_off, (2 * (elem + i) - elem) * 4,
                    Let.make(unused, k * 3,
                             Store.make(c, lane * 4, Load.make(f32, a, a_off) * const(2.0))))
    loop = For.make(k, 0, 8, For.make(lane, 0, 16, body))
    return Group.make("kernel", Alloc.make(c, 64, MemKind.GRF, seq(
        For.make(i, 0, 1, loop), FuncCall.make(Barrier()))))


def demo_pipeline():
    from kdd.core.ir.simplify import simplify
    from kdd.core.passes import Pass, Pipeline
    from kdd.core.passes.let_opt import remove_unused_lets

    return Pipeline((
        Pass("simplify", lambda ir, _: simplify(ir), doc="expression simplification"),
        Pass("let-opt", remove_unused_lets, doc="remove unused lets"),
        Pass("simplify-again", lambda ir, _: simplify(ir), doc="a second simplify finds nothing left"),
    ))


def run(args) -> int:
    # Imports live in the functions so `kdd --help` and other subcommands stay light.
    from kdd.core.ir import count_nodes, to_text
    from kdd.core.ir.simplify import simplify
    from kdd.core.passes import PassCache

    ir = demo_kernel()
    print("=== IR (as built)")
    print(to_text(ir), end="")
    print("=== simplified")
    print(to_text(simplify(ir)), end="")
    trace = demo_pipeline().run(ir, cache=PassCache())
    print("=== pass trace")
    print(f"{'pass':<16} {'changed':<8} {'ms':>8} {'nodes':>6}")
    print(f"{'(input)':<16} {'':<8} {'':>8} {count_nodes(ir):>6}")
    for e in trace.entries:
        print(f"{e.name:<16} {'yes' if e.changed else 'no':<8} {e.ms:8.3f} {e.nodes:>6}")
    print("=== IR after let-opt")
    print(to_text(trace.after("let-opt")), end="")
    return 0


def register(sub) -> None:
    p = sub.add_parser("ir-demo", help="print an IR example, its simplified form and a pass trace")
    p.set_defaults(run=run)
