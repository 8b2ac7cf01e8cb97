"""A backend header written for the tests in portBLAS's style: two ``_gemm`` overloads (not half, half), a
skipped symmetric case, an interleaved launcher, a tall-skinny section under ``#ifdef`` with a local
``constexpr``, and an if / else if / else chain."""


def _launcher(wg: str, tile: str, memory: str, algorithm: str, batch: str) -> str:
    return (f"return blas::Gemm_Launcher<\n          container_0_t, container_1_t, container_2_t, {wg}, false, false,\n"
            f"          false, 64, {tile}, _t_a, _t_b, s_a, s_b,\n"
            f"          static_cast<int>(gemm_memory_t::{memory}),\n"
            f"          static_cast<int>(gemm_algorithm_t::{algorithm}),\n"
            f"          static_cast<int>(gemm_vectorization_t::full), is_beta_zero, 4,\n"
            f"          static_cast<int>(gemm_batch_type_t::{batch})>::_select_gemm(sb_handle, _M, _N, _K,\n"
            f"              _alpha, _a, _lda, _stridea, _b, _ldb, _strideb, _beta, _c, _ldc, _stridec,\n"
            f"              batch_size, _dependencies);")


SIGNATURE = ("(sb_handle_t& sb_handle, index_t _M, index_t _N, index_t _K, element_t _alpha, container_0_t _a,\n"
             "      index_t _lda, index_t _stridea, container_1_t _b, index_t _ldb, index_t _strideb,\n"
             "      element_t _beta, container_2_t _c, index_t _ldc, index_t _stridec, index_t batch_size,\n"
             "      gemm_batch_type_t batch_type, const typename sb_handle_t::event_t& _dependencies)")
TEMPLATE = ("template <bool _t_a, bool _t_b, bool s_a, bool s_b, bool is_beta_zero,\n"
            "          typename sb_handle_t, typename container_0_t, typename container_1_t,\n"
            "          typename container_2_t, typename element_t, typename index_t>\n")

HEADER = f"""#ifndef PORTBLAS_GEMM_TEST_BACKEND_HPP
#define PORTBLAS_GEMM_TEST_BACKEND_HPP
namespace blas {{
namespace gemm {{
namespace backend {{
{TEMPLATE}typename std::enable_if<
    !is_half<typename ValueType<container_0_t>::type>::value,
    typename sb_handle_t::event_t>::type
_gemm{SIGNATURE} {{
  // symmetric operands are another backend's business
  if constexpr (s_a || s_b) {{
    return _dependencies;
  }} else {{
    if (batch_type == gemm_batch_type_t::interleaved) {{
      {_launcher("64", "Tile<2, 2, 4, 4, 1, 1, 1, 1, 4, 4>", "no_local", "standard", "interleaved")}
    }}
#ifdef GEMM_TALL_SKINNY_SUPPORT
    if (batch_size == 1 && _K >= 4096 && _M * _N <= 4096) {{
      constexpr int wg = sizeof(element_in_t) == 8 ? 8 : 16;
      {_launcher("256", "Tile<1, 1, wg, wg>", "local", "tall_skinny", "strided")}
    }}
#endif
    if (_M <= 128 && _N <= 128) {{
      {_launcher("64", "Tile<4, 4, 8, 8>", "local", "standard", "strided")}
    }} else if (_t_b && !_t_a) {{
      {_launcher("64", "Tile<8, 8, 8, 8>", "no_local", "standard", "strided")}
    }} else {{
      {_launcher("64", "Tile<4, 8, 16, 8>", "local", "standard", "strided")}
    }}
  }}
}}

/* half */
{TEMPLATE}typename std::enable_if<is_half<typename ValueType<container_0_t>::type>::value,
                        typename sb_handle_t::event_t>::type
_gemm{SIGNATURE} {{
  {_launcher("64", "Tile<4, 8, 16, 8>", "local", "standard", "strided")}
}}
}}  // namespace backend
}}  // namespace gemm
}}  // namespace blas
#endif
"""
