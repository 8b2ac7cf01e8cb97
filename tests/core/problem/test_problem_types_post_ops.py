"""Data types (--dt form) and post-op chains (--attr-post-ops form)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.ir.types import Type, bf16, f16, f32, s8, s32, u8
from kdd.core.problem import (Bias, Binary, DataTypes, Eltwise, ProblemError, Scale, Sum,
                              format_post_ops, parse_data_types, parse_post_op, parse_post_ops)

# --- data types -----------------------------------------------------------------------------


@pytest.mark.parametrize("text, src, wei, dst, acc, canonical", [
    ("f16:f16:f16", f16, f16, f16, f32, "f16"),
    ("s8:s8:s32", s8, s8, s32, s32, "s8:s8:s32"),
    ("u8:s8:f32", u8, s8, f32, s32, "u8:s8:f32"),
    ("bf16:bf16:f32", bf16, bf16, f32, f32, "bf16:bf16:f32"),
    ("f32", f32, f32, f32, f32, "f32"),
    ("f16:s8:f16", f16, s8, f16, f32, "f16:s8:f16"),
])
def test_data_types(text, src, wei, dst, acc, canonical):
    t = parse_data_types(text)
    assert (t.src, t.wei, t.dst, t.acc) == (src, wei, dst, acc)
    assert t.canonical() == canonical
    assert parse_data_types(canonical) == t


@pytest.mark.parametrize("text, span, words", [
    ("f16:f61:f16", "f61", "unknown data type"),
    ("f16:f16", "f16:f16", "one type or three"),
    ("f16x8", "f16x8", "scalar"),
    ("s8:bool:s32", "bool", "scalar"),
])
def test_data_type_errors(text, span, words):
    with pytest.raises(ProblemError) as info:
        parse_data_types(text)
    assert text[info.value.start:info.value.end] == span
    assert words in info.value.message


def test_data_types_reject_vector_types_when_built_directly():
    with pytest.raises(ValueError, match="scalar"):
        DataTypes(Type.parse("f16x4"), f16, f16)


# --- post-ops -------------------------------------------------------------------------------


@pytest.mark.parametrize("text, op, canonical", [
    ("relu", Eltwise("relu", 0.0), "relu"),
    ("relu:0.5", Eltwise("relu", 0.5), "relu:0.5"),
    ("linear:2:1", Eltwise("linear", 2.0, 1.0), "linear:2:1"),
    ("linear", Eltwise("linear", 1.0, 0.0), "linear"),
    ("linear:1:0.25", Eltwise("linear", 1, 0.25), "linear:1:0.25"),
    ("swish", Eltwise("swish", 1.0), "swish"),
    ("sigmoid", Eltwise("logistic"), "logistic"),
    ("gelu_erf", Eltwise("gelu_erf"), "gelu_erf"),
    ("add:f32", Binary("add", f32), "add:f32"),
    ("mul:f16:per_oc", Binary("mul", f16, "per_oc"), "mul:f16:per_oc"),
    ("sum", Sum(), "sum"),
    ("sum:0.5", Sum(0.5), "sum:0.5"),
    ("bias", Bias(), "bias"),
    ("bias:f16", Bias(f16), "bias:f16"),
    ("scale:2.0", Scale(2.0), "scale:2"),
    ("scale:1e-3", Scale(0.001), "scale:0.001"),
])
def test_post_op_elements(text, op, canonical):
    assert parse_post_op(text) == op
    assert op.canonical() == canonical
    assert parse_post_op(canonical) == op


def test_chain_keeps_order():
    ops = parse_post_ops("bias+sum:0.5+relu+add:f32:per_oc")
    assert ops == (Bias(), Sum(0.5), Eltwise("relu"), Binary("add", f32, "per_oc"))
    assert format_post_ops(ops) == "bias+sum:0.5+relu+add:f32:per_oc"
    assert parse_post_ops("") == ()


@pytest.mark.parametrize("text, span, words", [
    ("relu+frob:1", "frob", "unknown post-op 'frob'"),
    ("relu:x", "x", "finite number"),
    ("relu:1:2", "2", "at most 1 argument"),
    ("tanh:1", "1", "at most 0 argument"),
    ("sum+add", "add", "needs the second operand's data type"),
    ("add:f33", "f33", "unknown data type"),
    ("add:f32:per_row", "per_row", "unknown broadcast policy"),
    ("scale", "scale", "needs a value"),
    ("sum:nan", "nan", "finite number"),
    ("relu++sum", "", "empty post-op"),
])
def test_post_op_errors_name_the_token(text, span, words):
    with pytest.raises(ProblemError) as info:
        parse_post_ops(text)
    assert text[info.value.start:info.value.end] == span
    assert words in info.value.message


def test_eltwise_parameters_it_does_not_take_are_rejected():
    with pytest.raises(ValueError, match="tanh takes no alpha"):
        Eltwise("tanh", 1.0)
    with pytest.raises(ValueError, match="unknown eltwise"):
        Eltwise("frob")


numbers = st.floats(-1e6, 1e6, allow_nan=False) | st.integers(-100, 100).map(float)
elements = st.one_of(
    st.builds(Eltwise, st.sampled_from(["relu", "swish", "elu"]), numbers),
    st.builds(Eltwise, st.just("linear"), numbers, numbers),
    st.builds(Eltwise, st.sampled_from(["gelu_tanh", "gelu_erf", "tanh", "logistic", "abs"])),
    st.builds(Binary, st.sampled_from(["add", "mul", "sub", "max"]), st.sampled_from([f32, f16, s8]),
              st.sampled_from(["per_tensor", "per_oc", "common"])),
    st.builds(Sum, numbers), st.builds(Bias, st.sampled_from([f32, f16, bf16])), st.builds(Scale, numbers),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(elements, max_size=5))
def test_chains_round_trip(ops):
    assert parse_post_ops(format_post_ops(ops)) == tuple(ops)
