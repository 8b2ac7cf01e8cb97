"""Documents a hostile user writes: deep nesting, huge texts and numbers, binary, special files.

Each must come back from ``load_spec`` as an error diagnostic with a position
(never an exception, never a spec), quickly: the reader refuses what is too
large or too deep instead of working through it.
"""
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.spec.diagnostics import Severity
from kdd.core.spec.document import Position, parse_document
from kdd.core.spec.extends import read_file
from kdd.core.spec.kernel_spec import load_spec
from kdd.core.spec.limits import MAX_DOCUMENT_CHARS, MAX_NESTING

HEAD = '[problem]\nop = "gemm"\nshape = "m16n16k16"\n[target]\nhw = "xehpg"\n'


def errors(text, path=None, **kwargs):
    spec, diagnostics = load_spec(text, path, **kwargs)
    found = [d for d in diagnostics if d.severity == Severity.ERROR]
    end = parse_document(text).lines.end
    for d in diagnostics:
        assert Position(0, 0) <= d.range.start <= d.range.end <= end, d
        assert d.code != "internal", d
    assert found and spec is None
    return found


@pytest.mark.parametrize("value", [
    "[" * 600 + "]" * 600,
    "{a = " * 600 + "1" + "}" * 600,
    "[" * 600,
    "[{a = " * 300 + "1" + "}]" * 300,
])
def test_values_nested_past_the_bound_are_one_error_at_the_bracket_too_deep(value):
    found = errors(HEAD + "[check]\nx = " + value + "\n")
    nesting = [d for d in found if "nest at most" in d.message]
    assert len(nesting) == 1
    # The bracket that opens level MAX_NESTING + 1.
    opened = [i for i, ch in enumerate(value) if ch in "[{"]
    assert nesting[0].range.start == Position(6, 4 + opened[MAX_NESTING])


def test_nesting_up_to_the_bound_is_read():
    value = "[" * MAX_NESTING + "1" + "]" * MAX_NESTING
    spec, diagnostics = load_spec(HEAD + '[check]\nshape = "m8n8k8"\nx = ' + value + "\n")
    assert [d.message for d in diagnostics] == ["unknown key 'x' in [check]"]
    value = parse_document("x = " + value).entries[0].value.value
    for _ in range(MAX_NESTING):
        assert isinstance(value, tuple) and len(value) == 1
        value = value[0]
    assert value == 1


@pytest.mark.parametrize("text", [
    HEAD + "[" + ".".join(["a"] * 800) + "]\n",
    HEAD + ".".join(["a"] * 800) + " = 1\n",
    HEAD + "[config]\n" + ".".join(["a"] * 800) + " = 1\n",
])
def test_keys_of_hundreds_of_dotted_parts_are_diagnosed(text):
    found = errors(text)
    assert any("unknown" in d.message for d in found)


