"""Convolution descriptors: benchdnn filling rules, canonical printing, errors."""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdd.core.problem import CONV_KEYS, ConvShape, ProblemError, parse_conv_shape

AXES = "dhw"


# --- filling rules on benchdnn's own inputs ---------------------------------------------------

def test_defaults_and_square_copy():
    s = parse_conv_shape("ic3oc16_ih5oh5kh3ph1")
    assert (s.g, s.mb, s.ndims) == (1, 2, 2)
    assert (s.ih, s.oh, s.kh, s.sh, s.ph, s.dh) == (5, 5, 3, 1, 1, 0)
    assert (s.iw, s.ow, s.kw, s.sw, s.pw, s.dw) == (5, 5, 3, 1, 1, 0)  # w copies h
    assert (s.id, s.od, s.kd, s.sd, s.pd, s.dd) == (1, 1, 1, 1, 0, 0)  # unused d


def test_one_dimensional_problem_fills_d_and_h_with_unit_sizes():
    s = parse_conv_shape('ic228oc126_iw48ow12kw1sw4dw0pw0n"generated_strided_conv1d:1"')
    assert s.ndims == 1
    assert (s.iw, s.ow, s.kw, s.sw, s.pw) == (48, 12, 1, 4, 0)
    for a in "dh":
        assert [getattr(s, p + a) for p in "iokspd"] == [1, 1, 1, 1, 0, 0]
    assert s.name == "generated_strided_conv1d:1"


def test_cubic_problem_copies_d_to_h_and_w():
    s = parse_conv_shape('g17mb16ic17id5oc17od5kd3pd1_n"tails_conv_3d:7"')
    assert s.ndims == 3
    for a in AXES:
        assert [getattr(s, p + a) for p in "iokspd"] == [5, 5, 3, 1, 1, 0]


def test_missing_output_is_computed():
    # (13 - 1 + 2*0) / 1 + 1
    assert parse_conv_shape('ic20oc32_iw13kw1pw0_n"tails_conv_1d_1x1:2"').ow == 13
    # (224 - 7 + 2*3) / 2 + 1 = 112
    assert parse_conv_shape("ic3oc64ih224kh7sh2ph3").oh == 112
    # dilation 1: the 3-tap kernel spans 5 inputs, so (5 - 5 + 0) + 1
    assert parse_conv_shape("ic3oc3ih5kh3dh1").oh == 1


def test_missing_padding_is_half_the_total_padding():
    # ((56 - 1) * 1 - 56 + 3) / 2 = 1
    s = parse_conv_shape("mb50ic64ih56oc64oh56kh3")
    assert (s.ph, s.ph_r) == (1, 1)
    # total 3 -> 1 at the start, 2 at the end
    s = parse_conv_shape("ic3oc3ih5oh5kh4")
    assert (s.ph, s.ph_r) == (1, 2)


def test_divisions_truncate_toward_zero_like_c():
    # total padding (16-1)*2 - 33 + 2 = -1: C gives -1/2 = 0 (floor would give -1)
    s = parse_conv_shape("mb2ic16ih33oc16oh16kh2sh2")
    assert (s.ph, s.ph_r) == (0, -1)
    # (2 - 3 + 0) / 2 + 1: C gives 0 + 1 = 1 output, padded at the end
    s = parse_conv_shape("ic3oc3ih2kh3sh2")
    assert (s.oh, s.ph, s.ph_r) == (1, 0, 1)


def test_right_padding_follows_from_the_written_output():
    s = parse_conv_shape('ic1024oc2048_ih14oh7kh1sh2dh0ph0_iw35ow7kw1sw5dw0pw0_n"x"')
    assert (s.ph_r, s.pw_r) == (-1, -4)
    s = parse_conv_shape("mb1_g1ic1oc1_id4od3kd3sd2dd0pd2_ih4oh2kh5sh2dh0ph2_iw4ow1kw7sw2dw0pw2")
    assert (s.pd_r, s.ph_r, s.pw_r) == (1, 1, 1)  # (3-1)*2 - 4 + 3 - 2, ...


def test_zero_padding_alone_does_not_add_a_dimension():
    s = parse_conv_shape("ic3oc3pd0sd1dd0ih5kh3")
    assert s.ndims == 2


