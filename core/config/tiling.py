"""Tiling derived from a config and a problem: per-thread and per-group tiles, grids.

Per dimension ``d`` of the problem (in B, M, N, K order), with ``iter``,
``tg`` and ``loop`` sizes from the config (1 where a tile does not name ``d``):

- one thread computes ``iter`` of ``d`` per iteration;
- a thread group covers ``block = iter * tg * loop`` of ``d``;
- the kernel grid has ``grid = ceil(size / block)`` groups along ``d``, and
  ``padded = grid * block`` elements are computed (the excess is masked).

The thread-group grid is ``X x Y x Z`` = (product of ``tg`` over N dims) x
(over M dims) x (over B and K dims: ``tg`` over K slices the reduction
among the group's threads); the kernel grid likewise multiplies
``grid`` over N, M, and B+K dims. A K dim with ``grid > 1`` splits the
reduction across groups (partial sums, atomic stores).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache
from math import ceil, prod

from .kernel_config import KernelConfig
from .tiles import Tile

ROLES = ("b", "m", "n", "k")


@dataclass(frozen=True)
class DimTiling:
    """How one problem dimension is blocked."""

    name: str
    role: str
    size: int
    iter: int
    tg: int
    loop: int

    @property
    def block(self) -> int:
        """Elements of this dim one thread group covers."""
        return self.iter * self.tg * self.loop

    @property
    def grid(self) -> int:
        """Thread groups along this dim."""
        return ceil(self.size / self.block)

    @property
    def padded(self) -> int:
        """Elements computed along this dim, masked ones included."""
        return self.grid * self.block


@dataclass(frozen=True)
class Tiling:
    """Blocks of every problem dim and the quantities built from them."""

    dims: tuple[DimTiling, ...]

    def role(self, role: str) -> tuple[DimTiling, ...]:
        """The dims playing GEMM role ``b``, ``m``, ``n`` or ``k``."""
        return tuple(d for d in self.dims if d.role == role)

    @cached_property
    def _role_products(self) -> dict[str, tuple[int, int, int, int]]:
        """Per role, the products of ``iter``, ``tg``, ``loop`` and ``grid`` over its dims, made in one walk:
        the defaults heuristic reads several of the quantities below of each of its ~100 candidate tilings."""
        out = {role: (1, 1, 1, 1) for role in ROLES}
        for d in self.dims:
            i, t, n, g = out[d.role]
            out[d.role] = (i * d.iter, t * d.tg, n * d.loop, g * d.grid)
        return out

    @property
    def b_thread(self) -> int:
        """Batch elements (groups, GEMM batch) one thread computes."""
        return self._role_products["b"][0]

    @property
    def m_thread(self) -> int:
        """M elements of C one thread computes."""
        return self._role_products["m"][0]

    @property
    def n_thread(self) -> int:
        """N elements of C one thread computes."""
        return self._role_products["n"][0]

    @property
    def k_iter(self) -> int:
        """K elements one thread consumes per reduction-loop iteration."""
        return self._role_products["k"][0]

    @property
    def m_group(self) -> int:
        """M elements of C one thread group computes."""
        i, t, _, _ = self._role_products["m"]
        return i * t

    @property
    def n_group(self) -> int:
        """N elements of C one thread group computes."""
        i, t, _, _ = self._role_products["n"]
        return i * t

    @property
    def k_group(self) -> int:
        """K elements one thread group reduces over (all its loop iterations)."""
        i, t, n, _ = self._role_products["k"]
        return i * t * n

    @property
    def k_slices(self) -> int:
        """Threads of a group that split each K block (``tg`` over K dims); their partial C tiles
        are summed through SLM."""
        return self._role_products["k"][1]

    @property
    def k_iters(self) -> int:
        """Iterations of the reduction loop."""
        return self._role_products["k"][2]

    @property
    def tg_grid(self) -> tuple[int, int, int]:
        """Thread-group grid ``(X, Y, Z)``: threads along N, M, and B/K dims."""
        p = self._role_products
        return p["n"][1], p["m"][1], p["b"][1] * p["k"][1]

    @property
    def kernel_grid(self) -> tuple[int, int, int]:
        """Kernel grid ``(X, Y, Z)``: thread groups along N, M, and B/K dims."""
        p = self._role_products
        return p["n"][3], p["m"][3], p["b"][3] * p["k"][3]

    @property
    def threads_per_group(self) -> int:
        return prod(self.tg_grid)

    @property
    def groups(self) -> int:
        return prod(self.kernel_grid)

    @property
    def split_k(self) -> bool:
        """Whether the reduction is split across thread groups."""
        return any(d.grid > 1 for d in self.role("k"))

    @property
    def efficiency(self) -> float:
        """Useful fraction of the computed (padded) iteration space."""
        return prod(d.size for d in self.dims) / prod(d.padded for d in self.dims)


def derive_tiling(problem, config: KernelConfig) -> Tiling:
    """The :class:`Tiling` of ``config`` on ``problem``; unset tiles block nothing.

    Tile entries naming dims the problem does not have are ignored here
    (validation reports them).
    """
    return tiling_of(problem, config.iter, config.tg, config.loop)


def tiling_of(problem, iter_: Tile | None, tg: Tile | None, loop: Tile | None) -> Tiling:
    """:func:`derive_tiling` of the ``iter``, ``tg`` and ``loop`` tiles alone: the defaults heuristic weighs
    several groups and buffers for each of its candidate tiles, without a config for each."""
    empty = Tile()
    return _tiling(problem.gemm_dims(), iter_ or empty, tg or empty, loop or empty)


@lru_cache(maxsize=4096)
def _tiling(gemm, iter_: Tile, tg: Tile, loop: Tile) -> Tiling:
    """:func:`tiling_of` on the problem's GEMM dims, remembered: the defaults ask for the same tiling two to
    four times per candidate tile (its groups, its SLM buffers, its budget estimate), and a tiling is a
    function of the dims and of what the tiles mean (equal tiles give equal sizes)."""
    return Tiling(tuple(
        DimTiling(name, role, size, iter_.get(name), tg.get(name), loop.get(name))
        for role in ROLES for name, size in getattr(gemm, role)
    ))


def group_count(problem, iter_: Tile, tg: Tile, loop: Tile) -> int:
    """``tiling_of(problem, iter_, tg, loop).groups`` without making the tiling: the defaults' thread-group
    search asks it of every group shape it tries, most of them tried once."""
    return prod(ceil(size / (iter_.get(name) * tg.get(name) * loop.get(name)))
                for role in ROLES for name, size in getattr(problem.gemm_dims(), role))


def mad_over_batch(fma: str, simd: int, tiling: Tiling) -> bool:
    """Whether a ``mad`` (sm_90: ``fma``) thread tile puts its SIMD lanes along the batch dims, not along N.

    oneDNN's depthwise form (``i=g16kw3ow8``): each group is its own GEMM
    with N = 1, so the lanes take ``simd`` groups and ``mad`` multiplies a
    vector of A by a vector of B, lane by lane. It applies where N per thread
    is not whole SIMD chunks and the batch per thread is.
    """
    return fma in ("mad", "fma") and tiling.n_thread % simd != 0 and tiling.b_thread % simd == 0

