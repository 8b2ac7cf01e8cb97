"""The options the kernel passes read: one frozen, typed record per built kernel.

:class:`PassOptions` holds the :class:`~kdd.core.targets.Target` and the
config's values the passes need. It reads as a mapping from option names to
values (``options["regs"]``, ``options.get("var_ranges")``), so a pass is
written against names, and ``Pipeline.run`` hands each pass only the names
its ``Pass.reads`` declares (:func:`restricted`): a pass that reads another
one raises :class:`UndeclaredOption` instead of running on a value its
memoization key does not cover. ``key(reads)`` is that key: plain hashable
values (the target by its name).

Tests may hand a pass a plain dict of the same names (``{"target": "xehpg"}``);
:func:`target_of` reads the target from either.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Iterator, Mapping

from kdd.core.targets import Target, get_target


class UndeclaredOption(KeyError):
    """A pass read an option its ``Pass.reads`` does not declare."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class PassOptions(Mapping):
    """What the passes may read of a kernel: the target, the config's registers, the launch's ranges
    (``var_ranges``: ``(name, lo, hi)`` of the group and thread ids) and the buffering knobs."""

    target: Target
    regs: int
    var_ranges: tuple[tuple[str, int, int], ...] = ()
    slm_bufs: int = 0
    gmem_bufs: int = 0
    prefetch_bufs: int = 0
    prefetch_buffers: tuple[str, ...] = ()
    pipeline_unroll: bool = False
    reuse_headers: bool = False
    raw_bufs: int = 0  # raw weight tiles in registers (2: ping-pong, kdd.core.passes.ping_pong)

    @property
    def reg_bytes(self) -> int:
        """Bytes of one register row of the target."""
        return self.target.registers.reg_bytes

    def _names(self) -> tuple[str, ...]:
        return tuple(f.name for f in fields(self)) + ("reg_bytes",)

    def __getitem__(self, name: str) -> Any:
        if name not in self._names():
            raise KeyError(name)
        return getattr(self, name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def key(self, reads: tuple[str, ...]) -> tuple:
        """The memoization key of the options ``reads`` names: plain values, the target by name."""
        return tuple((name, _plain(self[name])) for name in reads)


class _Restricted(Mapping):
    """The options a pass declared it reads; reading any other raises :class:`UndeclaredOption`."""

    def __init__(self, options: Mapping[str, Any], reads: tuple[str, ...], who: str):
        self._options, self._reads, self._who = options, reads, who

    def __getitem__(self, name: str) -> Any:
        if name not in self._reads:
            raise UndeclaredOption(f"pass '{self._who}' read option '{name}', which its reads "
                                   f"({', '.join(self._reads) or 'none'}) do not declare")
        return self._options[name]

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except UndeclaredOption:
            raise
        except KeyError:
            return default

    def __iter__(self) -> Iterator[str]:
        return (name for name in self._reads if name in self._options)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def restricted(options: Mapping[str, Any], reads: tuple[str, ...], who: str) -> Mapping[str, Any]:
    """``options`` as pass ``who`` may read them: only the names in ``reads``."""
    return _Restricted(options, reads, who)


def options_key(options: Mapping[str, Any], reads: tuple[str, ...]) -> tuple:
    """The memoization key of the options ``reads`` names (:meth:`PassOptions.key`, or a plain mapping's)."""
    if isinstance(options, PassOptions):
        return options.key(reads)
    return tuple((name, _plain(options.get(name))) for name in reads)


def _plain(value: Any) -> Any:
    if isinstance(value, Target):
        return value.name
    if isinstance(value, dict):
        return tuple(sorted((k, _plain(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_plain(v) for v in value)
    return value


def target_of(options: Mapping[str, Any]) -> Target | None:
    """The target ``options`` name (a :class:`Target`, or its name in a plain mapping), or None."""
    t = options.get("target")
    return get_target(t) if isinstance(t, str) else t


def kernel_options(kernel) -> PassOptions:
    """The options of ``kernel`` (a ``kdd.core.builder.Kernel``): target, registers, launch ranges, knobs."""
    from kdd.core.config.operands import operands

    cfg = kernel.config
    ids = [(f"group_id{i}", 0, g - 1) for i, g in enumerate(kernel.grid)]
    ids += [(f"thread_id{i}", 0, t - 1) for i, t in enumerate(kernel.tg)]
    slm, prefetch, pipeline = cfg.slm, cfg.prefetch, cfg.pipeline
    a_name, b_name, _ = operands(kernel.problem).tensors
    fetched = () if prefetch is None else tuple(n for n, on in ((a_name, prefetch.a), (b_name, prefetch.b)) if on)
    return PassOptions(
        target=get_target(kernel.target), regs=cfg.regs, var_ranges=tuple(ids),
        slm_bufs=slm.bufs if slm is not None else 0, gmem_bufs=slm.gmem if slm is not None else 0,
        prefetch_bufs=prefetch.bufs if prefetch is not None else 0, prefetch_buffers=fetched,
        pipeline_unroll=bool(pipeline and pipeline.unroll), reuse_headers=bool(pipeline and pipeline.reuse_headers),
        raw_bufs=cfg.decompress.bufs if cfg.decompress is not None and kernel.problem.decompression else 0)


def launch_ranges(options: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    """``options["var_ranges"]`` (``(name, lo, hi)`` triples) as ``{name: (lo, hi)}``."""
    return {name: (lo, hi) for name, lo, hi in options.get("var_ranges", ())}