def test_underscores_and_key_order_do_not_matter():
    a = parse_conv_shape("mb4_g2ic4oc6_ih7oh7kh3ph1")
    b = parse_conv_shape("kh3ph1oh7ih7oc6ic4g2mb4")
    assert a == b


def test_name_quoted_or_bare():
    assert parse_conv_shape('ic3oc3ih5kh3n"resnet_50:conv1"').name == "resnet_50:conv1"
    assert parse_conv_shape("ic3oc3ih5kh3_nlayer7").name == "layer7"
    assert parse_conv_shape('ic3oc3ih5kh3n""').name is None


# --- canonical printing --------------------------------------------------------------------

@pytest.mark.parametrize("text, canonical", [
    ('ic3oc16_ih5oh5kh3ph1_n"conv_basic_2d:1st"', 'ic3ih5oc16oh5kh3ph1n"conv_basic_2d:1st"'),
    ("ic3oc16_iw5ow5kw3pw1", "ic3iw5oc16ow5kw3pw1"),
    ("g1mb2ic3oc16ih5oh5kh3ph1", "ic3ih5oc16oh5kh3ph1"),
    ("g17mb16ic17id5oc17od5kd3pd1", "g17mb16ic17id5oc17od5kd3pd1"),
    ("ic32oc13_id13od11kd3pd0_ih13oh12kh3ph0_iw13ow12kw3pw0",
     "ic32id13ih13iw13oc13od11oh12ow12kd3kh3kw3pd0ph0pw0"),
    ("ic256oc512_ih56oh28kh1sh2dh0ph0_iw56ow56kw1sw1dw0pw0",
     "ic256ih56iw56oc512oh28ow56kh1kw1sh2sw1ph0pw0"),
    ("ic3oc3ih5oh5kh3dh1", "ic3ih5oc3oh5kh3ph2dh1"),
    ("mb2ic16ih33oc16oh16kh2sh2", "ic16ih33oc16oh16kh2sh2ph0"),
])
def test_canonical_matches_benchdnn_short_form(text, canonical):
    s = parse_conv_shape(text)
    assert s.canonical() == canonical
    assert str(s) == canonical
    assert parse_conv_shape(canonical) == s


def test_to_dict_has_all_fields():
    d = parse_conv_shape('mb32ic64ih56oc64oh56kh3ph1n"l"').to_dict()
    assert list(d) == [*CONV_KEYS, "ndims", "name", "canonical"]
    assert (d["iw"], d["ow"], d["pw"], d["ndims"], d["name"]) == (56, 56, 1, 4, "l")  # benchdnn rank
    assert d["canonical"] == 'mb32ic64ih56oc64oh56kh3ph1n"l"'


def test_direct_construction_checks_invariants():
    s = parse_conv_shape("g2ic4oc6ih7kh3")
    with pytest.raises(ValueError, match="not divisible by g=2"):
        dataclasses.replace(s, ic=5)
    with pytest.raises(ValueError, match="kd must be 1"):
        dataclasses.replace(s, kd=3)
    with pytest.raises(ValueError, match="oh must be positive"):
        dataclasses.replace(s, oh=0)


# --- errors name the token ------------------------------------------------------------------

@pytest.mark.parametrize("text, span, named", [
    ("ic3oc3xy5ih5kh3", "xy5", ["unknown entry", "'xy5'"]),
    ("ic3oc3ih5kh", "kh", ["'kh' must be followed by a number"]),
    ("ic3oc3ih5ih6kh3", "ih6", ["'ih6'", "given twice"]),
    ("ic3oc3ih0kh3", "ih0", ["'ih0'", "positive"]),
    ("ic3oc3ih5kh3sh-2", "sh-2", ["'sh-2'", "negative"]),
    ("ic3oc3ih5kh3sw2", "sw2", ["'sw2'", "needs iw and kw"]),
    ("ic3oc3ih5oh5", "ih5oh5", ["'ih5' 'oh5'", "needs kh"]),
    ("ic3oc6g4ih5kh3", "ic3", ["'ic3' is not divisible by 'g4'"]),
    ("ic3oc3id5kd3ih5kh3", "ih5kh3", ["'ih5' 'kh3'", "give both or neither"]),
    ("ic3oc3ih2kh5", "ih2kh5", ["'ih2' 'kh5'", "does not fit"]),
    ('ic3oc3ih5kh3n"abc', 'n"abc', ["unterminated", 'n"abc']),
    ('ic3oc3ih5kh3n"abc"x', "x", ["unexpected 'x' after the name"]),
    ("ic3oc3 ih5kh3", " ", ["whitespace"]),
])
def test_errors_name_the_offending_token(text, span, named):
    with pytest.raises(ProblemError) as info:
        parse_conv_shape(text)
    e = info.value
    assert text[e.start:e.end] == span
    for words in named:
        assert words in e.message


