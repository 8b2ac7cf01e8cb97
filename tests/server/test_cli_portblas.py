"""``kdd portblas HEADER``: the launchers of a backend header with their conditions, and with ``--shape`` the
kernel config its dispatch picks, which kdd then reads without an error; bad input exits 2."""
from kdd.core.spec import load_spec
from kdd.core.spec.diagnostics import Severity
from kdd.server.cli import main
from portblas_header import HEADER


def _header(tmp_path):
    path = tmp_path / "intel_gpu.hpp"
    path.write_text(HEADER)
    return path


def test_the_listing_shows_every_return_with_its_conditions(tmp_path, capsys):
    assert main(["portblas", str(_header(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert out.startswith("intel_gpu.hpp: 6 launchers, 1 skips in 2 _gemm overloads")
    assert "  #3 (line " in out and "      #ifdef GEMM_TALL_SKINNY_SUPPORT\n" in out
    assert "      if batch_size == 1 && _K >= 4096 && _M * _N <= 4096\n" in out
    assert "      constexpr wg = sizeof(element_in_t) == 8 ? 8 : 16\n" in out
    assert "      if !(_M <= 128 && _N <= 128)\n      if _t_b && !_t_a\n" in out
    assert "      return _dependencies (no launcher)" in out


def test_a_shape_writes_the_config_the_dispatch_picks(tmp_path, capsys):
    out_file = tmp_path / "picked.kernel.toml"
    assert main(["portblas", str(_header(tmp_path)), "--shape", "m32n32k8192", "--trans", "NT", "--beta", "0.5",
                 "--out", str(out_file)]) == 0
    text = out_file.read_text()
    assert "# portBLAS intel_gpu.hpp, launcher #3" in text and "#   constexpr wg = " in text
    assert 'wei = "ab"' in text and 'src = "ba"' in text and 'post_ops = ["sum:0.5"]' in text
    assert 'hw = "xehpg"' in text and "Tile<1, 1, 16, 16>" in text and "gemm_algorithm_t::tall_skinny" in text
    spec, diagnostics = load_spec(text)
    assert spec is not None and not [d for d in diagnostics if d.severity == Severity.ERROR]
    assert spec.user_config.global_reduction is True and spec.user_config.loop is not None
    assert main(["portblas", str(_header(tmp_path)), "--shape", "m32n32k8192", "--undef",
                 "GEMM_TALL_SKINNY_SUPPORT", "--target", "sm_90"]) == 0
    text = capsys.readouterr().out
    assert "launcher #4" in text and 'hw = "sm_90"' in text and "Tile<4, 4, 8, 8>" in text


def test_bad_input_exits_2(tmp_path, capsys):
    header = _header(tmp_path)
    assert main(["portblas", str(tmp_path / "missing.hpp")]) == 2
    assert main(["portblas", str(header), "--shape", "m32n32x"]) == 2
    assert main(["portblas", str(header), "--shape", "m32n32k32", "--trans", "NX"]) == 2
    empty = tmp_path / "empty.hpp"
    empty.write_text("// nothing\n")
    assert main(["portblas", str(empty)]) == 2
    err = capsys.readouterr().err
    assert "missing.hpp" in err and "--trans 'NX'" in err and "no _gemm overload" in err


def _joint_header(tmp_path):
    joint = (HEADER.replace("Tile<4, 8, 16, 8>", "Tile<4, 8, 16, 8, 16, 2, 1, 1, 1, 1, 16, 16, 16, sycl::half, float>")
             .replace("gemm_batch_type_t::strided)>::_select_gemm", "gemm_batch_type_t::strided), true>::_select_gemm"))
    path = tmp_path / "nvidia_gpu.hpp"
    path.write_text(joint)
    return path


def test_a_joint_matrix_launcher_on_f32_writes_a_config_that_rounds_a_and_b_to_half(tmp_path):
    out_file = tmp_path / "jm.kernel.toml"
    assert main(["portblas", str(_joint_header(tmp_path)), "--shape", "m512n512k64", "--types", "f32",
                 "--out", str(out_file)]) == 0
    text = out_file.read_text()
    assert 'types = "f32"' in text and "sycl::half, float>" in text and 'hw = "sm_90"' in text
    spec, diagnostics = load_spec(text)
    assert spec is not None and not [d for d in diagnostics if d.severity == Severity.ERROR]
    assert spec.config.fma == "mma" and spec.config.fma_type == "f16"     # bound from inp_jmT


def test_a_launcher_kdd_cannot_map_is_written_and_exits_2(tmp_path, capsys):
    path = _joint_header(tmp_path)
    out_file = tmp_path / "jm.kernel.toml"
    assert main(["portblas", str(path), "--shape", "m512n512k64", "--types", "bf16", "--out", str(out_file)]) == 2
    assert "sycl::half, float>" in out_file.read_text() and 'hw = "sm_90"' in out_file.read_text()
    assert "inp_jmT: joint_matrix inputs sycl::half from bf16:bf16 A/B" in capsys.readouterr().err
    assert main(["portblas", str(path), "--shape", "m512n512k64", "--types", "f16:f16:f32"]) == 0
