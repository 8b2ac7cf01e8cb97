"""``[config] portblas``: a pasted ``Gemm_Launcher``'s arguments read with their spans (both forms), the
dispatcher's variables bound from the problem, the knobs per target, diagnostics on the offending argument,
and the hover's mapping argument by argument."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.config import ConfigError
from kdd.core.config.portblas import parse_launcher, read_portblas
from kdd.core.config.portblas.binding import bind_problem, portblas_tags
from kdd.core.problem import problem_from_text
from kdd.core.spec import load_spec
from kdd.core.spec.diagnostics import Severity
from kdd.core.spec.hover import hover
from kdd.core.targets import get_target

SEED = ("64, false, false, false, 64, Tile<8, 8, 8, 8>, _t_a, _t_b, static_cast<int>(gemm_memory_t::no_local), "
        "static_cast<int>(gemm_algorithm_t::standard), static_cast<int>(gemm_vectorization_t::partial), "
        "is_beta_zero, 1, static_cast<int>(gemm_batch_type_t::strided)")
CURRENT = ("container_0_t, container_1_t, container_2_t, 64, true, false, false, 64, Tile<4, 4, 8, 8>, _t_a, _t_b, "
           "s_a, s_b, static_cast<int>(gemm_memory_t::local), static_cast<int>(gemm_algorithm_t::standard), "
           "static_cast<int>(gemm_vectorization_t::full), is_beta_zero, 4, "
           "static_cast<int>(gemm_batch_type_t::strided)")
JOINT = ("container_0_t, container_1_t, container_2_t, 128, false, true, true, 128, "
         "Tile<4, 8, 16, 8, 16, 2, 1, 1, 1, 1, 16, 16, 16, sycl::half, float>, _t_a, _t_b, s_a, s_b, "
         "static_cast<int>(gemm_memory_t::local), static_cast<int>(gemm_algorithm_t::standard), "
         "static_cast<int>(gemm_vectorization_t::none), is_beta_zero, 1, "
         "static_cast<int>(gemm_batch_type_t::strided), true")
TALL = ("container_0_t, container_1_t, container_2_t, 32, true, true, true, 64, Tile<2, 1, 8, 4>, _t_a, _t_b, s_a, "
        "s_b, static_cast<int>(gemm_memory_t::local), static_cast<int>(gemm_algorithm_t::tall_skinny), "
        "static_cast<int>(gemm_vectorization_t::none), is_beta_zero, 4, static_cast<int>(gemm_batch_type_t::strided)")
COLUMN_MAJOR = {"src": "ba", "wei": "ba", "dst": "ba"}


def _doc(launcher: str, tags=COLUMN_MAJOR, hw="xehpg", shape="m256n256k128", types="f32", extra="") -> str:
    tag_lines = "".join(f'{t} = "{v}"\n' for t, v in tags.items())
    return (f'[problem]\nop = "gemm"\nshape = "{shape}"\ntypes = "{types}"\n{tag_lines}\n[target]\nhw = "{hw}"\n\n'
            f'[config]\nportblas = "{launcher}"\n{extra}')


def test_both_forms_name_every_argument_and_fill_portblas_defaults():
    seed, current = parse_launcher(SEED), parse_launcher(JOINT)
    assert seed.form == "seed" and current.form == "current"
    assert seed.value("GemmMemoryType") == "no_local" and seed.value("TransA") == "_t_a"
    assert seed.value("UseJointMatrix") is False and set(seed.defaulted) == {"SymmA", "SymmB", "UseJointMatrix"}
    assert seed.tile["WgRows"] == 8 and seed.tile["ItemBatchs"] == 1 and seed.tile["inp_jmT"] == "float"
    assert current.value("UseJointMatrix") is True and current.tile["jm_K"] == 16
    assert current.tile["inp_jmT"] == "sycl::half" and current.tile["SgRows"] == 16
    start, end = seed.span("ClSize")
    assert SEED[start:end] == "64" and SEED[slice(*seed.span("WgCols"))] == "8"
    wrapped = parse_launcher(f"blas::Gemm_Launcher<{SEED}>")
    assert wrapped.value("VectorSize") == 1


@pytest.mark.parametrize("text, fragment, message", [
    (SEED.replace("_t_b,", "_t_c,"), "_t_c", "TransB must be true or false or the dispatcher's '_t_b'"),
    (SEED.replace("Tile<8, 8, 8, 8>", "Tile<8, 8, 8, 8, 1, 1, 1, 1, 1, 1, 1, 1, 1, float, float, 2>"), "2",
     "Tile takes at most 15 parameters"),
    (SEED.replace("no_local", "nolocal"), "static_cast<int>(gemm_memory_t::nolocal)",
     "GemmMemoryType must be static_cast<int>(gemm_memory_t::local|no_local|subgroup)"),
    (SEED.replace("Tile<8, 8, 8, 8>", "Tile<8, wg_size, 8, 8>"), "wg_size", "not a name kdd binds"),
    (SEED + ", 7", "7", "this has 15"),
    (SEED.replace("64, false", "64, (false", 1), "(", "'(' is never closed"),
    (SEED.replace("Tile<8, 8, 8, 8>", "Tile<8, 8, 8, 8>>"), ">", "unbalanced '>'"),
])
def test_a_bad_argument_is_an_error_on_that_argument(text, fragment, message):
    with pytest.raises(ConfigError) as err:
        parse_launcher(text)
    assert message in err.value.message
    assert text[err.value.start:err.value.end] == fragment


def test_the_dispatcher_variables_come_from_the_layouts_and_the_post_ops():
    p = problem_from_text("m64n48k32", tags={"src": "ab", "wei": "ba", "dst": "ba"}, post_ops=["scale:2", "sum:0.5"])
    b = bind_problem(p)
    assert b.values["_t_a"] is True and b.values["_t_b"] is False and b.values["is_beta_zero"] is False
    assert (b.values["alpha"], b.values["beta"]) == (2.0, 0.5) and not b.errors
    batched = problem_from_text("m8n8k8b4", tags=portblas_tags(1, False, True, True))
    assert bind_problem(batched).values["batch_type"] == "interleaved"
    assert portblas_tags(1, False, True, False) == {"src": "acb", "wei": "abc", "dst": "acb"}
    row_major_c = bind_problem(problem_from_text("m8n8k8", tags={"src": "ba", "wei": "ba", "dst": "ab"}))
    assert "portBLAS writes C column-major" in row_major_c.errors["C"]


def test_the_seed_launcher_maps_per_target():
    p = problem_from_text("m256n256k128", tags=COLUMN_MAJOR)
    xe = read_portblas(SEED, p, get_target("xehpg")).config
    assert (xe.fma, xe.simd, str(xe.iter), str(xe.tg), xe.slm.bufs, xe.global_reduction) == \
        ("mad", 16, "m32n32k16", "m2n2", 0, False)
    nv = read_portblas(SEED, p, get_target("sm_90")).config
    assert (nv.fma, nv.simd, str(nv.iter), str(nv.tg)) == ("fma", 32, "m64n32k16", "n2")
    local = read_portblas(CURRENT, p, get_target("xehpc")).config
    assert local.slm.bufs == 2 and local.pad_slm is False     # DoubleBuffer, no bank-conflict padding


def test_tall_skinny_splits_k_over_portblas_cube_depth():
    # 1 group of 16 x 4 and 4 x 512 compute units: 2048 groups over K, 4096 / (16 x 2048) -> 1 trip each
    m = read_portblas(TALL, problem_from_text("m16n4k4096", tags=COLUMN_MAJOR), get_target("xehpg"))
    assert str(m.config.loop) == "k1" and m.config.global_reduction is True
    assert str(m.config.iter) == "m8n16k16"             # N 4 widened to one mad's 16 lanes
    step = next(s for s in m.steps if s.param == "GemmAlgorithm")
    assert "2048 groups" in step.meaning and "loop k1" in step.kdd


def test_joint_matrix_is_mma_and_half_inputs_from_float_containers_round_a_and_b():
    m = read_portblas(JOINT, problem_from_text("m256n256k64", tags=COLUMN_MAJOR), get_target("sm_90"))
    assert m.config.fma == "mma" and m.config.fma_type == "f16" and m.sources["fma_type"] == "inp_jmT"
    assert not m.issues and "fma_type = f16" in next(s.kdd for s in m.steps if s.param == "inp_jmT")
    assert str(m.config.iter).endswith("k32")           # ClSize 128 / sizeof(float): portBLAS's cl_elems
    half = read_portblas(JOINT, problem_from_text("m256n256k64", types="f16:f16:f32", tags=COLUMN_MAJOR),
                         get_target("sm_90"))
    assert not half.issues and half.config.fma_type is None
    bf16 = read_portblas(JOINT, problem_from_text("m256n256k64", types="bf16:bf16:f32", tags=COLUMN_MAJOR),
                         get_target("sm_90"))
    assert [(i.param, i.severity) for i in bf16.issues] == [("inp_jmT", "error")]


def test_the_spec_takes_the_knobs_and_diagnoses_the_argument():
    spec, diagnostics = load_spec(_doc(SEED))
    assert not [d for d in diagnostics if d.severity == Severity.ERROR]
    assert spec.user_config.fma == "mad" and spec.knob_sources["iter"].in_portblas
    text = _doc(SEED.replace("_t_a,", "true,"))
    _, diagnostics = load_spec(text)
    (err,) = [d for d in diagnostics if d.severity == Severity.ERROR]
    line = text.split("\n")[err.range.start.line]
    assert line[err.range.start.character:err.range.end.character] == "true"
    assert "TransA is true but the problem says _t_a = false" in err.message
    _, diagnostics = load_spec(_doc(SEED, extra='iter = "m8n16k8"\n'))
    assert any("'iter' is set both here and by portblas" in d.message for d in diagnostics)
    _, diagnostics = load_spec(_doc(SEED, tags={}))
    assert any("src = 'any' is not a portBLAS layout" in d.message for d in diagnostics)


def test_hover_explains_the_argument_under_the_cursor_and_the_whole_mapping():
    text = _doc(SEED)
    lines = text.split("\n")
    row = next(i for i, line in enumerate(lines) if line.startswith("portblas"))
    tile = lines[row].index("Tile<") + 2
    out = hover(text, row, tile)
    assert out.startswith("**TileT = `Tile<8, 8, 8, 8>`**") and "iter m32 n32" in out
    out = hover(text, row, lines[row].index("_t_a") + 1)
    assert "_t_a = false: src = 'ba': A column-major" in out
    assert "| `iter` | `i=m32n32k16` | `ItemRows` |" in out and "**Tiling**" in out


def test_naive_is_one_element_per_lane_without_local_memory():
    naive = SEED.replace("gemm_algorithm_t::standard", "gemm_algorithm_t::naive")
    p = problem_from_text("m64n64k64", tags=COLUMN_MAJOR)
    xe = read_portblas(naive, p, get_target("xehpg")).config
    assert (str(xe.iter), str(xe.tg), xe.slm.bufs) == ("n16", "n4", 0)
    nv = read_portblas(naive, p, get_target("sm_90")).config
    assert (str(nv.iter), str(nv.tg), nv.fma) == ("n32", "n2", "fma")


def test_interleaved_batches_put_the_lanes_along_the_batch():
    interleaved = ("container_0_t, container_1_t, container_2_t, 64, false, false, false, 64, "
                   "Tile<4, 4, 4, 4, 1, 1, 1, 1, 4, 4>, _t_a, _t_b, s_a, s_b, "
                   "static_cast<int>(gemm_memory_t::no_local), static_cast<int>(gemm_algorithm_t::standard), "
                   "static_cast<int>(gemm_vectorization_t::full), is_beta_zero, 4, "
                   "static_cast<int>(gemm_batch_type_t::interleaved)")
    p = problem_from_text("m32n32k16b16", tags=portblas_tags(1, False, False, True))
    m = read_portblas(interleaved, p, get_target("xehpg"))
    assert (str(m.config.iter), str(m.config.tg), m.config.slm.bufs) == ("b016m4n4", "m4n4", 0) and not m.issues
    strided = problem_from_text("m32n32k16b16", tags=portblas_tags(1, False, False, False))
    (issue,) = read_portblas(interleaved, strided, get_target("xehpg")).issues
    assert issue.param == "BatchType" and "the problem's batch is strided" in issue.message


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_any_edit_of_a_launcher_maps_or_is_an_error_inside_the_text(data):
    base = data.draw(st.sampled_from([SEED, CURRENT, JOINT, TALL]))
    cut = data.draw(st.integers(0, len(base)))
    end = data.draw(st.integers(cut, min(len(base), cut + 12)))
    text = base[:cut] + data.draw(st.text("<>(),:_ 0189abtTfx-", max_size=6)) + base[end:]
    hw = data.draw(st.sampled_from(["xehpg", "xehpc", "sm_90"]))
    try:
        mapping = read_portblas(text, problem_from_text("m64n32k48", tags=COLUMN_MAJOR), get_target(hw))
    except ConfigError as err:
        assert 0 <= err.start < err.end <= max(len(text), 1), (text, err.message)
        return
    for issue in mapping.issues:
        start, end = mapping.launcher.span(issue.param)
        assert 0 <= start < end <= len(text)


def test_a_target_override_maps_the_launcher_again_for_that_target():
    from kdd.core.engine import Engine, Source

    engine = Engine()
    compiled = engine.compile(Source(_doc(SEED, shape="m64n64k32")), "stats", target="sm_90")
    assert compiled["ok"] and compiled["config"].startswith("fma=fma simd=32")
    jm = engine.compile(Source(_doc(JOINT, hw="sm_90", shape="m64n64k32", types="f16:f16:f32")), "stats",
                        target="xehpc")
    assert jm["ok"] and jm["config"].startswith("fma=dpas simd=16")
    rounded = engine.compile(Source(_doc(JOINT, hw="sm_90", shape="m64n64k32")), "stats", target="xehpc")
    assert rounded["ok"] and rounded["config"].startswith("fma=dpas simd=16") and "fma-type=f16" in rounded["config"]