@pytest.mark.parametrize("text, words", [
    ("", "empty"), ("oc3ih5kh3", "missing 'ic'"), ("ic3ih5kh3", "missing 'oc'"),
    ("ic3oc3", "no spatial size"),
])
def test_errors_about_the_whole_descriptor(text, words):
    with pytest.raises(ProblemError, match=words) as info:
        parse_conv_shape(text)
    assert (info.value.start, info.value.end) == (0, len(text))


# --- properties -----------------------------------------------------------------------------

@st.composite
def axis_params(draw):
    written = draw(st.sampled_from(["o_and_p", "o_only", "p_only", "neither"]))
    k, s, d = draw(st.integers(1, 5)), draw(st.integers(1, 3)), draw(st.integers(0, 2))
    p = 0 if written == "neither" else draw(st.integers(0, 3))
    extent = (k - 1) * (d + 1) + 1
    # at least one window fits the padded input when the output is deduced
    i = draw(st.integers(max(1, extent - 2 * p), extent - 2 * p + 24))
    o = draw(st.integers(1, 30))
    return dict(i=i, k=k, s=s, d=d, p=p, o=o, written=written)


@st.composite
def conv_descriptors(draw):
    """(descriptor text, the per-axis parameters it was written from, ndims)."""
    ndims = draw(st.integers(1, 3))
    used = AXES[3 - ndims:]
    first = draw(axis_params())
    shared = ndims > 1 and draw(st.booleans())  # cubic / square: outer axis only
    axes = {a: first if shared else draw(axis_params()) for a in used}
    written_axes = used[:1] if shared else used
    g = draw(st.sampled_from([1, 1, 2, 3, 4]))
    entries = [f"ic{g * draw(st.integers(1, 6))}", f"oc{g * draw(st.integers(1, 6))}"]
    if g > 1 or draw(st.booleans()):
        entries.append(f"g{g}")
    if draw(st.booleans()):
        entries.append(f"mb{draw(st.integers(1, 64))}")
    for a in written_axes:
        v = axes[a]
        entries += [f"i{a}{v['i']}", f"k{a}{v['k']}"]
        if v["s"] != 1 or draw(st.booleans()):
            entries.append(f"s{a}{v['s']}")
        if v["d"] != 0 or draw(st.booleans()):
            entries.append(f"d{a}{v['d']}")
        if v["written"] in ("o_and_p", "o_only"):
            entries.append(f"o{a}{v['o']}")
        if v["written"] in ("o_and_p", "p_only"):
            entries.append(f"p{a}{v['p']}")
    entries = draw(st.permutations(entries))
    seps = [draw(st.sampled_from(["", "", "_"])) for _ in entries]
    text = "".join(sep + e for sep, e in zip(seps, entries))
    name = draw(st.none() | st.text("abcXYZ019:_*.- ", min_size=1, max_size=10))
    if name is not None:
        text += f'n"{name}"'
    return text, {a: axes[a] for a in used}, ndims


@settings(max_examples=400, deadline=None)
@given(conv_descriptors())
def test_canonical_round_trips(case):
    text, _, _ = case
    shape = parse_conv_shape(text)
    canonical = shape.canonical()
    assert parse_conv_shape(canonical) == shape
    assert parse_conv_shape(canonical).canonical() == canonical


