"""The Xe assembly text facts both the generator and its checkers read (core/targets/xe_asm.py): the type
tables agreeing with the IR's types, the LSC data sizes with the simulator's descriptor decoding."""
from kdd.core.ir.types import Scalar
from kdd.core.targets.xe_asm import FLOAT_TYPES, LSC_DATA, SCALAR_TYPES, SIZES, TYPES
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
