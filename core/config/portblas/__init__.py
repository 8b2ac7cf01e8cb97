"""portBLAS (SYCL-BLAS) GEMM configurations: a ``Gemm_Launcher``'s template arguments as kdd knobs.

* :mod:`.template_args` — C++ template-argument lists with spans
* :mod:`.launcher` — ``parse_launcher``: the arguments by parameter name (seed and current forms)
* :mod:`.binding` — the dispatcher's ``_t_a``, ``_t_b``, ``s_a``, ``s_b``, ``is_beta_zero`` from a problem
* :mod:`.mapping` — ``map_launcher``: the knobs for a problem and a target, step by step
* :mod:`.header` — a backend header's launchers, their conditions, and the dispatch for a problem

The submodules load on first use (:mod:`kdd.core.lazy_exports`): every config's ``[config]`` section
asks for :data:`KEY`, few set it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kdd.core.config.errors import ConfigError
from kdd.core.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from .mapping import PortblasMapping

KEY = "portblas"


def read_portblas(text: str, problem, target) -> PortblasMapping:
    """The mapping of ``[config] portblas = text`` for ``problem`` on ``target``; a string kdd cannot read,
    or a problem that is no GEMM, is a :class:`ConfigError` (with the span of the offending argument)."""
    from .launcher import parse_launcher
    from .mapping import map_launcher

    launcher = parse_launcher(text)
    if problem.op != "gemm":
        raise ConfigError("portblas configures a GEMM: [problem] op must be \"gemm\"", 0, len(text), KEY)
    return map_launcher(launcher, problem, target)


_WHERE = {"Launcher": "launcher", "parse_launcher": "launcher", "Issue": "mapping", "PortblasMapping": "mapping",
          "Step": "mapping", "map_launcher": "mapping"}
__all__ = ["KEY", "Issue", "Launcher", "PortblasMapping", "Step", "map_launcher", "parse_launcher", "read_portblas"]

__getattr__ = lazy_exports(__name__, _WHERE)
