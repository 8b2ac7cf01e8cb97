"""The Xe assembly text facts both the generator and its checkers read (core/targets/xe_asm.py): the register
operand grammar read back from what the generator writes (by targets/xe_syntax), the type tables agreeing with
the IR's types, the LSC data sizes with the simulator's descriptor decoding, the pipes with the instruction docs."""
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.codegen.xe.operand import Reg, iga_type
from kdd.core.ir.types import Scalar, Type
from kdd.core.targets.instructions import DOCS
from kdd.core.targets.xe_asm import FIXED_PIPES, FLOAT_TYPES, LSC_DATA, PIPES, SCALAR_TYPES, SIZES, TYPES, pipe
from kdd.core.targets.xe_syntax import register_token
from kdd.core.xesim.messages import DATA_NAMES, decode_lsc

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


def test_the_lsc_data_sizes_are_what_their_names_say_and_what_the_simulator_decodes():
    for name, (mem, slot) in LSC_DATA.items():   # dN: N bits in memory; dNu32: widened to a dword slot
        bits, _, widened = name[1:].partition("u")
        assert mem == int(bits) // 8 and slot == (int(widened) // 8 if widened else mem)
    assert set(DATA_NAMES.values()) == set(LSC_DATA)
    for code, name in DATA_NAMES.items():
        lsc = decode_lsc(code << 9 | 2 << 7)       # a load with 32-bit addresses and data size ``code``
        assert (lsc.mem_bytes, lsc.reg_bytes) == LSC_DATA[name] and lsc.name == f"load.{name}.a32"


def test_the_instruction_docs_name_the_pipe_the_generator_counts():
    for mnemonic, doc in DOCS["xe"].items():
        fixed = FIXED_PIPES.get(mnemonic.partition(".")[0])
        if fixed is not None:
            assert doc.pipe == fixed, mnemonic
        else:   # an ALU opcode: its pipe follows its type, which the docs say or name
            assert doc.pipe in ("int", "float") or "by the destination type" in doc.pipe, mnemonic
    assert pipe("dpas.8x8", "f") == "xmx" and pipe("load.ugm.d32.a64", "ud") == "send"
    assert pipe("mad", "hf") == "float" and pipe("mad", "d") == "int" and pipe("sync.bar", "ud") == "control"
    assert set(FIXED_PIPES.values()) | {"int", "float"} == set(PIPES)
