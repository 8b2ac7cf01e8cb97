"""``KernelConfig``: the kernel parameters of one kernel, as oneDNN's conv config knobs.

A field left ``None`` is unset: the defaults heuristic fills it
(:func:`~kdd.core.config.defaults.resolve_config`). A config whose fields are
all set is *complete*; the budget, tiling and generator work on complete
configs. What each field means is documented once, in :data:`~.knobs.KNOBS`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .knobs import KNOB_BY_KEY, KNOBS
from .tiles import Tile
from .decompress import Decompress
from .values import Buffering, Pipeline, Subtiles, WalkOrder


@dataclass(frozen=True)
class KernelConfig:
    """Kernel parameters; see ``KNOBS`` for each knob (field names are the ``[config]`` keys)."""

    fma: str | None = None
    simd: int | None = None
    regs: int | None = None
    vec: int | None = None
    loop: Tile | None = None
    tg: Tile | None = None
    iter: Tile | None = None
    unroll: Tile | None = None
    slm: Buffering | None = None
    prefetch: Buffering | None = None
    pipeline: Pipeline | None = None
    subtiles: Subtiles | None = None
    global_reduction: bool | None = None
    walk_order: WalkOrder | None = None
    pad_slm: bool | None = None
    bwd_d_optimize: str | None = None
    schedule: str | None = None
    tile: Tile | None = None
    stages: int | None = None
    cluster: Tile | None = None
    epilogue: str | None = None
    swizzle: int | None = None
    splits: int | None = None
    src_layout: str | None = None
    wei_layout: str | None = None
    dst_layout: str | None = None
    bia_layout: str | None = None
    decompress: Decompress | None = None
    fma_type: str | None = None

    def set_keys(self) -> tuple[str, ...]:
        """Names of the fields that are set, in ``KNOBS`` order."""
        return tuple(k.key for k in KNOBS if getattr(self, k.key) is not None)

    @property
    def is_complete(self) -> bool:
        return all(getattr(self, k.key) is not None for k in KNOBS if not k.optional)

    def require_complete(self, who: str) -> None:
        """Raise ``ValueError`` naming the unset fields unless the config is complete."""
        missing = [k.key for k in KNOBS if getattr(self, k.key) is None and not k.optional]
        if missing:
            raise ValueError(f"{who} needs a complete config (resolve it first); unset: {', '.join(missing)}")

    def over(self, base: "KernelConfig") -> "KernelConfig":
        """This config's set fields on top of ``base``'s."""
        return replace(base, **{key: getattr(self, key) for key in self.set_keys()})

    def line(self, defaults: "KernelConfig | None" = None) -> str:
        """The oneDNN config line of the set fields that differ from ``defaults``
        (all set fields when ``defaults`` is ``None``), in ``KNOBS`` order."""
        tokens = []
        for knob in KNOBS:
            value = getattr(self, knob.key)
            if value is None or (defaults is not None and getattr(defaults, knob.key) == value):
                continue
            tokens.append(f"{knob.onednn}={knob.codec.format(value)}")
        return " ".join(tokens)

    def to_mapping(self) -> dict[str, Any]:
        """The set fields in ``[config]`` TOML form (scalars, strings and tables)."""
        return {key: KNOB_BY_KEY[key].codec.to_toml(getattr(self, key)) for key in self.set_keys()}

    def __str__(self) -> str:
        return self.line()

