"""The Xe assembly text facts both the generator and its checkers read (core/targets/xe_asm.py): the type
tables agreeing with the IR's types, the LSC data sizes with the simulator's descriptor decoding, the pipes
with the instruction docs."""
from kdd.core.ir.types import Scalar
from kdd.core.targets.instructions import DOCS
from kdd.core.targets.xe_asm import FIXED_PIPES, FLOAT_TYPES, LSC_DATA, PIPES, SCALAR_TYPES, SIZES, TYPES, pipe
from kdd.core.xesim.messages import DATA_NAMES, decode_lsc


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
