"""Nested layouts (seed 001, IREE ``NestedLayoutAttr``): a vector spread over subgroups, threads, registers.

Each dim ``d`` of the vector of shape ``shape[d] = subgroup[d] * batch[d] *
outer[d] * thread[d] * element[d]`` is viewed as those five sub-dims,
subgroup most significant: index ``i`` of dim ``d`` has digits
``(s, b, o, t, e)`` with ``i = (((s * B + b) * O + o) * T + t) * E + e``.

Subgroup and thread digits are *virtual ids*, derived from the hardware ids::

    virtual_subgroup_id[d] = (subgroup_id / subgroup_strides[d]) % subgroup_tile[d]
    virtual_thread_id[d]   = (thread_id   / thread_strides[d])   % thread_tile[d]

A stride of 0 means the dim is not distributed on that level; its tile must be
1 and its virtual id is 0. The distributed dims, sorted by stride, must not
overlap (each stride a multiple of the previous stride times its tile), so
that the inverse ``id = sum(stride[d] * virtual_id[d])`` is exact. That sum is
the *canonical* owner of an element; any other id whose virtual ids are the
same holds a replica (e.g. threads 16..31 when the thread tile covers 16).

**Register order.** A thread's elements form a vector of shape
``batch[d] * outer[d] * element[d]`` per dim (:attr:`NestedLayout.vector_shape`);
they are numbered batch-major, then outer, then element, each level row-major
over the dims: ``element_id = (b_lin * n_outer + o_lin) * n_element + e_lin``.

**Subgroup folding.** When the hardware has fewer subgroups than the layout
uses (``num_subgroups`` below the subgroup span), subgroup ``x`` runs on
physical subgroup ``x % num_subgroups`` (seed 001); the fold round
``x // num_subgroups`` becomes the most significant part of the element id, so
a physical subgroup holds ``rounds * elements_per_thread`` elements per thread.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where arrays are made, so an Xe compile does not load it
    import numpy as np


@dataclass(frozen=True)
class NestedLayout:
    """Per-dim tile counts of each level plus the subgroup and thread strides (see module doc)."""

    subgroup_tile: tuple[int, ...]
    batch_tile: tuple[int, ...]
    outer_tile: tuple[int, ...]
    thread_tile: tuple[int, ...]
    element_tile: tuple[int, ...]
    subgroup_strides: tuple[int, ...]
    thread_strides: tuple[int, ...]

    def __post_init__(self):
        for f in fields(self):
            object.__setattr__(self, f.name, tuple(int(v) for v in getattr(self, f.name)))
        ranks = {len(getattr(self, f.name)) for f in fields(self)}
        if len(ranks) != 1 or not self.subgroup_tile:
            raise ValueError(f"nested layout fields need one common rank >= 1: {self}")
        for f in fields(self):
            values = getattr(self, f.name)
            low = 0 if f.name.endswith("strides") else 1
            if any(v < low for v in values):
                raise ValueError(f"{f.name} must be >= {low}, got {values}")
        _check_strides("subgroup", self.subgroup_tile, self.subgroup_strides)
        _check_strides("thread", self.thread_tile, self.thread_strides)

    def __str__(self) -> str:
        """IREE's attribute spelling: ``nested_layout<subgroup_tile = [2, 1], ...>``."""
        body = ", ".join(f"{f.name} = [{', '.join(map(str, getattr(self, f.name)))}]" for f in fields(self))
        return f"nested_layout<{body}>"

    @property
    def rank(self) -> int:
        return len(self.subgroup_tile)

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the undistributed vector."""
        return tuple(math.prod(levels) for levels in zip(*self._levels()))

    @property
    def vector_shape(self) -> tuple[int, ...]:
        """Shape of one thread's part: ``batch * outer * element`` per dim."""
        return tuple(b * o * e for b, o, e in zip(self.batch_tile, self.outer_tile, self.element_tile))

    @property
    def elements_per_thread(self) -> int:
        return math.prod(self.vector_shape)

    @property
    def subgroup_count(self) -> int:
        """Number of canonical subgroup ids ``0 .. count-1`` (the tiles' product for dense strides)."""
        return _span(self.subgroup_tile, self.subgroup_strides)

    @property
    def thread_count(self) -> int:
        """Number of canonical thread ids, ``0 .. count-1``."""
        return _span(self.thread_tile, self.thread_strides)

    def virtual_subgroup_ids(self, subgroup_id: int) -> tuple[int, ...]:
        return _virtual(subgroup_id, self.subgroup_tile, self.subgroup_strides)

    def virtual_thread_ids(self, thread_id: int) -> tuple[int, ...]:
        return _virtual(thread_id, self.thread_tile, self.thread_strides)

    def subgroup_grid(self, num_subgroups: int | None = None) -> np.ndarray:
        """Subgroup id at each virtual position (shape ``subgroup_tile``), folded onto ``num_subgroups``.

        Row-major, ``subgroup_tile=[4, 2], subgroup_strides=[1, 4]`` reads
        ``0 4 1 5 2 6 3 7`` and, folded onto 4 subgroups, ``0 0 1 1 2 2 3 3``.
        """
        grid = _id_grid(self.subgroup_tile, self.subgroup_strides)
        return grid % num_subgroups if num_subgroups else grid

    def thread_grid(self) -> np.ndarray:
        """Thread id at each virtual thread position (shape ``thread_tile``)."""
        return _id_grid(self.thread_tile, self.thread_strides)

    def lane_of(
        self, indices: np.ndarray | None = None, num_subgroups: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(subgroup id, thread id) of the canonical owner of each index.

        ``indices`` is an int array ``(..., rank)``; None means every index of
        :attr:`shape`, giving arrays of that shape. Subgroup ids are physical
        (folded) when ``num_subgroups`` is given.
        """
        s, _, _, t, _ = self._digits(indices)
        sg = _dot(s, self.subgroup_strides)
        rounds, num = self._fold(num_subgroups)
        return (sg % num if rounds > 1 else sg), _dot(t, self.thread_strides)

    def element_of(self, indices: np.ndarray | None = None, num_subgroups: int | None = None) -> np.ndarray:
        """Register (element) id of each index within its owning thread, in register order."""
        import numpy as np
        s, b, o, _, e = self._digits(indices)
        levels = (self.batch_tile, self.outer_tile, self.element_tile)
        elem = np.zeros(s[0].shape, dtype=np.int64)
        for digits, tile in zip((b, o, e), levels):
            for digit, size in zip(digits, tile):
                elem = elem * size + digit
        rounds, num = self._fold(num_subgroups)
        if rounds > 1:
            elem += (_dot(s, self.subgroup_strides) // num) * self.elements_per_thread
        return elem

    def thread_indices(self, subgroup: int, thread: int, num_subgroups: int | None = None) -> np.ndarray:
        """Logical indices held by (``subgroup``, ``thread``), ``(n_elements, rank)`` in register order.

        Any id works: ids that are not canonical owners return their replica's
        indices. With ``num_subgroups`` below the subgroup span, ``subgroup``
        is physical and the result covers every fold round.
        """
        import numpy as np
        rounds, num = self._fold(num_subgroups)
        if rounds > 1 and not 0 <= subgroup < num:
            raise ValueError(f"subgroup {subgroup} out of range for {num} subgroups")
        local = np.stack(
            np.unravel_index(
                np.arange(self.elements_per_thread),
                self.batch_tile + self.outer_tile + self.element_tile,
            ),
            axis=-1,
        )
        b, o, e = np.split(local, 3, axis=-1)
        t = np.asarray(self.virtual_thread_ids(thread))
        parts = []
        for r in range(rounds):
            s = np.asarray(self.virtual_subgroup_ids(subgroup + r * num if rounds > 1 else subgroup))
            parts.append(self._compose(s, b, o, t, e))
        return np.concatenate(parts)

    def index_table(self, num_subgroups: int | None = None, num_threads: int | None = None) -> np.ndarray:
        """``(subgroups, threads, n_elements, rank)`` indices held by every lane in register order.

        Covers ``num_subgroups`` (default :attr:`subgroup_count`) by
        ``num_threads`` (default :attr:`thread_count`) lanes; extra lanes hold replicas.
        """
        import numpy as np
        n_sg = num_subgroups or self.subgroup_count
        n_thr = num_threads or self.thread_count
        return np.stack([
            np.stack([self.thread_indices(s, t, num_subgroups) for t in range(n_thr)])
            for s in range(n_sg)
        ])

    def distribute(
        self, values: np.ndarray, num_subgroups: int | None = None, num_threads: int | None = None
    ) -> np.ndarray:
        """Per-lane registers ``(subgroups, threads, n_elements)`` of a full vector ``values``."""
        import numpy as np
        values = np.asarray(values)
        if values.shape != self.shape:
            raise ValueError(f"values of shape {values.shape} for a layout of shape {self.shape}")
        table = self.index_table(num_subgroups, num_threads)
        return values[tuple(np.moveaxis(table, -1, 0))]

    def collect(self, registers: np.ndarray, num_subgroups: int | None = None) -> np.ndarray:
        """The full vector from per-lane registers, each element read from its canonical owner."""
        import numpy as np
        sg, thr = self.lane_of(None, num_subgroups)
        return np.asarray(registers)[sg, thr, self.element_of(None, num_subgroups)]

    def _levels(self):
        return self.subgroup_tile, self.batch_tile, self.outer_tile, self.thread_tile, self.element_tile

    def _digits(self, indices):
        """Per level, per dim, the digit arrays of ``indices`` (all of :attr:`shape` when None)."""
        import numpy as np
        if indices is None:
            idx = list(np.indices(self.shape, dtype=np.int64))
        else:
            indices = np.asarray(indices, dtype=np.int64)
            if indices.shape[-1:] != (self.rank,):
                raise ValueError(f"indices of shape {indices.shape} for a rank-{self.rank} layout")
            if ((indices < 0) | (indices >= np.asarray(self.shape))).any():
                raise IndexError(f"indices out of bounds for shape {self.shape}")
            idx = [indices[..., d] for d in range(self.rank)]
        levels = self._levels()
        out = [[None] * self.rank for _ in levels]
        for d in range(self.rank):
            rest = idx[d]
            for k in reversed(range(len(levels))):
                out[k][d] = rest % levels[k][d]
                rest = rest // levels[k][d]
        return out

    def _compose(self, s, b, o, t, e):
        """Logical indices from digits (``b``, ``o``, ``e`` are ``(n, rank)``; ``s``, ``t`` per dim)."""
        import numpy as np
        idx = s
        for digits, tile in zip((b, o, t, e), self._levels()[1:]):
            idx = idx * np.asarray(tile) + digits
        return idx

    def _fold(self, num_subgroups: int | None) -> tuple[int, int]:
        """(fold rounds, physical subgroups) for ``num_subgroups``; 1 round when nothing folds."""
        span = self.subgroup_count
        if num_subgroups is None or num_subgroups >= span:
            return 1, span
        if span % num_subgroups or span != math.prod(self.subgroup_tile):
            raise ValueError(
                f"cannot fold {span} subgroups onto {num_subgroups}: the subgroup tile must be dense "
                f"and a multiple of the hardware subgroups")
        return span // num_subgroups, num_subgroups


def _check_strides(level: str, tile, strides) -> None:
    for d, (n, s) in enumerate(zip(tile, strides)):
        if s == 0 and n != 1:
            raise ValueError(f"{level} dim {d} has tile {n} but stride 0 (undistributed dims need tile 1)")
    need = 1
    distributed = [(n, s) for n, s in zip(tile, strides) if n > 1]
    for n, s in sorted(distributed, key=lambda p: p[1]):
        if s % need:
            raise ValueError(
                f"{level} strides {strides} overlap for tiles {tile}: stride {s} is not a multiple of {need}")
        need = s * n


def _span(tile, strides) -> int:
    return 1 + sum((n - 1) * s for n, s in zip(tile, strides))


def _virtual(ident: int, tile, strides) -> tuple[int, ...]:
    if ident < 0:
        raise ValueError(f"ids are non-negative, got {ident}")
    return tuple((ident // s) % n if s else 0 for n, s in zip(tile, strides))


def _id_grid(tile, strides) -> np.ndarray:
    import numpy as np
    grid = np.indices(tile, dtype=np.int64)
    return np.tensordot(np.asarray(strides, dtype=np.int64), grid, axes=1)


def _dot(digits, strides) -> np.ndarray:
    import numpy as np
    return sum((d * s for d, s in zip(digits, strides)), np.zeros_like(digits[0]))
