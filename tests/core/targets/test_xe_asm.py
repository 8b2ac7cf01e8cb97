"""The Xe assembly text facts both the generator and its checkers read (core/targets/xe_asm.py): the register
operand grammar read back from what the generator writes, and the type tables agreeing with the IR's types."""
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.codegen.xe.operand import Reg, iga_type
from kdd.core.ir.types import Scalar, Type
from kdd.core.targets.xe_asm import FLOAT_TYPES, SCALAR_TYPES, SIZES, TYPES, register_token

SCALARS = [s for s in Scalar if s is not Scalar.BOOL and not s.is_packed]  # packed kinds live in memory only


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(SCALARS), st.integers(0, 127), st.integers(0, 31), st.sampled_from([0, 1, 2, 4]),
       st.booleans(), st.sampled_from([32, 64]), st.sampled_from(["dst", "src", "src3", "src3_last"]))
def test_every_operand_the_generator_writes_reads_back_as_its_register_sub_register_stride_and_type(
        scalar, reg, elem, stride, neg, rb, form):
    t = Type(scalar)
    size = SIZES[iga_type(t)]
    elem %= rb // size
    r = Reg(reg * rb + elem * size, t, stride, neg and form != "dst")
    text = {"dst": lambda: r.dst(rb), "src": lambda: r.src(rb), "src3": lambda: r.src3(rb, False),
            "src3_last": lambda: r.src3(rb, True)}[form]()
    token = register_token(text)
    assert (token.file, token.reg, token.sub, token.type) == ("r", reg, elem, iga_type(t))
    assert token.neg == r.neg and not (token.inv or token.abs or token.sat)
    assert token.region == {"dst": (max(stride, 1),), "src": (stride, 1, 0) if stride else (0, 1, 0),
                            "src3": (stride, 0), "src3_last": (stride,)}[form]


def test_modifiers_whole_registers_and_what_is_no_register_operand():
    assert register_token("-(abs)acc2.3<8;8,1>:f") == register_token("-(abs)acc2.3<8;8,1>:f")
    token = register_token("-(abs)acc2.3<8;8,1>:f")
    assert (token.file, token.reg, token.sub, token.region, token.neg, token.abs) == ("acc", 2, 3, (8, 8, 1), True,
                                                                                       True)
    assert register_token("~r7.0<1;1,0>:ud").inv
    assert register_token("(sat)r4.0<1>:f").sat
    whole = register_token("r89:hf")  # a dpas operand: no sub-register, no region
    assert (whole.reg, whole.sub, whole.region) == (89, None, None)
    for text in ("null:ud", "0x3F800000:f", "r5.2<a;1,0>:d", "f0.0<1>:uw", "r5.2<1>", "[r4:1]"):
        assert register_token(text) is None, text


def test_the_type_tables_agree_with_the_ir_types():
    for scalar, name in SCALAR_TYPES.items():
        assert SIZES[name] == (4 if scalar is Scalar.BOOL else scalar.bits // 8)
    assert FLOAT_TYPES <= set(TYPES)
    assert all(TYPES[name][0].startswith("float") or name == "bf" for name in FLOAT_TYPES)
