"""oneDNN config lines: parsing, printing non-defaults, round trips, errors with spans."""
import re
from dataclasses import fields

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.config import (KNOBS, Buffering, ConfigError, KernelConfig, Pipeline, Subtiles, Tile, WalkOrder,
                             parse_config_line)
from kdd_config_strategies import configs


def test_brief_example():
    c = parse_config_line("simd=8 l=ic4kh3kw3 T=ow8 i=ic32oc64ow10 bufs=3")
    assert c == KernelConfig(simd=8, loop=Tile.parse("ic4kh3kw3"), tg=Tile.parse("ow8"),
                             iter=Tile.parse("ic32oc64ow10"), slm=Buffering(3))
    assert c.line() == "simd=8 l=ic4kh3kw3 T=ow8 i=ic32oc64ow10 s=x3"


def test_every_knob_by_short_and_long_name():
    c = parse_config_line("fma=dpasw simd=16 regs=256 vec=8 l=kh3 T=oc4ow4 i=mb32oc32ic16 u=ic2 "
                          "s=x3.g2.v1.a p=x2.b P=ur S=a2 global-reduction=0 walk-order=oc4ow2,mb8, pad-slm=1 "
                          "bwd-d-optimize=skip_strided_dh schedule=tma tile=m128n128k64 stages=3 cluster=m1n1 src=axb wei=axcb "
                          "dst=aBx16b.axb bia=a")
    assert c.is_complete
    assert (c.schedule, c.tile, c.stages, c.cluster) == ("tma", Tile.of({"m": 128, "n": 128, "k": 64}), 3,
                                                         Tile.of({"m": 1, "n": 1}))
    assert (c.fma, c.simd, c.regs, c.vec) == ("dpasw", 16, 256, 8)
    assert c.slm == Buffering(3, a=True, b=False, gmem=2, sync=1) and c.prefetch == Buffering(2, a=False, b=True)
    assert (c.global_reduction, c.pad_slm, c.bwd_d_optimize) == (False, True, "skip_strided_dh")
    assert c.walk_order == WalkOrder(((("oc", 4), ("ow", 2)), (("mb", 8),), ()))
    assert (c.src_layout, c.wei_layout, c.dst_layout, c.bia_layout) == ("axb", "axcb", "aBx16b.axb", "a")
    assert c.pipeline == Pipeline(True, True) and c.subtiles == Subtiles(2, 1)
    long = parse_config_line("fma=dpasw simd=16 regs=256 vec=8 loop=kh3 tg=oc4ow4 iter=mb32oc32ic16 unroll=ic2 "
                             "slm=x3.g2.v1.a prefetch=x2.b pipeline=ur subtiles=a2 global_reduction=0 "
                             "walk_order=oc4ow2,mb8, pad_slm=1 bwd_d_optimize=skip_strided_dh schedule=tma "
                             "tile=m128n128k64 stages=3 cluster=m1n1 src_layout=axb "
                             "wei_layout=axcb dst_layout=aBx16b.axb bia_layout=a")
    assert long == c
    assert parse_config_line("S=2").subtiles == Subtiles(1, 2)


def test_line_prints_only_non_defaults_in_knob_order():
    defaults = parse_config_line("fma=dpas simd=8 regs=128 l=ic4 T=oc4ow4 i=mb32oc32ic16 s=x3 P=u")
    mine = parse_config_line("i=mb32oc16ic16 T=ow4oc4 simd=8 s=x2")
    merged = mine.over(defaults)
    assert merged.line(defaults) == "i=mb32oc16ic16 s=x2"  # T=ow4oc4 equals oc4ow4
    assert parse_config_line(merged.line(defaults)).over(defaults) == merged
    assert merged.line() == "fma=dpas simd=8 regs=128 l=ic4 T=ow4oc4 i=mb32oc16ic16 s=x2 P=u"


def test_empty_values_where_they_mean_something():
    c = parse_config_line("u= P=")
    assert c.unroll == Tile() and c.pipeline == Pipeline()
    assert parse_config_line(c.line()) == c


def test_a_line_as_onednn_prints_it_round_trips():
    # oneDNN's "Configuration line:" prints every overridable knob that is not at its default.
    printed = ("regs=256 simd=16 vec=32 fma=dpas l=kh3kw3ic4 T=oc4ow4 i=mb32oc32ic16 P= p=x3 s=x3.g0.v1 src=axb "
               "wei=axcb dst=axb bia=a global-reduction=0 walk-order=ow8oc2,mb4, S=b2 u=ic2")
    c = parse_config_line(printed)
    assert parse_config_line(c.line()) == c and c.pipeline == Pipeline() and c.subtiles == Subtiles(1, 2)