@settings(max_examples=400, deadline=None)
@given(conv_descriptors())
def test_deduction_agrees_with_brute_force(case):
    """Deduced sizes checked against window counting, not against the formulas."""
    text, axes, ndims = case
    shape = parse_conv_shape(text)
    assert shape.ndims == ndims
    for a, v in axes.items():
        o, p = getattr(shape, f"o{a}"), getattr(shape, f"p{a}")
        ax = shape.axis(a)
        extent = (v["k"] - 1) * (v["d"] + 1) + 1
        if v["written"] in ("o_and_p", "o_only"):
            assert o == v["o"]
        if v["written"] in ("o_and_p", "p_only"):
            assert p == v["p"]
        if v["written"] in ("p_only", "neither"):
            pad = v["p"] if v["written"] == "p_only" else 0
            # count the windows that fit the input padded by `pad` on both sides
            starts = [x for x in range(-pad, v["i"] + pad) if (x + pad) % v["s"] == 0]
            assert o == sum(1 for x in starts if x + extent <= v["i"] + pad)
        if v["written"] == "o_only":
            # the total padding is split as evenly as possible, the larger half
            # (by magnitude) at the end
            total = (o - 1) * v["s"] - v["i"] + extent
            candidates = [pl for pl in range(-abs(total) - 1, abs(total) + 2)
                          if abs(pl - (total - pl)) <= 1 and abs(pl) <= abs(total - pl)]
            assert [p] == candidates
        # o windows from -pl with stride s end exactly at the end padding
        last_tap = max(x * v["s"] - ax.pl + t * (v["d"] + 1) for x in range(o) for t in range(v["k"]))
        assert last_tap == v["i"] - 1 + ax.pr


@settings(max_examples=300, deadline=None)
@given(conv_descriptors(), st.sampled_from(["zz7", "xq9", "ab12", "u0"]), st.data())
def test_unknown_entry_is_named_wherever_it_is(case, junk, data):
    text, _, _ = case
    name_at = text.find('n"')
    body = text if name_at < 0 else text[:name_at]
    # insert before a key (a letter that follows a digit or starts the text)
    cuts = [0] + [i for i in range(1, len(body)) if body[i].isalpha() and body[i - 1].isdigit()]
    cut = data.draw(st.sampled_from(cuts))
    bad = text[:cut] + junk + text[cut:]
    with pytest.raises(ProblemError) as info:
        parse_conv_shape(bad)
    assert bad[info.value.start:info.value.end] == junk
    assert repr(junk) in info.value.message


def _taps_by_loop(shape: ConvShape) -> int:
    """benchdnn's count_ops loop: every (output point, tap) whose input is inside the tensor."""
    count = 0
    for od in range(shape.od):
        for oh in range(shape.oh):
            for ow in range(shape.ow):
                for kd in range(shape.kd):
                    for kh in range(shape.kh):
                        for kw in range(shape.kw):
                            at = [(o * s - p + k * (d + 1), n) for o, k, s, p, d, n in (
                                (od, kd, shape.sd, shape.pd, shape.dd, shape.id),
                                (oh, kh, shape.sh, shape.ph, shape.dh, shape.ih),
                                (ow, kw, shape.sw, shape.pw, shape.dw, shape.iw))]
                            count += all(0 <= x < n for x, n in at)
    return count


@pytest.mark.parametrize("text", [
    "mb1_g1ic1oc1_id4od3kd3sd2dd0pd2_ih4oh2kh5sh2dh0ph2_iw4ow1kw7sw2dw0pw2",
    "ic3oc3ih5oh8kh3ph3", "ic3oc3iw8ow5kw3pw3sw2", "ic3oc3id5od4kd3dd1pd2", "ic3oc3ih7kh3dh2ph4sh3",
])
def test_spatial_taps_match_benchdnn_loop(text):
    shape = parse_conv_shape(text)
    assert shape.spatial_taps() == _taps_by_loop(shape)


@settings(max_examples=300, deadline=None)
@given(conv_descriptors())
def test_valid_taps_match_a_loop_per_axis(case):
    """The per-axis closed form against a loop over outputs and taps of that axis."""
    shape = parse_conv_shape(case[0])
    product = 1
    for a in shape.used_axes:
        ax = shape.axis(a)
        loop = sum(0 <= o * ax.s - ax.pl + t * (ax.d + 1) < ax.i for o in range(ax.o) for t in range(ax.k))
        assert ax.valid_taps() == loop
        product *= loop
    assert shape.spatial_taps() == product


def test_constructed_shape_is_hashable_and_frozen():
    s = parse_conv_shape("ic3oc3ih5kh3")
    assert {s: 1}[parse_conv_shape("ic3ih5oc3kh3")] == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.mb = 4
    assert isinstance(s, ConvShape)