def test_a_document_over_the_size_cap_is_refused_whole_with_one_error():
    text = HEAD + "[check]\n" + "".join(f"k{i} = {i}\n" for i in range(MAX_DOCUMENT_CHARS // 8))
    found = errors(text)
    assert len(found) == 1 and found[0].code == "syntax"
    assert f"limited to {MAX_DOCUMENT_CHARS}" in found[0].message
    assert found[0].range.start == Position(0, 0)


def test_a_document_over_the_size_cap_is_not_even_indexed():
    """A 5 MB document cost 0.35 s a keystroke before its refusal: its lines were indexed first."""
    from kdd.core.spec import parse_document

    doc = parse_document("\n" * (5 * 2**20))
    assert doc.text == "" and doc.entries == () and doc.tables[0].range.end == Position(0, 0)


def test_a_long_array_under_the_cap_reads_every_item():
    items = MAX_DOCUMENT_CHARS // 3
    text = HEAD + "[check]\nx = [" + ",1" * items + "]\n"
    text = text.replace("[,", "[")
    assert len(text) <= MAX_DOCUMENT_CHARS
    doc = parse_document(text)
    assert len(doc.get(("check", "x")).value.items) == items


def test_a_byte_order_mark_is_read_as_a_blank_and_positions_stay_put():
    text = "\ufeff" + HEAD + 'simd = "x"\n'
    spec, diagnostics = load_spec("\ufeff" + HEAD)
    assert spec is not None and diagnostics == []
    _, diagnostics = load_spec(text)
    assert [(d.range.start, d.code) for d in diagnostics] == [(Position(5, 0), "unknown-key")]


def test_extends_of_a_device_or_a_directory_is_an_error_on_the_extends_value(tmp_path):
    for parent in ("/dev/zero", str(tmp_path)):
        text = f'extends = "{parent}"\n' + HEAD
        found = errors(text, str(tmp_path / "k.kernel.toml"))
        assert [d.code for d in found] == ["extends"]
        assert found[0].range.start == Position(0, 10)
        assert "not a regular file" in found[0].message or "directory" in found[0].message.lower()


def test_read_file_refuses_a_file_too_large_for_a_config(tmp_path):
    big = tmp_path / "big.kernel.toml"
    big.write_bytes(b"#" * (4 * MAX_DOCUMENT_CHARS + 1))
    with pytest.raises(OSError, match="too large"):
        read_file(str(big))
    found = errors('extends = "big.kernel.toml"\n' + HEAD, str(tmp_path / "k.kernel.toml"))
    assert "too large" in found[0].message


def test_an_extended_parent_over_the_size_cap_is_summarized_on_extends(tmp_path):
    (tmp_path / "p.kernel.toml").write_text("#\n" * MAX_DOCUMENT_CHARS)
    found = errors('extends = "p.kernel.toml"\n' + HEAD, str(tmp_path / "k.kernel.toml"))
    assert "limited to" in found[0].message and found[0].range.start == Position(0, 10)


@pytest.mark.parametrize("check, where, message", [
    ("seed = -5", Position(6, 7), "`seed` must be an integer from 0"),
    ("seed = 99999999999999999999999", Position(6, 7), "`seed` must be an integer from 0"),
    ("tol = -1", Position(6, 6), "`tol` must be a finite number >= 0"),
    ("tol = nan", Position(6, 6), "`tol` must be a finite number >= 0"),
    ("tol = inf", Position(6, 6), "`tol` must be a finite number >= 0"),
])
def test_check_seed_and_tolerance_out_of_range_are_errors_on_the_value(check, where, message):
    found = errors(HEAD + "[check]\n" + check + "\n")
    assert [(d.range.start, d.code) for d in found] == [(where, "bad-value")]
    assert message in found[0].message


@pytest.mark.parametrize("shape, token", [
    ('"m99999999999999999999999999n8k8"', "m99999999999999999999999999"),
    ('"b3000000000m8n8k8"', "b3000000000"),
    ('"4294967296x8:8x8"', "4294967296x8"),
])
def test_sizes_past_32_bits_are_errors_on_their_token(shape, token):
    found = errors(HEAD.replace('"m16n16k16"', shape))
    assert len(found) == 1 and "sizes are limited to 2147483647" in found[0].message
    start = 8 + shape.index(token)
    assert found[0].range.start == Position(2, start) and found[0].range.end == Position(2, start + len(token))


@pytest.mark.parametrize("shape, check", [
    ("m100000n100000k8", None),
    ("mb2ic1000000000ih6oc8oh6kh3ph1", None),
    ("m16n16k16", "m100000n100000k8"),
])
def test_tensors_past_32_bit_offsets_are_errors_on_the_shape(shape, check):
    op = "conv" if "ic" in shape else "gemm"
    text = HEAD.replace('op = "gemm"', f'op = "{op}"').replace("m16n16k16", shape)
    if check:
        text += f'[check]\nshape = "{check}"\n'
    found = errors(text)
    assert len(found) == 1 and "32-bit offsets" in found[0].message
    assert found[0].range.start.line == (6 if check else 2)


@st.composite
def malformed(draw):
    """``(text, extends target or None)``: a document wrong by construction, of one hostile kind."""
    kind = draw(st.sampled_from(["nesting", "number", "size", "binary", "special"]))
    if kind == "nesting":
        depth = draw(st.integers(MAX_NESTING + 1, 3000))
        opener = draw(st.sampled_from(["[", "{a = ", "[{b = "]))
        closer = {"[": "]", "{a = ": "}", "[{b = ": "}]"}[opener]
        closed = draw(st.booleans())
        key = draw(st.sampled_from(["[check]\nx", "[config]\nslm", "[problem]\npost_ops", "z"]))
        return HEAD + f"{key} = " + opener * depth + ("1" + closer * depth if closed else "") + "\n", None
    if kind == "number":
        digits = "".join(draw(st.lists(st.sampled_from("0123456789"), min_size=11, max_size=60)))
        digits = "9" + digits
        key = draw(st.sampled_from(["m", "n", "k", "b"]))
        return HEAD.replace(f"{key if key != 'b' else 'm'}16", f"{key}{digits}" + ("m16" if key == "b" else ""),
                            1), None
    if kind == "size":
        filler = draw(st.sampled_from(["#" * 70 + "\n", "k = 1\n", "x = [" + "1," * 30 + "]\n"]))
        return HEAD + filler * (MAX_DOCUMENT_CHARS // len(filler) + draw(st.integers(1, 50))), None
    if kind == "binary":
        junk = draw(st.binary(min_size=1, max_size=40)).decode("latin-1")
        junk += draw(st.sampled_from(["\x00", "\x01", "\x7f", "\x1b"]))
        at = draw(st.integers(0, len(HEAD)))
        # A control character anywhere (a key, a value, a comment) is not TOML.
        return HEAD[:at] + junk + HEAD[at:], None
    target = draw(st.sampled_from(["/dev/zero", "/dev/null", "/", "/proc/self/fd", "missing.kernel.toml"]))
    return f'extends = "{target}"\n' + HEAD, target


@settings(max_examples=150, deadline=None)
@given(malformed())
def test_malformed_documents_give_an_error_with_a_position_and_no_spec(case):
    text, _ = case
    spec, diagnostics = load_spec(text, "/nonexistent/dir/k.kernel.toml")
    end = parse_document(text).lines.end
    for d in diagnostics:
        assert Position(0, 0) <= d.range.start <= d.range.end <= end, d
        assert d.code != "internal", d
    assert spec is None and any(d.severity == Severity.ERROR for d in diagnostics)


def test_read_file_refuses_a_fifo_without_blocking_on_it():
    # A FIFO would block a plain open() for reading; read_file must refuse it from its mode alone.
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"kdd-fifo-{os.getpid()}"
    os.mkfifo(path)
    try:
        with pytest.raises(OSError, match="not a regular file"):
            read_file(str(path))
    finally:
        path.unlink()