@pytest.mark.parametrize("line,span,words", [
    ("walk-order=oc4,mb2,g1,ow2", (21, 22), "has 4 axes"),
    ("walk-order=oc4,m-2", (15, 16), "unexpected 'm'"),
    ("pad-slm=yes", (8, 11), "expected 0 or 1"),
    ("bwd-d-optimize=skip", (15, 19), "skip_strided_dh"),
    ("src=ax-b", (4, 8), "expected a layout tag"),
    ("s=x3.v9", (5, 7), "sync version once, 0..3"),
    ("p=x3.v1", (5, 7), "unexpected 'v1'"),
])
def test_onednn_only_knob_errors_carry_spans(line, span, words):
    with pytest.raises(ConfigError) as err:
        parse_config_line(line)
    assert (err.value.start, err.value.end) == span, err.value.message
    assert words in err.value.message


def test_x_is_the_empty_tile_and_prints_back():
    c = parse_config_line("simd=16 l=x T=x i=ic32mb16oc32 bufs=3")
    assert c.loop == Tile() and c.tg == Tile() and c.iter == Tile.parse("ic32mb16oc32")
    assert c.line() == "simd=16 l=x T=x i=ic32mb16oc32 s=x3"
    assert parse_config_line(c.line()) == c
    assert Tile.parse("x4") == Tile.of({"x": 4})  # only the bare 'x' is the empty tile


@settings(max_examples=300, deadline=None)
@given(configs)
def test_round_trip(config):
    assert parse_config_line(config.line()) == config


@settings(max_examples=200, deadline=None)
@given(configs, configs)
def test_round_trip_against_defaults(config, defaults):
    merged = config.over(defaults)
    assert parse_config_line(merged.line(defaults)).over(defaults) == merged


@pytest.mark.parametrize("line,span,words", [
    ("simd=8 buf=3", (7, 10), "unknown knob 'buf'"),
    ("simd=8 Tt=oc4", (7, 9), "did you mean 'T'"),
    ("simd=8 loop", (7, 11), "expected key=value"),
    ("=3", (0, 2), "expected key=value"),
    ("i=mb32 iter=oc4", (7, 11), "already set by 'i' at column 0"),
    ("s=x3 bufs=2", (5, 9), "already set by 's'"),
    ("simd=", (0, 5), "needs a value"),
    ("simd=eight", (5, 10), "expected a number"),
    ("fma=dpsa", (4, 8), "did you mean 'dpas'"),
    ("i=mb32Oc", (6, 7), "'O'"),
    ("s=x3.q", (5, 6), "unexpected 'q'"),
    ("p=x3.g1", (5, 7), "unexpected 'g1'"),
    ("s=x4", (2, 4), "0..3"),
    ("s=a", (2, 3), "needs a buffer count"),
    ("bufs=7", (5, 6), "0..3"),
    ("P=ux", (3, 4), "unknown pipeline flag 'x'"),
    ("P=uu", (3, 4), "repeated pipeline flag 'u'"),
    ("S=a2c", (4, 5), "unexpected 'c'"),
    ("S=a2a3", (4, 6), "'a' given twice"),
    ("S=b0", (3, 4), "at least 1"),
    ("regs=0", (5, 6), "at least 1"),
])
def test_errors_carry_spans_and_name_the_token(line, span, words):
    with pytest.raises(ConfigError) as err:
        parse_config_line(line)
    assert (err.value.start, err.value.end) == span, err.value.message
    assert words in err.value.message


@settings(max_examples=200, deadline=None)
@given(configs.filter(lambda c: c.set_keys()), st.data())
def test_a_corrupted_value_is_located_in_its_token(config, data):
    line = config.line()
    tokens = list(re.finditer(r"\S+", line))
    tok = data.draw(st.sampled_from(tokens))
    value_start = tok.group().index("=") + 1 + tok.start()
    bad = line[:value_start] + "#" + line[value_start:]
    with pytest.raises(ConfigError) as err:
        parse_config_line(bad)
    assert tok.start() <= err.value.start < err.value.end <= tok.end() + 1
    assert err.value.key == parse_config_line(tok.group()).set_keys()[0]


def test_knobs_match_kernel_config_fields():
    assert [f.name for f in fields(KernelConfig)] == [k.key for k in KNOBS]
    assert len({k.onednn for k in KNOBS}) == len(KNOBS)
    for knob in KNOBS:
        assert knob.doc and knob.allowed
        parsed = parse_config_line(knob.example)
        assert parsed.set_keys() == (knob.key,) and parsed.line() == knob.example
