"""Conv and GEMM views against brute force: C = sum_K A * B through the views equals the seed's loop nest."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kdd.core.ir import evaluate
from kdd.core.layout.view import DimKind, eval_numpy
from kdd.core.layout.view_conv import conv_views
from kdd.core.layout.view_gemm import gemm_views
from kdd.core.problem import Problem, parse_data_types
from kdd.core.problem.conv_shape import compute_out, parse_conv_shape
from kdd.core.problem.gemm_shape import GemmShape

AXES = "dhw"


@st.composite
def conv_problems(draw):
    """Small random convolutions: 1D-3D, groups, strides, paddings (also negative), dilations."""
    ndims = draw(st.integers(1, 3))
    g = draw(st.integers(1, 3))
    entries = [f"g{g}", f"mb{draw(st.integers(1, 2))}",
               f"ic{g * draw(st.integers(1, 3))}", f"oc{g * draw(st.integers(1, 3))}"]
    small = ndims == 3
    for a in AXES[3 - ndims:]:
        i = draw(st.integers(1, 4 if small else 7))
        k = draw(st.integers(1, 2 if small else 3))
        s = draw(st.integers(1, 3))
        d = draw(st.integers(0, 1))
        p = draw(st.integers(-1, 2))
        assume(compute_out(i, k, s, p, d) >= 1)
        entries.append(f"i{a}{i}k{a}{k}s{a}{s}p{a}{p}d{a}{d}")
    shape = parse_conv_shape("_".join(entries))
    return shape


def _problem(shape, prop):
    return Problem(op="conv", prop=prop, shape=shape, types=parse_data_types("f32"))


def reference(shape, prop, src, wei, dst):
    """The seed's loop nest over (mb, g, oc, ic, spatial outputs, kernel taps), one output per prop.

    fwd accumulates dst, bwd_d the src gradient and bwd_w the weights gradient
    from the same ``(src element, wei element, dst element)`` triples, so the
    backward references use only the forward index relation ``i = o*S + k*(D+1) - P``.
    """
    G = shape.g
    icg, ocg = shape.ic // G, shape.oc // G
    axes = [shape.axis(a) for a in AXES]
    out = np.zeros({"fwd": dst.shape, "bwd_d": src.shape, "bwd_w": wei.shape}[prop])
    # Index arrays are 5D-spatial internally (d, h, w); tensors hold only used axes.
    used = 3 - shape.ndims
    for o in np.ndindex(*(ax.o for ax in axes)):
        for k in np.ndindex(*(ax.k for ax in axes)):
            i = [o[j] * ax.s + k[j] * (ax.d + 1) - ax.pl for j, ax in enumerate(axes)]
            if any(not 0 <= i[j] < ax.i for j, ax in enumerate(axes)):
                continue  # padding: the source reads zero
            si, oi, ki = tuple(i[used:]), tuple(o[used:]), tuple(k[used:])
            for g in range(G):
                s = src[(slice(None), slice(g * icg, (g + 1) * icg)) + si]          # mb x icg
                d = dst[(slice(None), slice(g * ocg, (g + 1) * ocg)) + oi]          # mb x ocg
                wsel = ((g,) if G > 1 else ()) + (slice(None), slice(None)) + ki    # ocg x icg
                w = wei[wsel]
                if prop == "fwd":
                    out[(slice(None), slice(g * ocg, (g + 1) * ocg)) + oi] += s @ w.T
                elif prop == "bwd_d":
                    out[(slice(None), slice(g * icg, (g + 1) * icg)) + si] += d @ w
                else:
                    out[wsel] += d.T @ s
    return out


def through_views(problem, tensors):
    """C = sum over K of A * B, with A/B gathered and C scattered through the views."""
    a_view, b_view, c_view = conv_views(problem) if problem.op == "conv" else gemm_views(problem)

    def gather(view):
        index, mask = view.table()
        data = tensors[view.tensor]
        # Masked-off elements are zero; their (possibly out-of-range) index is never read.
        safe = np.where(mask[..., None], index, 0)
        values = data[tuple(np.moveaxis(safe, -1, 0))]
        return np.where(mask, values, 0.0)

    def sizes(view, kinds):
        return [math.prod(d.size for d in view.dims_of(k)) for k in kinds]

    a = gather(a_view).reshape(sizes(a_view, (DimKind.B, DimKind.M, DimKind.K)))
    b = gather(b_view).reshape(sizes(b_view, (DimKind.B, DimKind.K, DimKind.N)))
    c = np.einsum("bmk,bkn->bmn", a, b).reshape(c_view.shape)
    index, mask = c_view.table()
    assert mask.all(), "C views have no masks: every C element is written"
    out = np.full(tensors[c_view.tensor].shape, np.nan)
    flat = index.reshape(-1, index.shape[-1])
    assert len({tuple(x) for x in flat}) == len(flat), "the C view maps one-to-one"
    out[tuple(flat.T)] = c.reshape(-1)
    return c_view.tensor, out


def _tensors(problem, rng):
    return {t: rng.integers(-3, 4, size=[s for _, s in problem.tensor_dims(t)]).astype(np.float64)
            for t in ("src", "wei", "dst")}


@settings(max_examples=220, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(conv_problems(), st.integers(0, 2**32 - 1))
def test_conv_views_match_loop_nest(shape, seed):
    rng = np.random.default_rng(seed)
    for prop in ("fwd", "bwd_d", "bwd_w"):
        problem = _problem(shape, prop)
        tensors = _tensors(problem, rng)
        name, got = through_views(problem, tensors)
        want = reference(shape, prop, tensors["src"], tensors["wei"], tensors["dst"])
        assert name == {"fwd": "dst", "bwd_d": "src", "bwd_w": "wei"}[prop]
        np.testing.assert_array_equal(got, want, err_msg=f"{prop} {shape}")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 3), max_size=2), st.integers(1, 5), st.integers(1, 5), st.integers(1, 5),
       st.integers(0, 2**32 - 1))
def test_gemm_views_match_matmul(batch, m, n, k, seed):
    problem = Problem(op="gemm", prop="fwd", shape=GemmShape(tuple(batch), m, n, k),
                      types=parse_data_types("f32"))
    tensors = _tensors(problem, np.random.default_rng(seed))
    name, got = through_views(problem, tensors)
    assert name == "dst"
    np.testing.assert_array_equal(got, tensors["src"] @ tensors["wei"])


@pytest.mark.parametrize("prop, operands", [
    ("fwd", ("src", "wei", "dst")), ("bwd_d", ("dst", "wei", "src")), ("bwd_w", ("src", "dst", "wei"))])
def test_operand_tensors_and_kinds(prop, operands):
    problem = _problem(parse_conv_shape("g2ic4oc6ih8oh4kh3sh2ph1"), prop)
    views = conv_views(problem)
    assert tuple(v.tensor for v in views) == operands
    a, b, c = views
    assert {d.kind for d in a.dims} == {DimKind.B, DimKind.M, DimKind.K}
    assert {d.kind for d in b.dims} == {DimKind.B, DimKind.K, DimKind.N}
    assert {d.kind for d in c.dims} == {DimKind.B, DimKind.M, DimKind.N}
    assert a.dim("g").kind is DimKind.B


def test_seed_mappings_as_written():
    """fwd: ih = oh*SH + kh*(DH+1) - PH with 0 <= ih < IH; bwd_d: the inverse with its stride test."""
    shape = parse_conv_shape("ic4oc4ih9oh4kh3sh2dh1ph1")
    src_a = conv_views(_problem(shape, "fwd"))[0]
    j = src_a.tensor_dim_index("ih")
    assert str(src_a.mapping[j]) == "(((oh * 2) + (kh * 2)) - 1)"
    assert str(src_a.masks[j]) == "(((((oh * 2) + (kh * 2)) - 1) >= 0) && ((((oh * 2) + (kh * 2)) - 1) < 9))"
    dst_a = conv_views(_problem(shape, "bwd_d"))[0]
    j = dst_a.tensor_dim_index("oh")
    assert str(dst_a.mapping[j]) == "(((ih + 1) - (kh * 2)) / 2)"
    assert str(dst_a.masks[j]) == ("(((((ih + 1) - (kh * 2)) % 2) == 0) && (((((ih + 1) - (kh * 2)) / 2) >= 0)"
                                   " && ((((ih + 1) - (kh * 2)) / 2) < 4)))")


def test_unpadded_unit_stride_views_have_no_masks():
    shape = parse_conv_shape("mb2ic8oc8ih6kh1")
    for prop in ("fwd", "bwd_d", "bwd_w"):
        for view in conv_views(_problem(shape, prop)):
            assert view.masks == (None,) * len(view.tensor_dims), (prop, view.name)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(conv_problems(), st.sampled_from(["fwd", "bwd_d", "bwd_w"]), st.integers(0, 2**32 - 1))
def test_numpy_evaluation_agrees_with_ir_evaluate(shape, prop, seed):
    """The brute-force table uses eval_numpy; spot-check it against the IR's exact evaluator."""
    rng = np.random.default_rng(seed)
    for view in conv_views(_problem(shape, prop)):
        index, mask = view.table()
        point = tuple(int(rng.integers(0, s)) for s in view.shape)
        env = {d.var: point[i] for i, d in enumerate(view.dims)}
        for j, e in enumerate(view.mapping):
            assert evaluate(e, env) == index[point + (j,)]
            assert eval_numpy(e, {d.var: np.int64(point[i]) for i, d in enumerate(view.dims)}) == \
                index[point + (j,)]
        want_mask = all(evaluate(m, env) for m in view.masks if m is not None)
        assert want_mask == bool(mask[point])


def test_view_rejects_unknown_dims_in_expressions():
    from kdd.core.ir import var
    from kdd.core.layout.view import View, ViewDim
    with pytest.raises(ValueError, match="not view dims"):
        View("A", "src", (ViewDim("m", 4, DimKind.M),), (("m", 4),), (var("q"),), (None,))
