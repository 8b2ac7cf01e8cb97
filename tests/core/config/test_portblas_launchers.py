"""Every launcher of portBLAS's ``intel_gpu.hpp`` and ``nvidia_gpu.hpp`` (tests/data/portblas/launchers.json,
their template arguments and conditions as the headers write them) builds and checks on a GEMM the header
dispatches to it: the call's problem in portBLAS's column-major layouts, ``[config] portblas`` the launcher's
arguments, run as code in kdd's simulators (Xe assembly in xesim for xehpg and xehpc, PTX in the PTX
simulator for sm_90) at a small shape that keeps the config's tiles (two blocks or loop trips where the bound
allows). The joint-matrix launchers take sycl::half inputs from float containers: the mapping binds
``fma_type = f16`` from ``inp_jmT``, A and B are rounded in registers before ``mma``, and the check's
reference rounds them alike."""
import json
from pathlib import Path

import pytest

from kdd.core.config.portblas import read_portblas
from kdd.core.config.portblas.binding import portblas_tags
from kdd.core.config.portblas.header import Call, Guard, Leaf, bound_args, dispatch
from kdd.core.config.tiling import derive_tiling
from kdd.core.engine import Engine, Source
from kdd.core.problem import problem_from_text
from kdd.core.problem.document import kernel_document
from kdd.core.problem.reduced import Block, reduce_problem
from kdd.core.spec import load_spec
from kdd.core.targets import get_target

DATA = json.loads((Path(__file__).parents[2] / "data" / "portblas" / "launchers.json").read_text())
TARGETS = {"intel_gpu.hpp": ("xehpg", "xehpc"), "nvidia_gpu.hpp": ("sm_90",)}
CHECK_MACS = 1 << 16       # the simulators' share of the suite: a few seconds a launcher


def _leaves(rows) -> list[Leaf]:
    return [Leaf(r["index"], r["overload"], tuple(Guard(**g) for g in r["guards"]), r["args"],
                 tuple(map(tuple, r["constants"])), r["line"]) for r in rows]


def _call(c) -> Call:
    env = {"SB_ENABLE_JOINT_MATRIX": "1"} if "SB_ENABLE_JOINT_MATRIX" in c["defines"] else {}
    return Call(c["m"], c["n"], c["k"], c["batch_size"], c["batch_type"], c["trans"][0] == "T",
                c["trans"][1] == "T", True, (c["types"],) * 3, frozenset(c["defines"]), env)


def _problem(c, types: str):
    shape = f"m{c['m']}n{c['n']}k{c['k']}" + (f"b{c['batch_size']}" if c["batch_size"] > 1 else "")
    tags = portblas_tags(1 if c["batch_size"] > 1 else 0, c["trans"][0] == "T", c["trans"][1] == "T",
                         c["batch_type"] == "interleaved")
    return problem_from_text(shape, op="gemm", types=types, tags=tags)


# `make test-fast` builds every third launcher of each header (and each one with a joint matrix); `make test`
# builds them all.
CASES = [pytest.param(header, row, hw, id=f"{header.partition('_')[0]}-{row['index']}-{hw}",
                      marks=() if i % 3 == 0 or "sycl::half" in row["args"] else pytest.mark.slow)
         for header, rows in DATA["headers"].items()
         for i, row in enumerate(r for r in rows if r["call"] is not None)
         for hw in TARGETS[header]]


def test_the_data_names_its_source_and_every_launcher_of_both_headers():
    assert DATA["source"]["commit"] == "6cf5e5892f51cf96103d002f2a148098dea80599"
    assert {h: sum(r["args"] is not None for r in rows) for h, rows in DATA["headers"].items()} == \
        {"intel_gpu.hpp": 20, "nvidia_gpu.hpp": 13}


def test_each_call_dispatches_to_its_launcher_and_only_complex_launchers_have_no_call():
    for header, rows in DATA["headers"].items():
        leaves = _leaves(rows)
        for row in rows:
            if row["call"] is not None:
                assert dispatch(leaves, _call(row["call"])).index == row["index"], (header, row["index"])
            elif row["args"] is not None:       # complex<T> elements: kdd has no complex GEMM
                assert any(g["text"] == "BLAS_ENABLE_COMPLEX" for g in row["guards"]), (header, row["index"])


@pytest.mark.parametrize("header, row, hw", CASES)
def test_every_launcher_builds_and_checks_on_a_gemm_it_is_dispatched(header, row, hw):
    c = row["call"]
    leaf = next(x for x in _leaves(DATA["headers"][header]) if x.index == row["index"])
    args = bound_args(leaf, _call(c))
    types = c["types"]
    mapping = read_portblas(args, _problem(c, types), get_target(hw))
    half_inputs = mapping.launcher.tile["inp_jmT"] == "sycl::half" and mapping.launcher.value("UseJointMatrix")
    assert (mapping.config.fma_type, mapping.sources.get("fma_type")) == \
        (("f16", "inp_jmT") if half_inputs and types == "f32" else (None, None))
    assert not [i for i in mapping.issues if i.severity == "error"], mapping.issues
    text = kernel_document(_problem(c, types), hw, portblas=args)
    spec, diagnostics = load_spec(text)
    assert spec is not None and not [d for d in diagnostics if d.severity == 1], diagnostics
    tiling = derive_tiling(spec.problem, spec.config)
    # a split K (tall-skinny) keeps its trips per group: two groups' worth of K at least
    bound = CHECK_MACS if not tiling.split_k else CHECK_MACS * 16
    reduction = reduce_problem(spec.problem, {d.name: Block(d.block, d.iter * d.tg) for d in tiling.dims},
                               bound=bound)
    result = Engine().check(Source(text), shape=reduction.shape.canonical(), exact=True)
    assert result["verdict"] == "ok", result
    assert ("tol_reason" in result) == (mapping.config.fma_type is not None)
    assert result["artifact"] == ("ptx" if hw == "sm_90" else "asm")
