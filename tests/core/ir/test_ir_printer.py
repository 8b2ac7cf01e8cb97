"""The printed IR form and its line-to-node map."""
from kdd.core.ir import (Alloc, For, FuncCall, Group, If, Let, Load, MemKind, Store, const,
                         div_up, iif, max_, min_, print_ir, seq, to_text, var)
from kdd.core.ir.funcs import Barrier
from kdd.core.ir.types import f32, s32, s64


def test_seed_expression_prints_fully_parenthesised():
    a, b = var("a"), var("b")
    assert to_text(2 * (a + b) - a) == "((2 * (a + b)) - a)"


def test_call_form_operators_and_immediates():
    a = var("a")
    assert to_text(min_(a, 3)) == "min(a, 3)"
    assert to_text(div_up(a, 4)) == "div_up(a, 4)"
    assert to_text(iif(a.lt(0), -a, max_(a, 1))) == "iif((a < 0), (-a), max(a, 1))"
    assert to_text(a + const(5, s64)) == "(a + 5:s64)"
    assert to_text(var("x", f32) * 2.5) == "(x * 2.5)"
    assert to_text(a + (-3)) == "(a + (-3))"


def test_kernel_prints_with_two_space_blocks_and_typed_lets():
    c, x, i = var("c", s32), var("x"), var("i")
    body = Let.make(x, i * 4, Store.make(c, x, Load.make(f32, c, x) + 1.0))
    k = Group.make("kernel", Alloc.make(c, 1024, MemKind.GRF, seq(
        For.make(i, 0, 16, body, unroll=2),
        If.make(i.eq(0), FuncCall.make(Barrier()), FuncCall.make(Barrier())))))
    assert to_text(k) == (
        "kernel {\n"
        "  alloc.grf c[1024]\n"
        "  for (i.s32 = 0; i < 16; i++) [unroll 2] {\n"
        "    x.s32 = (i * 4)\n"
        "    c.f32[x] = (c.f32[x] + 1.0)\n"
        "  }\n"
        "  if ((i == 0)) {\n"
        "    barrier()\n"
        "  } else {\n"
        "    barrier()\n"
        "  }\n"
        "}\n")


def test_line_map_points_at_the_statement_of_each_line():
    c, i = var("c", s32), var("i")
    store = Store.make(c, i * 4, Load.make(f32, c, 0))
    loop = For.make(i, 0, 4, store)
    k = Group.make("kernel", loop)
    printed = print_ir(k)
    assert len(printed.lines) == len(printed.nodes)
    assert printed.nodes[0] is k and printed.nodes[-1] is k
    assert printed.nodes[1] is loop and printed.nodes[3] is loop
    assert printed.nodes[2] is store
    assert printed.lines_of(store) == [2]


def test_reorders_and_eltwise_print_what_they_do():
    """A printed reorder says how many elements it moves from which layout to which (type and CuTe
    shape:stride); an element-wise op its count and parameters: the IR text stands on its own."""
    from kdd.core.ir.funcs import Eltwise, Reduce, Reorder
    from kdd.core.ir.types import f16
    from kdd.core.layout.layout import Layout

    src = Layout.dense(f16, (16, 32), [(0, 16), (1, 32)])
    dst = Layout.dense(f32, (16, 32), [(1, 2), (0, 16), (1, 16)])
    a, b = var("a"), var("b")
    text = print_ir(FuncCall.make(Reorder(src, dst), [a, 0, b, 0])).text
    assert text.strip() == "reorder[512 f16 (16,32):(32,1) -> f32 (16,(16,2)):(16,(1,256))](a, 0, b, 0)"
    one = Layout.dense(f32, (1, 32), [(1, 32)])
    assert "reduce[512 f16 (16,32):(32,1) -> f32 (1,32):(0,1) over 0]" in print_ir(
        FuncCall.make(Reduce(src, one, (0,)), [a, 0, b, 0])).text
    assert "eltwise.swish[64, alpha=1, beta=0](a, 0)" in print_ir(
        FuncCall.make(Eltwise("swish", 64, alpha=1.0), [a, 0])).text


def test_prints_sharing_one_memo_print_what_separate_prints_do():
    x, y = var("x"), var("y")
    shared = (x * 4 + y) // 16
    first = Let.make(y, x + 1, Store.make(var("out", s32), shared, shared + 1))
    second = Let.make(y, x + 2, Store.make(var("out", s32), shared * 2, shared))
    texts: dict = {}
    assert print_ir(first, texts).text == print_ir(first).text
    assert print_ir(second, texts).text == print_ir(second).text
    assert to_text(second, texts) == to_text(second)


def test_a_statement_shared_at_another_depth_prints_at_its_own_indentation():
    """A pass's output shares statements with its input, some moved into or out of a loop: with one memo
    for both prints, each line still has its own depth's indentation and points at its statement."""
    i, x, out = var("i"), var("x"), var("out", s32)
    store = Store.make(out, x, Load.make(s32, out, x) + i)
    call = FuncCall.make(Barrier())
    before = Group.make("kernel", Let.make(x, i * 4, seq(store, call)))
    after = Group.make("kernel", For.make(i, 0, 4, If.make(i.eq(0), Let.make(x, i * 4, seq(store, call)), call)))
    texts: dict = {}
    for ir in (before, after, before):
        shared, alone = print_ir(ir, texts), print_ir(ir)
        assert shared == alone
    assert [line for line in print_ir(after, texts).lines if "barrier" in line] == ["      barrier()",
                                                                                    "      barrier()"]
