"""The [config] table form, read from real TOML text."""
import tomllib

import pytest
from hypothesis import given, settings

from kdd.core.config import (Buffering, ConfigError, KernelConfig, Pipeline, Subtiles, Tile, config_from_mapping,
                             parse_config_line)
from kdd_config_strategies import configs


def _config(toml_text: str) -> KernelConfig:
    return config_from_mapping(tomllib.loads(toml_text)["config"])


def test_design_example():
    c = _config('''
[config]
fma = "dpas"
simd = 8
iter = "mb32oc32ic16"
tg = "oc4ow4"
loop = "kh3kw3ic4"
slm = { bufs = 3 }
''')
    assert c == parse_config_line("fma=dpas simd=8 i=mb32oc32ic16 T=oc4ow4 l=kh3kw3ic4 s=x3")


def test_tables_and_scalars():
    c = _config('''
[config]
iter = { mb = 32, oc = 16 }
slm = { bufs = 2, gmem = 1, a = false }
prefetch = 3
pipeline = { unroll = true }
subtiles = 2
regs = 256
''')
    assert c.iter == Tile.parse("mb32oc16") and c.slm == Buffering(2, a=False, b=True, gmem=1)
    assert c.prefetch == Buffering(3) and c.pipeline == Pipeline(unroll=True) and c.subtiles == Subtiles(b=2)
    assert _config('[config]\nsubtiles = { a = 2 }\npipeline = "r"').subtiles == Subtiles(a=2)


def test_line_key_merges_with_other_keys():
    c = _config('[config]\nline = "simd=8 l=kh3kw3ic4 T=oc4ow4 i=mb32oc32ic16 bufs=3"\nfma = "dpas"')
    assert c == parse_config_line("fma=dpas simd=8 l=kh3kw3ic4 T=oc4ow4 i=mb32oc32ic16 s=x3")


@settings(max_examples=200, deadline=None)
@given(configs)
def test_to_mapping_round_trip(config):
    assert config_from_mapping(config.to_mapping()) == config
    assert config_from_mapping({"line": config.line()}) == config


@pytest.mark.parametrize("table,key,words,span", [
    ({"iter": "mb32", "tgg": "oc4"}, "tgg", "did you mean 'tg'", None),
    ({"line": "i=mb32", "iter": "oc4"}, "iter", "both as a key and in line", None),
    ({"line": "simd=8 i=mb3X"}, "line", "'X'", (12, 13)),
    ({"line": 8}, "line", "must be a string", None),
    ({"iter": "mb32Oc"}, "iter", "'O'", (4, 5)),
    ({"iter": {"mb": 0}}, "iter", "iter.mb must be at least 1", None),
    ({"iter": 32}, "iter", "must be a string", None),
    ({"simd": True}, "simd", "must be an integer", None),
    ({"simd": "8"}, "simd", "must be an integer", None),
    ({"fma": "dpsa"}, "fma", "did you mean 'dpas'", (0, 4)),
    ({"slm": {"bufs": 9}}, "slm", "slm.bufs must be between 0 and 3", None),
    ({"slm": {"gmem": 1}}, "slm", "needs 'bufs'", None),
    ({"slm": {"bufs": 2, "a": False, "b": False}}, "slm", "A, B or both", None),
    ({"slm": {"bufs": 2, "c": True}}, "slm", "unknown key 'c'", None),
    ({"prefetch": {"bufs": 2, "gmem": 1}}, "prefetch", "SLM buffering only", None),
    ({"pipeline": 3}, "pipeline", "string of flags", None),
    ({"pipeline": {"unroll": 1}}, "pipeline", "true or false", None),
    ({"subtiles": 0}, "subtiles", "at least 1", None),
])
def test_errors_name_the_key(table, key, words, span):
    with pytest.raises(ConfigError) as err:
        config_from_mapping(table)
    assert err.value.key == key and words in err.value.message
    if span is not None:
        assert (err.value.start, err.value.end) == span
