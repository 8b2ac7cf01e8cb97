"""oneDNN lookup-table entries: fields, benchdnn descriptors, concrete problems; the shipped table reads whole."""
from collections import Counter
from pathlib import Path

import pytest

from kdd.core.config import Tile, parse_config_line
from kdd.core.problem.lookup_entry import LookupEntry, LookupEntryError, read_lookup_table

TABLE = Path(__file__).resolve().parents[2] / "data/onednn/conv_lookup_table.txt"


def test_fields_of_one_entry():
    e = LookupEntry.parse("xehpg:arl dpas fwd x8:x8:any mb32b ic64ih56oc64oh56kh3ph1 simd=8 l=ic4kh3kw3 T=ow8 "
                          "i=ic32oc64ow10 bufs=3")
    assert (e.hw, e.family, e.fma, e.prop, e.types) == ("xehpg", "arl", "dpas", "fwd", ("x8", "x8", "any"))
    assert (e.mb, e.mb_blocked, e.type_class, e.target) == (32, True, "x8", "xehpg")
    assert e.line == "simd=8 l=ic4kh3kw3 T=ow8 i=ic32oc64ow10 bufs=3"
    (v,) = e.variants()
    assert v.label == "u8:s8:u8" and str(v.problem.types) == "u8:s8:u8"
    assert v.problem.tags["src"] == "ABx32a32b" and v.problem.tags["dst"] == "any"


def test_grouped_channels_and_points_become_benchdnn_descriptors():
    grouped = LookupEntry.parse("xehpg mad fwd x16:x16:any mb1 g512ic1iw32oc1ow32kw3pw1 simd=8 l=x T=x i=g8kw3ow8")
    assert grouped.shape == "mb1g512ic512iw32oc512ow32kw3pw1"  # oneDNN counts channels per group
    point = LookupEntry.parse("xehpc dpas fwd x16:x16:any mb2048 ic1024oc64 simd=16 l=ic16 T=oc2 i=mb32oc32ic32")
    assert point.variants()[0].problem.shape.canonical() == "mb2048ic1024ih1oc64oh1kh1ph0"


@pytest.mark.parametrize("line,types", [
    ("xehpc dpas bwd_w x16:any:x16 mb16 ic64ih8oc64oh8kh3ph1 simd=16 l=x T=x i=ic16mb16oc16",
     ["f16", "bf16"]),  # diff_weights take the source's type
    ("xehpc dpas bwd_d any:x16:x16 mb16 ic64ih8oc64oh8kh3ph1 simd=16 l=x T=x i=ic16mb16oc16", ["f16", "bf16"]),
    ("xehpc dpas bwd_w tf32:any:tf32 mb16 ic64ih8oc64oh8kh3ph1 simd=16 l=x T=x i=ic16mb16oc16", ["f32"]),
])
def test_any_takes_the_type_it_is_computed_from(line, types):
    assert [str(v.problem.types) for v in LookupEntry.parse(line).variants()] == types


@pytest.mark.parametrize("bad", ["xehpg dpas fwd", "xehpg dpas sideways x16:x16:any mb1 ic8ih8oc8oh8kh1 simd=8",
                                 "xehpg dpas fwd x12:x16:any mb1 ic8ih8oc8oh8kh1 simd=8"])
def test_malformed_entries_are_refused(bad):
    with pytest.raises(LookupEntryError):
        LookupEntry.parse(bad)


def test_the_shipped_table_reads_whole():
    entries = read_lookup_table(TABLE.read_text(encoding="utf-8"))
    assert Counter((e.target, e.prop) for e in entries) == {
        ("xehpg", "fwd"): 195, ("xehpg", "bwd_d"): 3, ("xehpg", "bwd_w"): 9,
        ("xehpc", "fwd"): 153, ("xehpc", "bwd_d"): 25, ("xehpc", "bwd_w"): 40}
    for e in entries:
        config = parse_config_line(e.line)
        assert config.iter and config.iter != Tile()
        assert parse_config_line(config.line()) == config  # parse, print, parse: the same config
        for v in e.variants():
            assert v.problem.prop == e.prop


def test_the_document_of_a_variant_reads_back_as_that_problem_and_line():
    from kdd.core.spec import load_spec

    e = LookupEntry.parse("xehpc dpas fwd x16:x16:any mb32b ic64ih56oc64oh56kh3ph1 simd=16 l=ic2kh3kw3 T=ic2ow4 "
                          "i=mb32oc32ic16 bufs=3")
    v = e.variants()[1]
    spec, _ = load_spec(e.document(v))
    assert spec.problem == v.problem and spec.target.name == "xehpc"
    assert spec.user_config == parse_config_line("fma=dpas " + e.line)
