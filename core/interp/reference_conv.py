"""Float64 convolution references (fwd, bwd_d, bwd_w), written from seed 000's loop nests.

Forward, for every output point and kernel tap (per spatial dim)::

    i = o * S + k * (D + 1) - P          # D zero-based dilation, P left padding
    dst[mb, g, oc, o..] += src[mb, g, ic, i..] * wei[g, oc, ic, k..]   if 0 <= i < I

Backward by data is the adjoint of forward in ``src`` (each product scatters
back to the input point it read), backward by weights the adjoint in ``wei``.
The loops over taps are explicit; the reductions over channels and points
are ``einsum``. Tensors are logical arrays in ``Problem.tensor_dims`` order:
src ``(mb, ic, [id, ih,] iw)``, wei ``([g,] oc/g, ic/g, [kd, kh,] kw)``, dst
``(mb, oc, [od, oh,] ow)``.
"""
from __future__ import annotations

import itertools

import numpy as np

from kdd.core.problem.conv_shape import AXES, ConvShape


def _taps(shape: ConvShape, a: str, k: int) -> tuple[np.ndarray, np.ndarray]:
    """For tap ``k`` of axis ``a``: the input index of every output point, clipped, and its validity."""
    ax = shape.axis(a)
    i = np.arange(ax.o) * ax.s + k * (ax.d + 1) - ax.pl
    valid = (i >= 0) & (i < ax.i)
    return np.clip(i, 0, ax.i - 1), valid


def _tap_grid(shape: ConvShape, kd: int, kh: int, kw: int):
    """Index arrays ``(od, oh, ow)``-shaped into input d/h/w and the mask of real inputs."""
    (d, vd), (h, vh), (w, vw) = (_taps(shape, a, k) for a, k in zip(AXES, (kd, kh, kw)))
    index = (d[:, None, None], h[None, :, None], w[None, None, :])
    valid = vd[:, None, None] & vh[None, :, None] & vw[None, None, :]
    return index, valid


def _kernel_taps(shape: ConvShape):
    return itertools.product(range(shape.kd), range(shape.kh), range(shape.kw))


# -- logical <-> canonical 6D (batch, group, channel, d, h, w) ---------------------------------------

def _act(x: np.ndarray, shape: ConvShape, spatial: str) -> np.ndarray:
    """``(mb, C, [d, h,] w)`` -> ``(mb, g, C/g, d, h, w)``."""
    dims = [getattr(shape, spatial + a) for a in AXES]
    return np.asarray(x, dtype=np.float64).reshape(shape.mb, shape.g, -1, *dims)


def _wei(x: np.ndarray, shape: ConvShape) -> np.ndarray:
    """``([g,] oc/g, ic/g, [kd, kh,] kw)`` -> ``(g, oc/g, ic/g, kd, kh, kw)``."""
    return np.asarray(x, dtype=np.float64).reshape(shape.g, shape.oc // shape.g, shape.ic // shape.g,
                                                   shape.kd, shape.kh, shape.kw)


def _logical_act(x6: np.ndarray, shape: ConvShape, spatial: str) -> np.ndarray:
    channels = x6.shape[1] * x6.shape[2]
    return x6.reshape((shape.mb, channels) + tuple(getattr(shape, spatial + a) for a in shape.used_axes))


def _logical_wei(w6: np.ndarray, shape: ConvShape) -> np.ndarray:
    group = (shape.g,) if shape.g > 1 else ()
    kernel = tuple(getattr(shape, "k" + a) for a in shape.used_axes)
    return w6.reshape(group + w6.shape[1:3] + kernel)


# -- the three propagation kinds ---------------------------------------------------------------------

def conv_fwd(src: np.ndarray, wei: np.ndarray, shape: ConvShape) -> np.ndarray:
    """``dst`` of a forward convolution (float64)."""
    s, w = _act(src, shape, "i"), _wei(wei, shape)
    dst = np.zeros((shape.mb, shape.g, shape.oc // shape.g, shape.od, shape.oh, shape.ow))
    for kd, kh, kw in _kernel_taps(shape):
        index, valid = _tap_grid(shape, kd, kh, kw)
        patch = s[(slice(None),) * 3 + index] * valid
        dst += np.einsum("ngcdhw,goc->ngodhw", patch, w[..., kd, kh, kw])
    return _logical_act(dst, shape, "o")


def conv_bwd_d(diff_dst: np.ndarray, wei: np.ndarray, shape: ConvShape) -> np.ndarray:
    """``diff_src`` of a convolution: every product scattered back to the input it came from."""
    dd, w = _act(diff_dst, shape, "o"), _wei(wei, shape)
    diff_src = np.zeros((shape.mb, shape.g, shape.ic // shape.g, shape.id, shape.ih, shape.iw))
    for kd, kh, kw in _kernel_taps(shape):
        index, valid = _tap_grid(shape, kd, kh, kw)
        contrib = np.einsum("ngodhw,goc->ngcdhw", dd * valid, w[..., kd, kh, kw])
        np.add.at(diff_src, (slice(None),) * 3 + index, contrib)
    return _logical_act(diff_src, shape, "i")


def conv_bwd_w(src: np.ndarray, diff_dst: np.ndarray, shape: ConvShape) -> np.ndarray:
    """``diff_wei`` of a convolution."""
    s, dd = _act(src, shape, "i"), _act(diff_dst, shape, "o")
    diff_wei = np.zeros((shape.g, shape.oc // shape.g, shape.ic // shape.g, shape.kd, shape.kh, shape.kw))
    for kd, kh, kw in _kernel_taps(shape):
        index, valid = _tap_grid(shape, kd, kh, kw)
        patch = s[(slice(None),) * 3 + index] * valid
        diff_wei[..., kd, kh, kw] = np.einsum("ngcdhw,ngodhw->goc", patch, dd)
    return _logical_wei(diff_wei, shape)


def conv_bwd_bias(diff_dst: np.ndarray, shape: ConvShape) -> np.ndarray:
    """``diff_bias``: ``diff_dst`` summed over the batch and every output point, per channel."""
    dd = np.asarray(diff_dst, dtype=np.float64)
    return dd.sum(axis=(0,) + tuple(range(2, dd.ndim)))
