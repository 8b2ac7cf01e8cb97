"""benchdnn batch files: every shipped input parses and round-trips; options and includes."""
from __future__ import annotations

from pathlib import Path

import pytest
from benchdnn_data import BENCHDNN as DATA

from kdd.core.ir.types import f16, s8, s32
from kdd.core.problem import (Bias, BatchFileError, ConvShape, Eltwise, GemmShape, Sum, parse_batch,
                              parse_shape, read_batch_file)

FILES = sorted(p for p in DATA.glob("*/*") if p.is_file())


def _descriptor_lines(path: Path) -> list[str]:
    """Non-comment, non-blank lines: each of the shipped files has one descriptor per line."""
    return [line.strip() for line in path.read_text().splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_the_inputs_are_there():
    assert {p.parent.name for p in FILES} == {"conv", "matmul"}
    assert len(FILES) == 9


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_line_parses_prints_and_parses_back(path):
    entries = read_batch_file(path)
    assert [e.text for e in entries] == _descriptor_lines(path)
    expected = ConvShape if path.parent.name == "conv" else GemmShape
    lines = path.read_text().splitlines()
    for e in entries:
        assert lines[e.line - 1][e.column - 1:].startswith(e.text)
        shape = parse_shape(e.text)
        assert isinstance(shape, expected) and e.problem.shape == shape
        canonical = shape.canonical()
        again = parse_shape(canonical)
        assert again == shape, (e.text, canonical)
        assert again.canonical() == canonical
        assert e.problem.prop == "fwd" and str(e.problem.types) == "f32"


def test_known_entries_of_the_shipped_files():
    resnet = {e.problem.shape.name: e for e in read_batch_file(DATA / "conv/shapes_resnet_50")}
    conv1 = resnet["resnet_50:conv1"].problem.shape
    assert (conv1.mb, conv1.ic, conv1.ih, conv1.oc, conv1.oh, conv1.kh, conv1.sh, conv1.ph) == \
        (50, 3, 224, 64, 112, 7, 2, 3)
    assert resnet["resnet_50:conv1"].line == 3
    bert = read_batch_file(DATA / "matmul/shapes_bert")
    assert bert[0].problem.shape == GemmShape((12,), 128, 128, 64, "encoder:QK_matmul:12")
    assert bert[0].problem.gemm_dims().B == 12


def test_options_apply_to_the_descriptors_that_follow(tmp_path):
    src = tmp_path / "b"
    src.write_text(
        "# header\n"
        "ic3oc3ih5kh3\n"
        "--dir=BWD_D --dt=f16:f16:f16 --stag=axb --wtag=axcb --dtag=axb\n"
        "ic4oc4ih5kh3   # trailing comment\n"
        "--dir=FWD_B --attr-post-ops=sum:0.5+relu --mb=7 --engine=gpu\n"
        "\n"
        "mb32ic4oc4ih5kh3\n"
        "--reset\n"
        "ic5oc5ih5kh3\n")
    a, b, c, d = read_batch_file(src)
    assert (a.problem.prop, str(a.problem.types), dict(a.options)) == ("fwd", "f32", {})
    assert (b.problem.prop, b.problem.types.src, b.line, b.column) == ("bwd_d", f16, 4, 1)
    assert dict(b.problem.tags) == {"src": "axb", "wei": "axcb", "dst": "axb"}
    assert c.problem.prop == "fwd" and c.problem.post_ops == (Bias(), Sum(0.5), Eltwise("relu"))
    assert c.problem.shape.mb == 7 and parse_shape(c.text).mb == 32  # --mb overrides
    assert c.options["engine"] == "gpu" and c.options["dt"] == "f16:f16:f16"
    assert dict(d.options) == {} and d.problem.prop == "fwd" and d.problem.post_ops == ()


def test_includes_are_relative_and_scoped(tmp_path):
    sub = tmp_path / "inputs"
    sub.mkdir()
    (sub / "shapes").write_text("--dt=s8:s8:s32\nic8oc8ih5kh3\n")
    (tmp_path / "top").write_text(
        "--dir=FWD_I\n--batch=inputs/shapes\nic9oc9ih5kh3\n--matmul\n2x3:3x4\nm2n2k2\n")
    inner, after, g1, g2 = read_batch_file(tmp_path / "top")
    assert inner.path == sub / "shapes" and inner.line == 2
    assert inner.problem.types.src == s8 and inner.problem.types.acc == s32
    assert inner.problem.prop == "fwd"  # inherited --dir
    assert "dt" not in after.options  # the included file's --dt does not leak back
    assert g1.problem.op == g2.problem.op == "gemm"


def test_continuations_quotes_and_comments():
    entries = parse_batch(
        '--attr-post-ops="bias+relu" \\\n'
        'ic3oc3ih5\\\nkh3 ic4oc4ih5kh3n"a # b"   # real comment\n', "mem")
    assert [e.text for e in entries] == ["ic3oc3ih5kh3", 'ic4oc4ih5kh3n"a # b"']
    assert entries[0].problem.post_ops == (Bias(), Eltwise("relu"))
    assert entries[0].options["attr-post-ops"] == "bias+relu"
    assert (entries[0].line, entries[1].line, entries[1].column) == (2, 3, 5)
    assert entries[1].problem.shape.name == "a # b"


@pytest.mark.parametrize("source, line, span, words", [
    ("ic3oc3ih5kh3\n  ic3oc3xy5\n", 2, "xy5", "unknown entry 'xy5'"),
    ("--dt=f16:f61:f16\n", 1, "f61", "--dt: unknown data type 'f61'"),
    ("--dir=SIDEWAYS\n", 1, "SIDEWAYS", "unknown direction"),
    ("--mb=x\n", 1, "x", "non-negative integer"),
    ("--attr-post-ops=relu+frob\n", 1, "frob", "unknown post-op"),
    ("-x\n", 1, "-x", "unknown argument"),
    ("--batch=nope\n", 1, "--batch=nope", "not found"),
    ('ic3oc3ih5kh3n"a\n', 1, 'ic3oc3ih5kh3n"a', "unterminated quote"),
    ("--matmul --dir=BWD_D\n2x3:3x4\n", 2, "2x3:3x4", "forward only"),
    ("--matmul --mb=4\n2x3:3x4\n", 2, "2x3:3x4", "--mb applies to convolution"),
    ("--dir=BWD_D --attr-post-ops=relu\nic3oc3ih5kh3\n", 2, "ic3oc3ih5kh3", "does not apply"),
])
def test_errors_point_at_file_line_and_token(source, line, span, words):
    with pytest.raises(BatchFileError) as info:
        parse_batch(source, "/tmp/x/batch")
    e = info.value
    assert e.line == line and str(e.path) == "/tmp/x/batch"
    assert source.splitlines()[line - 1][e.start:e.end] == span
    assert words in e.message
    assert str(e).startswith(f"/tmp/x/batch:{line}:{e.start + 1}: ")


def test_self_inclusion_is_an_error(tmp_path):
    (tmp_path / "a").write_text("--batch=b\n")
    (tmp_path / "b").write_text("ic3oc3ih5kh3\n--batch=a\n")
    with pytest.raises(BatchFileError, match="includes itself") as info:
        read_batch_file(tmp_path / "a")
    assert info.value.path == tmp_path / "b" and info.value.line == 2
