"""A portBLAS backend header read as its launchers with the conditions on their paths as written, the
dispatch of a call through them, and the C conditions' evaluator against Python's own arithmetic."""
import operator

from hypothesis import given
from hypothesis import strategies as st

from kdd.core.config.portblas.cexpr import evaluate
from kdd.core.config.portblas.header import Call, bound_args, dispatch, read_header

from portblas_header import HEADER  # tests/ is on the path

LEAVES = read_header(HEADER)


def _call(m, n, k, types="f32", batch=1, batch_type="strided", trans="NN", defines=("GEMM_TALL_SKINNY_SUPPORT",)):
    return Call(m, n, k, batch, batch_type, trans[0] == "T", trans[1] == "T", True, (types,) * 3,
                frozenset(defines), {})


def test_every_return_is_read_with_its_conditions_as_written():
    assert [leaf.args is None for leaf in LEAVES] == [True, False, False, False, False, False, False]
    skip, interleaved, tall, small, nt, other, half = LEAVES
    assert [str(g) for g in skip.guards] == ["s_a || s_b"]
    assert [str(g) for g in tall.guards] == ["#ifdef GEMM_TALL_SKINNY_SUPPORT", "!(s_a || s_b)",
                                             "batch_size == 1 && _K >= 4096 && _M * _N <= 4096"]
    assert tall.constants == (("wg", "sizeof(element_in_t) == 8 ? 8 : 16"),)
    assert [str(g) for g in other.guards] == ["!(s_a || s_b)", "!(_M <= 128 && _N <= 128)", "!(_t_b && !_t_a)"]
    assert interleaved.args.startswith("container_0_t, container_1_t, container_2_t, 64, false, false, false, 64, "
                                       "Tile<2, 2, 4, 4, 1, 1, 1, 1, 4, 4>, _t_a, _t_b")
    assert half.overload == "is_half<typename ValueType<container_0_t>::type>::value" and half.guards == ()
    lines = HEADER.split("\n")
    assert lines[skip.line - 1].strip() == "return _dependencies;"
    assert lines[interleaved.line - 1].strip() == "return blas::Gemm_Launcher<"


def test_a_call_is_dispatched_to_the_first_return_whose_path_holds():
    def picked(*args, **kw):
        return dispatch(LEAVES, _call(*args, **kw)).index
    assert picked(64, 64, 64) == 4
    assert picked(64, 64, 64, batch=4, batch_type="interleaved") == 2
    assert picked(16, 16, 8192) == 3 and picked(16, 16, 8192, defines=()) == 4
    assert picked(512, 512, 64, trans="NT") == 5 and picked(512, 512, 64, trans="TT") == 6
    assert picked(512, 512, 64, types="f16") == 7
    tall = LEAVES[2]
    assert "Tile<1, 1, 16, 16>" in bound_args(tall, _call(16, 16, 8192))
    assert "Tile<1, 1, 8, 8>" in bound_args(tall, _call(16, 16, 8192, types="f64"))


_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "<": operator.lt, "<=": operator.le,
        ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne}
_PRECEDENCE = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 4, "<=": 4, ">": 4, ">=": 4, "+": 5, "-": 5, "*": 6}


def _exprs():
    leaf = st.one_of(st.integers(0, 50).map(lambda v: (str(v), v)),
                     st.sampled_from(["_M", "_N", "_K"]).map(lambda n: (n, {"_M": 7, "_N": 12, "_K": 33}[n])))

    def grow(sub):
        binary = st.tuples(sub, st.sampled_from(list(_PRECEDENCE)), sub).map(_binary)
        negate = sub.map(lambda e: (f"!({e[0]})", not e[1]))
        choice = st.tuples(sub, sub, sub).map(lambda t: (f"({t[0][0]}) ? ({t[1][0]}) : ({t[2][0]})",
                                                         t[1][1] if t[0][1] else t[2][1]))
        return st.one_of(binary, negate, choice)
    return st.recursive(leaf, grow, max_leaves=12)


def _binary(t):
    (a, av), op, (b, bv) = t
    if op == "&&":
        value = bool(av) and bool(bv)
    elif op == "||":
        value = bool(av) or bool(bv)
    else:
        value = _OPS[op](av, bv)
    return f"({a}) {op} ({b})", value


@given(_exprs())
def test_conditions_evaluate_as_python_computes_them(expr):
    text, want = expr
    got = evaluate(text, {"_M": 7, "_N": 12, "_K": 33}, lambda t: False, lambda t: 4)
    assert got == want


def test_c_precedence_without_parentheses():
    names = {"_M": 100, "_N": 3, "_K": 5000, "batch_size": 1}
    assert evaluate("batch_size == 1 && _K >= 4096 && _M * _N <= 16384 || _K < 0", names, None, None) is True
    assert evaluate("_M > 64 && _N > 64 || !_N", names, None, None) is False
    assert evaluate("2 + 3 * 4 == 14 ? 1 : 0", names, None, None) == 1


SEED_STYLE = """
template <bool _t_a, bool _t_b, bool is_beta_zero, typename sb_handle_t,
          typename container_0_t, typename container_1_t,
          typename container_2_t, typename element_t, typename index_t>

typename sb_handle_t::event_t _gemm(
    sb_handle_t& sb_handle, index_t _M, index_t _N, index_t _K, element_t _alpha,
    container_0_t _a, index_t _lda, container_1_t _b, index_t _ldb,
    element_t _beta, container_2_t _c, index_t _ldc, index_t batch_size,
    gemm_batch_type_t batch_type) {
#if defined(NAIVE_GEMM)
  return blas::Gemm_Launcher<
      64, false, false, false, 64, Tile<8, 8, 8, 8>, _t_a, _t_b,
      static_cast<int>(gemm_memory_t::no_local),
      static_cast<int>(gemm_algorithm_t::naive),
      static_cast<int>(gemm_vectorization_t::partial), is_beta_zero, 1,
      static_cast<int>(
          gemm_batch_type_t::strided)>::template _select_gemm(sb_handle, _M, _N, _K,
                                                              _alpha, _a, _lda,
                                                              _b, _ldb, _beta,
                                                              _c, _ldc,
                                                              batch_size);
#else
  if (_M <= 128 && _N <= 128 && _K <= 128) {
    return blas::Gemm_Launcher<
        64, false, false, false, 64, Tile<2, 2, 8, 8>, _t_a, _t_b,
        static_cast<int>(gemm_memory_t::no_local),
        static_cast<int>(gemm_algorithm_t::standard),
        static_cast<int>(gemm_vectorization_t::full), is_beta_zero, 2,
        static_cast<int>(
            gemm_batch_type_t::strided)>::template _select_gemm(sb_handle, _M, _N, _K, _alpha, _a,
                                                                _lda, _b, _ldb, _beta, _c, _ldc, batch_size);
  }
#endif
}
"""


def test_the_seeds_header_form_reads_its_preprocessor_branches():
    naive, small = read_header(SEED_STYLE)
    assert [str(g) for g in naive.guards] == ["#ifdef NAIVE_GEMM"]
    assert [str(g) for g in small.guards] == ["#ifndef NAIVE_GEMM", "_M <= 128 && _N <= 128 && _K <= 128"]
    assert naive.args.startswith("64, false, false, false, 64, Tile<8, 8, 8, 8>, _t_a, _t_b, static_cast<int>(")
    leaves = [naive, small]
    assert dispatch(leaves, _call(64, 64, 64)) is small and dispatch(leaves, _call(256, 64, 64)) is None
    assert dispatch(leaves, _call(256, 64, 64, defines=("NAIVE_GEMM",))) is naive
